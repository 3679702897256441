// Builtins and library kernels the bytecode can call by name.
//
// A builtin is a C++ function over VM Values plus the state it was registered with (a
// typed Object, e.g. a model's KV-cache manager; may be null), and a typed signature
// (vm/builtin_signature.h). The compiler records the signature it expects in the
// executable; loading checks it against the registered one, so a mismatch is found at load
// time, not at the first call; and the VM checks each call's arguments against it before
// the function runs. A library kernel follows the kernel ABI (vm/kernel_abi.h) exactly like
// a generated kernel, with a one-letter-per-argument signature.
//
// A builtin may call back into the VM that called it (ctx.vm->Invoke / InvokeClosure): the
// callee runs in its own frame above the caller's, under the same call-depth limit.
//
// State is shared by every executable loaded with the registry and every VM running them,
// possibly on several threads at once: a builtin whose state changes must synchronize it.
//
// Registries are built explicitly (builtins::DefaultRegistry() returns the standard one);
// nothing registers itself from a static initializer.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "vm/builtin_signature.h"
#include "vm/kernel_abi.h"
#include "vm/value.h"

namespace kiln::vm {

class Device;
class VirtualMachine;

// What a builtin may use besides its arguments.
struct BuiltinContext {
  VirtualMachine* vm;  // the calling VM: call back into it with vm->Invoke / InvokeClosure
  Device* device;      // the VM's default device (device table entry 0)
  Object* state;       // what the builtin was registered with, or null

  // The state as a T, or an error naming both types (also when there is none).
  template <typename T>
  absl::StatusOr<T*> state_as() const {
    if (state == nullptr || state->type_index() != T::TypeIndex()) {
      return absl::FailedPreconditionError(
          std::string("builtin state: expected object:") + T::kTypeName + ", got " +
          (state == nullptr ? std::string("none") : "object:" + state->type_name()));
    }
    return static_cast<T*>(state);
  }
};

// `args` points at num_args values (each valid for the duration of the call, and already
// checked against the builtin's signature); the result is written to *result. Errors a user
// can cause (wrong shapes, bad indices) are returned.
using BuiltinFn = absl::Status (*)(BuiltinContext& ctx, const Value* const* args, int num_args,
                                   Value* result);

class BuiltinRegistry {
 public:
  struct Builtin {
    std::string signature_text;  // as registered
    BuiltinSignature signature;
    BuiltinFn fn;
    std::shared_ptr<Object> state;
  };
  struct LibraryKernel {
    std::string arg_signature;
    KilnKernelFn fn;
  };

  // Aborts on a malformed signature or a name registered twice (mistakes in the code that
  // builds the registry, found the first time it runs).
  void RegisterBuiltin(const std::string& name, const std::string& signature, BuiltinFn fn,
                       std::shared_ptr<Object> state = nullptr);
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
