// The device kernels a PrimFunc becomes on a GPU target: the default GPU schedule, then the
// TIR lowering passes (for the tests that look at what the emitters receive).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "tir/schedule_rules/gpu_schedule.h"
#include "tir/stmt.h"
#include "tir/target.h"
#include "tir/transform/pipeline.h"

namespace kiln {

// The lowered device kernels of `f` scheduled for `target`.
inline absl::StatusOr<std::vector<tir::PrimFunc>> ScheduledKernels(const tir::PrimFunc& f, const tir::Target& target) {
  absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForGpu(f, target);
  if (!scheduled.ok()) return scheduled.status();
  absl::StatusOr<tir::transform::LoweredFunc> lowered = tir::transform::LowerPrimFunc(*scheduled, target);
  if (!lowered.ok()) return lowered.status();
  return lowered->device_kernels;
}

}  // namespace kiln
