#include "vm/executable.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "support/file_io.h"
#include "vm/kernel_object.h"

namespace kiln::vm {

absl::StatusOr<std::shared_ptr<const Executable>> Executable::Load(std::string bytes,
                                                                   const BuiltinRegistry& registry) {
  absl::StatusOr<Contents> contents = Decode(bytes);
  if (!contents.ok()) return contents.status();
  std::shared_ptr<Executable> exe(new Executable());
  exe->contents_ = std::move(*contents);
  const Contents& c = exe->contents_;

  for (const BuiltinDecl& decl : c.builtins) {
    const BuiltinRegistry::Builtin* builtin = registry.FindBuiltin(decl.name);
    if (builtin == nullptr) {
      return absl::NotFoundError(absl::StrCat("executable needs builtin '", decl.name,
                                              "', which this runtime does not provide"));
    }
    absl::StatusOr<BuiltinSignature> recorded = BuiltinSignature::Parse(decl.signature);
    if (!recorded.ok()) {
      return absl::DataLossError(absl::StrCat("builtin '", decl.name, "' in the executable: ", recorded.status().message()));
    }
    if (!Compatible(builtin->signature, *recorded)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "builtin '", decl.name, "' has signature ", builtin->signature.ToString(),
          " in this runtime but the executable expects ", recorded->ToString()));
    }
    exe->builtin_fns_.push_back({builtin->fn, builtin->state.get(), Meet(builtin->signature, *recorded)});
    if (builtin->state != nullptr) exe->builtin_states_.push_back(builtin->state);
  }
  if (!c.cpu_object.empty()) {
    absl::StatusOr<std::shared_ptr<KernelObject>> object = KernelObject::Load(c.cpu_object);
    if (!object.ok()) return object.status();
    exe->cpu_object_ = *object;
  }
  for (const KernelDecl& decl : c.kernels) {
    if (decl.source == KernelDecl::Source::kLibrary) {
      const BuiltinRegistry::LibraryKernel* kernel = registry.FindKernel(decl.name);
      if (kernel == nullptr) {
        return absl::NotFoundError(absl::StrCat("executable needs library function '", decl.name,
                                                "', which this runtime does not provide"));
      }
      if (kernel->arg_signature != decl.arg_signature) {
        return absl::FailedPreconditionError(absl::StrCat(
            "library function '", decl.name, "' takes (", kernel->arg_signature,
            ") in this runtime but the executable expects (", decl.arg_signature, ")"));
      }
      exe->kernel_fns_.push_back(kernel->fn);
    } else {
      absl::StatusOr<KilnKernelFn> fn = exe->cpu_object_->Find(decl.name);
      if (!fn.ok()) return fn.status();
      exe->kernel_fns_.push_back(*fn);
    }
  }
  for (const Function& fn : c.functions) {
    for (const Instruction& in : fn.code) {
      if (in.op == Opcode::kCall) exe->max_call_args_ = std::max(exe->max_call_args_, in.c);
    }
  }
  return std::shared_ptr<const Executable>(std::move(exe));
}

absl::StatusOr<std::shared_ptr<const Executable>> Executable::LoadFile(const std::string& path,
                                                                       const BuiltinRegistry& registry) {
  absl::StatusOr<std::string> bytes = support::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Load(std::move(*bytes), registry);
  if (!exe.ok()) {
    return absl::Status(exe.status().code(), absl::StrCat(path, ": ", exe.status().message()));
  }
  return exe;
}

int32_t Executable::FindFunction(const std::string& name) const {
  for (size_t i = 0; i < contents_.functions.size(); ++i) {
    if (contents_.functions[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace kiln::vm
