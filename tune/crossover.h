// Where a dispatching kernel's thresholds are still guesses, and where to measure to
// place them (the tuner's last phase, docs/tuning.md).
//
// The tuned sizes of a symbolic kernel are a factor of 16 apart, and ScheduleForCpuTuned
// switches between two sizes' best variants at the geometric mean of the sizes: a guess
// of where one variant stops being the faster. A variant tuned at 2048 and used at 1024
// can lose to the one tuned at 256, or to the default. The tuner refines the guess by
// measuring both neighbouring variants at the probe size (the threshold itself), which
// makes that size a tuned size of its own with its own best; adjacent sizes with equal
// bests merge, so the threshold moves to between the probe and the size that differs, and
// the next round probes there (bisection on the log scale).
#pragma once

#include <cstdint>
#include <vector>

#include "tir/schedule_rules/cpu_tuned.h"

namespace kiln::tune {

struct Crossover {
  int64_t lower = 0, upper = 0;  // adjacent tuned sizes whose bests differ
  int64_t probe = 0;             // where to measure both: tir::DispatchThreshold(lower, upper)
  tir::CpuScheduleKnobs below, above;  // the best knobs at lower and at upper
};

// Every pair of adjacent tuned sizes of `tuned` with different best knobs and a size
// strictly between them, in ascending order.
std::vector<Crossover> CrossoversToProbe(const tir::TunedWorkload& tuned);

}  // namespace kiln::tune
