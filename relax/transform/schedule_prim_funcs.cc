#include "relax/transform/schedule_prim_funcs.h"

#include "absl/strings/str_cat.h"
#include "relax/transform/bind_target.h"
#include "support/status_macros.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/schedule_rules/gpu_schedule.h"

namespace kiln::relax {

absl::StatusOr<IRModule> SchedulePrimFuncs(const IRModule& module, const tir::Target& target,
                                           const tir::TuningTable* tuning) {
  IRModule result = module;
  for (const IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    KILN_ASSIGN_OR_RETURN(tir::Target t, PrimFuncTarget(entry.name, *func, target));
    // cuda and vulkan share the GPU rules; the verifier holds each to its own limits.
    if (t.is_gpu()) {
      absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForGpu(*func, t);
      if (!scheduled.ok()) {
        return absl::Status(scheduled.status().code(),
                            absl::StrCat("scheduling '", entry.name, "': ", scheduled.status().message()));
      }
      result.Update(entry.name, *scheduled);
      continue;
    }
    if (!t.is_cpu()) {
      return absl::UnimplementedError(absl::StrCat("scheduling '", entry.name, "': there are no schedule rules for ",
                                                   tir::TargetKindName(t.kind), " targets yet"));
    }
    tir::CpuScheduleOptions options{.vector_lanes = t.Float32Lanes(), .num_threads = t.num_threads};
    absl::StatusOr<tir::PrimFunc> scheduled;
    auto tuned = tuning ? tuning->find(tir::WorkloadKey(*func, t)) : tir::TuningTable::const_iterator();
    if (tuning && tuned != tuning->end()) {
      scheduled = tir::ScheduleForCpuTuned(*func, options, tuned->second);
    } else {
      scheduled = tir::ScheduleForCpu(*func, options);
    }
    if (!scheduled.ok()) {
      return absl::Status(scheduled.status().code(),
                          absl::StrCat("scheduling '", entry.name, "': ", scheduled.status().message()));
    }
    result.Update(entry.name, *scheduled);
  }
  return result;
}

}  // namespace kiln::relax
