#include "relax/transform/bind_target.h"

#include "absl/strings/str_cat.h"

namespace kiln::relax {

absl::StatusOr<IRModule> BindTarget(const IRModule& module, const tir::Target& target) {
  IRModule result = module;
  for (const IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    absl::StatusOr<std::optional<tir::Target>> own = tir::TargetOf(*func);
    if (!own.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("PrimFunc '", entry.name, "': ", own.status().message()));
    }
    if (!own->has_value()) result.Update(entry.name, tir::WithTarget(*func, target));
  }
  return result;
}

}  // namespace kiln::relax
