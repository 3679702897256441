// Scheduling with tuning results: a workload's best knob sets (CpuScheduleKnobs) at the
// sizes it was tuned at (tune/, docs/tuning.md) turn into one scheduled function.
//
//  - WorkloadKey names a kernel as the tuner and the compiler both see it: the structural
//    hash of the unscheduled PrimFunc (names of variables and blocks do not matter) and
//    the target's text form. Equal keys are the same kernel for the same target.
//  - ScheduleForCpuTuned with one variant (or every size's best equal) schedules with its
//    knobs. With different bests at different sizes of the dispatch variable, each variant
//    is scheduled on its own and the function dispatches at run time on that size:
//    `if (n < t1) { variant 1 } else if (n < t2) { variant 2 } ... else { last }`, the
//    thresholds being the geometric means of adjacent tuned sizes (the halfway point on
//    the log scale the sizes were picked on). Each variant's loops and blocks are renamed
//    apart (`_v1`, `_v2`, ...), the same way BranchOn versions a function; the variants
//    share the function's parameters, so any size still takes a correct branch.
//  - Deterministic: the same function, options and variants give the same result.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/target.h"

namespace kiln::tir {

// The tuned variants of one workload.
struct TunedWorkload {
  // The symbolic size the variants were tuned over, by name; "" for a static workload.
  std::string dispatch_var;
  // Ascending sizes of dispatch_var (one entry, size 0, for a static workload), each with
  // the knobs measured fastest there.
  std::vector<std::pair<int64_t, CpuScheduleKnobs>> best_by_size;
};

// Workload key -> its tuned variants; what `kiln compile --tuning-db` hands the pipeline.
using TuningTable = std::map<std::string, TunedWorkload>;

std::string WorkloadKey(const PrimFunc& unscheduled, const Target& target);

// The size thresholds between adjacent tuned sizes: size i serves [t(i-1), t(i)).
int64_t DispatchThreshold(int64_t smaller, int64_t larger);

absl::StatusOr<PrimFunc> ScheduleForCpuTuned(const PrimFunc& func, const CpuScheduleOptions& options,
                                             const TunedWorkload& tuned);

}  // namespace kiln::tir
