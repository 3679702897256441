// ExecutableBuilder: assembles an Executable's contents instruction by instruction. The
// compiler's VM codegen uses it, and so do tests that hand-build programs.
//
//   ExecutableBuilder b;
//   int32_t add = b.DeclareKernel("add_f32", "ttt");
//   FunctionBuilder& f = b.AddFunction("main", {TensorParam("x", f32, {Dim::Sym("n")}), ...});
//   ...
//   absl::StatusOr<std::string> bytes = b.Build();   // verified .kx image
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/executable.h"

namespace kiln::vm {

// A dimension of a parameter signature: fixed, a named symbolic variable, or any. In a
// MatchShape (not a signature) also a register holding the expected value, e.g. a compound
// dimension `n + 1` computed by IntOps; `name` spells it in errors.
struct Dim {
  enum class Kind { kFixed, kSymbolic, kAny, kRegister } kind;
  int64_t value = 0;
  std::string name;
  static Dim Fixed(int64_t v) { return {Kind::kFixed, v, ""}; }
  static Dim Sym(std::string n) { return {Kind::kSymbolic, 0, std::move(n)}; }
  static Dim Any() { return {Kind::kAny, 0, ""}; }
  static Dim Register(int32_t reg, std::string n) { return {Kind::kRegister, reg, std::move(n)}; }
};

struct ParamSpec {
  std::string name;
  Value::Kind kind = Value::Kind::kNone;
  bool check_dtype = false;
  DLDataType dtype{};
  int32_t ndim = -1;
  std::vector<Dim> dims;
  int32_t device = 0;  // ExecutableBuilder::DeclareDevice
};
ParamSpec TensorParam(std::string name, DLDataType dtype, std::vector<Dim> dims);
ParamSpec IntParam(std::string name);
ParamSpec AnyParam(std::string name);

class FunctionBuilder {
 public:
  // Register holding parameter i.
  int32_t param(int i) const { return i; }
  // Register bound to symbolic variable `name` by the parameter checks (or a MatchShape).
  int32_t sym(const std::string& name);
  int32_t NewRegister();

  struct Label {
    int32_t id;
  };
  Label NewLabel();
  void Bind(Label label);

  // Names the next emitted instruction in errors and disassembly (e.g. the binding var).
  void SetDebugName(const std::string& name) { pending_name_ = name; }

  void CallFunction(int32_t dst, int32_t function, const std::vector<Operand>& args);
  void CallKernel(int32_t kernel, const std::vector<Operand>& args);
  void CallBuiltin(int32_t dst, int32_t builtin, const std::vector<Operand>& args);
  // Calls the closure in register `closure` with (its captured values..., args...).
  void CallClosure(int32_t dst, int32_t closure, const std::vector<Operand>& args);
  void MakeClosure(int32_t dst, int32_t function, const std::vector<Operand>& captured);
  void Ret(int32_t reg);
  void Goto(Label target);
  void If(int32_t cond, Label else_target);
  void LoadConst(int32_t dst, int32_t constant);
  void Move(int32_t dst, int32_t src);
  void IntOp(int32_t dst, IntOpKind op, Operand a, Operand b);
  // Matches register `value` against dims; symbolic dims bind at first sight, then check.
  void MatchShape(int32_t value, const std::vector<Dim>& dims, const std::string& context);
  void MakeShape(int32_t dst, const std::vector<Operand>& dims);
  void AllocStorage(int32_t dst, Operand bytes, int32_t device = 0);
  void CopyToDevice(int32_t dst, int32_t tensor, int32_t device);
  void AllocTensor(int32_t dst, int32_t storage, Operand byte_offset, int32_t shape, DLDataType dtype);
  void Kill(int32_t reg);

 private:
  friend class ExecutableBuilder;
  FunctionBuilder(std::string name, const std::vector<ParamSpec>& params);
  void Emit(Instruction in);
  int32_t String(const std::string& s);
  int32_t Operands(const std::vector<Operand>& ops);
  Operand DimOperand(const Dim& d);
  absl::Status Finish();

  Function fn_;
  std::map<std::string, int32_t> syms_;
  std::map<std::string, int32_t> string_index_;
  std::vector<int32_t> label_pc_;
  std::vector<std::pair<size_t, int32_t>> fixups_;  // (pc, label): patch a jump
  std::string pending_name_;
};

class ExecutableBuilder {
 public:
  // A constant in the executable: tensors larger than kInlineConstantMaxBytes are written
  // to the weights section.
  int32_t AddConstant(Value value);
  // One table entry per (name, signature): calls recording different signatures for one
  // builtin are checked against each at load.
  // A tensor constant resolved by name when the executable is loaded (LoadOptions::weights).
  int32_t AddExternalConstant(const std::string& name, DLDataType dtype, std::vector<int64_t> shape);
  // Records what the CPU kernels were compiled for; loading checks the host has `features`.
  void SetCpuTarget(std::string cpu_name, std::vector<std::string> features) {
    contents_.cpu_name = std::move(cpu_name);
    contents_.cpu_features = std::move(features);
  }
  int32_t DeclareBuiltin(const std::string& name, const std::string& signature);
  int32_t DeclareKernel(const std::string& name, const std::string& arg_signature,
                        KernelDecl::Source source = KernelDecl::Source::kCpuObject, int32_t device = 0);
  // The index of a device in the executable's device table ("cpu" is 0).
  int32_t DeclareDevice(const std::string& name);
  void SetMetadata(const std::string& key, std::string value) { contents_.metadata[key] = std::move(value); }
  void SetCpuObject(std::string shared_object_bytes) { contents_.cpu_object = std::move(shared_object_bytes); }
  // GPU kernels the host functions of the CPU object launch (vm/device_code.h).
  void AddDeviceCode(DeviceCode code) { contents_.device_code.push_back(std::move(code)); }
  // Declares a function (its index is valid immediately, for forward and recursive calls)
  // and returns the builder of its body.
  FunctionBuilder& AddFunction(const std::string& name, const std::vector<ParamSpec>& params);
  int32_t FunctionIndex(const std::string& name) const;

  // Executable::CheckRuntimeProvides on what has been declared so far: whether `registry`
  // provides the builtins and library functions named `prefix`... (`kiln compile` checks
  // Kiln's own against its runtime before the image is encoded, not by decoding it again).
  absl::Status CheckRuntimeProvides(const BuiltinRegistry& registry, std::string_view prefix) const {
    return Executable::CheckRuntimeProvides(contents_, registry, prefix);
  }

  // Resolves labels, verifies, and encodes the file image.
  absl::StatusOr<std::string> Build();

 private:
  Executable::Contents contents_;
  std::vector<std::unique_ptr<FunctionBuilder>> functions_;
};

}  // namespace kiln::vm
