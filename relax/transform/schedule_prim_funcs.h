// SchedulePrimFuncs: applies the default CPU schedule rules (tir/schedule_rules/cpu_schedule.h)
// to every PrimFunc of the module: parallel outer loops, vectorized inner loops, tiled
// matmuls. The Relax functions are unchanged. Scheduling never changes what a kernel
// computes, for any value of its symbolic shapes.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/schedule_rules/cpu_schedule.h"

namespace kiln::relax {

// Errors name the PrimFunc.
absl::StatusOr<IRModule> SchedulePrimFuncs(const IRModule& module, const tir::CpuScheduleOptions& options);

}  // namespace kiln::relax
