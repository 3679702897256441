// Executable: a compiled program, immutable once loaded and shared by any number of
// VirtualMachines on any number of threads.
//
// File format (.kx) 2.0, all integers little-endian (docs/vm.md has the full layout):
//   header:   magic "KILNEXE\0", u16 major, u16 minor, u32 section count,
//             then per section: u32 id, u32 zero, u64 offset, u64 size, u64 checksum
//             (support::Checksum64); sections in ascending order, non-overlapping, each
//             starting at a multiple of 64 bytes, the last one ending the file
//   sections: msgpack documents (functions, constants, builtins, kernels, devices, target)
//             and raw bytes (the CPU kernel shared object; the weights). The device table is
//             written only when the program uses a device besides the CPU; without it the
//             table is ["cpu"]. Devices are resolved by each VirtualMachine.
// Constants: scalars, shapes, strings and tensors of at most kInlineConstantMaxBytes live in
// the constants document. Larger tensors live in the weights section, each at a 64-byte
// aligned offset with 64-bit offset and size; a loaded executable's constant tensors point
// into the loaded file (LoadFile maps it read-only: no copy, and the page cache is shared
// by every process running the same file). A constant may also be declared *external*: a
// name, dtype and shape resolved when loading from a WeightProvider (e.g. tensors of a GGUF
// file mapped by the application), so one executable serves any weights of that shape.
// Constant tensors are read-only; writing into one is a bug (and faults when mapped).
// Compatibility: a reader accepts files of its own major version and any minor version up
// to its own; anything else is refused with both versions named.
// Loading checks every bound, checksum, index, register and jump target, that the host CPU
// has the instruction-set extensions the kernels were compiled for, resolves builtins
// (by name, checking the signature recorded in the file against the registered one with
// vm::Compatible),
// kernels and external weights, and returns an error for anything malformed. It never
// reads past a section.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "support/mapped_file.h"
#include "vm/builtin_registry.h"
#include "vm/bytecode.h"
#include "vm/device_code.h"
#include "vm/kernel_abi.h"
#include "vm/value.h"
#include "vm/weight_provider.h"

namespace kiln::vm {

inline constexpr char kExecutableMagic[8] = {'K', 'I', 'L', 'N', 'E', 'X', 'E', '\0'};
// 2.0: the weights section (64-bit offsets, mapped in place), external weights, the CPU
// target; closures (MakeClosure, Call of a closure), CopyToDevice, the device table, devices
// of kernels and parameters, typed builtin signatures.
inline constexpr uint16_t kFormatMajor = 2;
inline constexpr uint16_t kFormatMinor = 2;  // 2.1: the metadata section; 2.2: device code
// Tensor constants larger than this go to the weights section.
inline constexpr int64_t kInlineConstantMaxBytes = 256;
// Alignment of every section in the file and of every tensor in the weights section.
inline constexpr uint64_t kSectionAlignment = 64;

enum class SectionId : uint32_t {
  kFunctions = 1,
  kConstants = 2,
  kBuiltins = 3,
  kKernels = 4,
  kCpuObject = 5,
  kDevices = 6,
  kWeights = 7,
  kTarget = 8,
  kMetadata = 9,  // since 2.1
  kDeviceCode = 10,  // since 2.2
};

// What a parameter must be at call time. Dims use MatchShape's operand kinds: Imm (fixed),
// Bind (first occurrence of a symbolic variable: stores it), Reg (later occurrence: must
// equal), Any.
struct ParamSignature {
  std::string name;
  Value::Kind kind = Value::Kind::kNone;  // kNone: any value
  bool check_dtype = false;
  DLDataType dtype{};
  int32_t ndim = -1;  // -1: any rank (then dims is empty)
  std::vector<Operand> dims;
  int32_t device = 0;  // a tensor's device: index into the device table
};

struct Function {
  std::string name;
  std::vector<ParamSignature> params;
  int32_t num_registers = 0;
  std::vector<Instruction> code;
  std::vector<Operand> operands;
  std::vector<std::string> strings;       // debug names, error contexts
  std::vector<int32_t> instruction_names; // per instruction: index into strings or -1
};

struct BuiltinDecl {
  std::string name;
  std::string signature;  // vm/builtin_signature.h; what the compiler expects
};

struct KernelDecl {
  enum class Source : uint8_t { kCpuObject = 0, kLibrary = 1 };
  std::string name;
  Source source = Source::kCpuObject;
  std::string arg_signature;  // one letter per argument: t tensor, i int, f float, h handle
  int32_t device = 0;         // where it runs and its tensors live: index into the device table
};

// A builtin table entry resolved at load: the function, its state, and the signature each
// call is checked against (the registered and recorded ones met, vm::Meet).
struct ResolvedBuiltin {
  BuiltinFn fn = nullptr;
  Object* state = nullptr;  // kept alive by the executable
  BuiltinSignature signature;
};

// A constant resolved when loading, by name, from LoadOptions::weights.
struct ExternalWeight {
  int32_t constant = 0;  // index into Contents::constants (a none placeholder until resolved)
  std::string name;
  DLDataType dtype{};
  std::vector<int64_t> shape;
};

struct LoadOptions {
  // Resolves the external weights the executable declares; may be null if it declares none.
  // Resolved tensors are kept alive by the executable.
  const WeightProvider* weights = nullptr;
};

class KernelObject;  // a loaded shared object (kernel_object.h)

class Executable {
 public:
  // Contents, as built by ExecutableBuilder or decoded from a file.
  struct Contents {
    std::vector<Function> functions;
    std::vector<Value> constants;
    std::vector<BuiltinDecl> builtins;
    std::vector<KernelDecl> kernels;
    std::string cpu_object;  // shared object bytes, may be empty
    // GPU kernels per target kind (vm/device_code.h); the host functions in cpu_object
    // launch them.
    std::vector<DeviceCode> device_code;
    // Devices the program uses, by name ("cpu", "cuda:0"); entry 0 is always "cpu", the
    // VM's default device. Each VM maps them to registered devices when it is created.
    std::vector<std::string> devices = {"cpu"};
    std::vector<ExternalWeight> external_weights;
    // What the CPU kernels were compiled for: an LLVM CPU name and the instruction-set
    // extensions they may use (names from vm/cpu_features.h). Empty: nothing recorded
    // (hand-built executables), nothing checked.
    std::string cpu_name;
    std::vector<std::string> cpu_features;
    // Free-form key/value strings the compiler recorded about the program, e.g. which model
    // file its external weights come from ("kiln.model.gguf"). Never interpreted by the VM.
    std::map<std::string, std::string> metadata;
  };

  // Decodes and verifies a file image, checks the host CPU, then resolves callees against
  // `registry` and external weights against `options.weights`. Tensor constants of the
  // weights section point into `image`, which lives as long as any of them.
  static absl::StatusOr<std::shared_ptr<const Executable>> Load(std::shared_ptr<const support::MappedFile> image,
                                                                const BuiltinRegistry& registry,
                                                                const LoadOptions& options = {});
  // Keeps `bytes` (moved into a 64-byte-aligned buffer if theirs is not) and points into them.
  static absl::StatusOr<std::shared_ptr<const Executable>> Load(std::string bytes, const BuiltinRegistry& registry,
                                                                const LoadOptions& options = {});
  // Maps the file read-only (support::MappedFile); errors are prefixed with the path.
  static absl::StatusOr<std::shared_ptr<const Executable>> LoadFile(const std::string& path,
                                                                    const BuiltinRegistry& registry,
                                                                    const LoadOptions& options = {});
  // Decodes and verifies without resolving or checking the CPU (for the disassembler).
  // External weights stay none placeholders.
  static absl::StatusOr<Contents> Decode(std::shared_ptr<const support::MappedFile> image);
  static absl::StatusOr<Contents> Decode(const std::string& bytes);
  // Whether `registry` provides, with compatible signatures, every builtin and library
  // function of `contents` whose name starts with `prefix`, as Load checks them (the first
  // one missing is the error, with the nearest registered name). `kiln compile` checks
  // Kiln's own ("kiln.") against the default registry, so a misspelt one is found before
  // the executable is written; other names are an embedding application's.
  static absl::Status CheckRuntimeProvides(const Contents& contents, const BuiltinRegistry& registry,
                                           std::string_view prefix);
  // Verifies a Contents (indices, registers, jumps, arities). Used by Load and the builder.
  static absl::Status Verify(const Contents& contents);
  static std::string Encode(const Contents& contents);

  const Contents& contents() const { return contents_; }
  const std::vector<Function>& functions() const { return contents_.functions; }
  // -1 if there is no function of that name.
  int32_t FindFunction(const std::string& name) const;
  // The device kind its kernels run on: the GPU kind ("cuda", "vulkan") whose device code
  // it carries, else "cpu". Running it on another kind fails at its first kernel, so tools
  // refuse that up front naming both (kiln run, kiln generate / serve).
  std::string CompiledFor() const;

  // Resolved callees, indexed like the builtin and kernel tables.
  const std::vector<ResolvedBuiltin>& builtin_fns() const { return builtin_fns_; }
  const std::vector<KilnKernelFn>& kernel_fns() const { return kernel_fns_; }
  int32_t max_call_args() const { return max_call_args_; }
  // The file image the executable was loaded from (mapped or held in memory).
  const std::shared_ptr<const support::MappedFile>& image() const { return image_; }

 private:
  Executable() = default;
  std::shared_ptr<const support::MappedFile> image_;
  Contents contents_;
  std::vector<ResolvedBuiltin> builtin_fns_;
  std::vector<std::shared_ptr<Object>> builtin_states_;
  std::vector<KilnKernelFn> kernel_fns_;
  std::shared_ptr<KernelObject> cpu_object_;
  int32_t max_call_args_ = 0;
};

}  // namespace kiln::vm
