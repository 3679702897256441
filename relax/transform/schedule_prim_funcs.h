// SchedulePrimFuncs: applies the default CPU schedule rules (tir/schedule_rules/cpu_schedule.h)
// to every PrimFunc of the module: parallel outer loops, vectorized inner loops, tiled
// matmuls. The Relax functions are unchanged. Scheduling never changes what a kernel
// computes, for any value of its symbolic shapes.
//
// Each PrimFunc is scheduled for its own target (its "target" attribute, tir/target.h), or
// for `target` when it has none: the vector width is the target's float32 lanes (8 when its
// width is unknown) and parallel loops are made when its num_threads is above 1. A cuda or
// vulkan target is an error until GPU schedule rules exist.
//
// `tuning` (may be null): a CPU PrimFunc whose workload key (tir::WorkloadKey of the
// function and its target) is in the table is scheduled with its tuned knobs, dispatching
// on its size when the best knobs differ by size (tir/schedule_rules/cpu_tuned.h); the
// others get the default rules.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/schedule_rules/cpu_tuned.h"
#include "tir/target.h"

namespace kiln::relax {

// Errors name the PrimFunc.
absl::StatusOr<IRModule> SchedulePrimFuncs(const IRModule& module, const tir::Target& target,
                                           const tir::TuningTable* tuning = nullptr);

}  // namespace kiln::relax
