// Builtins and library kernels the bytecode can call by name.
//
// A builtin is a C++ function over VM Values; a library kernel follows the kernel ABI
// (vm/kernel_abi.h) exactly like a generated kernel. Each has a signature string recorded
// in the executable when it was compiled and compared when the executable is loaded, so a
// mismatch is found at load time, not at the first call.
//
// Registries are built explicitly (builtins::DefaultRegistry() returns the standard one);
// nothing registers itself from a static initializer.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "vm/kernel_abi.h"
#include "vm/value.h"

namespace kiln::vm {

class Device;

// What a builtin may use besides its arguments.
struct BuiltinContext {
  Device* device;  // the VM's device
};

// `args` points at num_args values (each valid for the duration of the call); the result
// is written to *result. Errors a user can cause (wrong shapes, bad indices) are returned.
using BuiltinFn = absl::Status (*)(BuiltinContext& ctx, const Value* const* args, int num_args,
                                   Value* result);

class BuiltinRegistry {
 public:
  struct Builtin {
    std::string signature;
    BuiltinFn fn;
  };
  struct LibraryKernel {
    std::string arg_signature;
    KilnKernelFn fn;
  };

  void RegisterBuiltin(const std::string& name, std::string signature, BuiltinFn fn);
  void RegisterKernel(const std::string& name, std::string arg_signature, KilnKernelFn fn);

  const Builtin* FindBuiltin(const std::string& name) const;
  const LibraryKernel* FindKernel(const std::string& name) const;
  const std::map<std::string, Builtin>& builtins() const { return builtins_; }
  const std::map<std::string, LibraryKernel>& kernels() const { return kernels_; }

 private:
  std::map<std::string, Builtin> builtins_;
  std::map<std::string, LibraryKernel> kernels_;
};

}  // namespace kiln::vm
