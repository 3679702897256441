#include "relax/transform/bind_target.h"

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace kiln::relax {

absl::StatusOr<tir::Target> PrimFuncTarget(const std::string& name, const tir::PrimFunc& func,
                                           const tir::Target& fallback) {
  absl::StatusOr<std::optional<tir::Target>> own = tir::TargetOf(func);
  if (!own.ok()) return absl::InvalidArgumentError(absl::StrCat("PrimFunc '", name, "': ", own.status().message()));
  return own->value_or(fallback);
}

absl::StatusOr<IRModule> BindTarget(const IRModule& module, const tir::Target& target) {
  IRModule result = module;
  for (const IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    KILN_ASSIGN_OR_RETURN(tir::Target own, PrimFuncTarget(entry.name, *func, target));
    if ((*func)->attrs.count(tir::kTargetAttr) == 0) result.Update(entry.name, tir::WithTarget(*func, own));
  }
  return result;
}

}  // namespace kiln::relax
