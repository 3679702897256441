#include "relax/transform/schedule_prim_funcs.h"

#include "absl/strings/str_cat.h"

namespace kiln::relax {

absl::StatusOr<IRModule> SchedulePrimFuncs(const IRModule& module, const tir::CpuScheduleOptions& options) {
  IRModule result = module;
  for (const IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(*func, options);
    if (!scheduled.ok()) {
      return absl::Status(scheduled.status().code(),
                          absl::StrCat("scheduling '", entry.name, "': ", scheduled.status().message()));
    }
    result.Update(entry.name, *scheduled);
  }
  return result;
}

}  // namespace kiln::relax
