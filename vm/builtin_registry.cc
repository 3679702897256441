#include "vm/builtin_registry.h"

#include "support/check.h"

namespace kiln::vm {

void BuiltinRegistry::RegisterBuiltin(const std::string& name, const std::string& signature, BuiltinFn fn,
                                      std::shared_ptr<Object> state) {
  KILN_CHECK(fn != nullptr) << name;
  absl::StatusOr<BuiltinSignature> parsed = BuiltinSignature::Parse(signature);
  KILN_CHECK(parsed.ok()) << "builtin " << name << ": " << parsed.status().message();
  KILN_CHECK(builtins_.emplace(name, Builtin{signature, *std::move(parsed), fn, std::move(state)}).second)
      << "builtin registered twice: " << name;
}

void BuiltinRegistry::RegisterKernel(const std::string& name, std::string arg_signature, KilnKernelFn fn) {
  KILN_CHECK(fn != nullptr) << name;
  KILN_CHECK(kernels_.emplace(name, LibraryKernel{std::move(arg_signature), fn}).second)
      << "library kernel registered twice: " << name;
}

const BuiltinRegistry::Builtin* BuiltinRegistry::FindBuiltin(const std::string& name) const {
  auto it = builtins_.find(name);
  return it == builtins_.end() ? nullptr : &it->second;
}

const BuiltinRegistry::LibraryKernel* BuiltinRegistry::FindKernel(const std::string& name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second;
}

}  // namespace kiln::vm
