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
//
// Two adjacent sizes with the same variant (not the default) run it over the whole span
// between them, measured at its ends only. Kernels with tails are not monotonic in the
// size: a variant of 6-row tiles can beat the default's 8-row tiles at 7 and 21 and lose
// at 16, where the default's tiles fit exactly. So such a span is measured once more at
// its most aligned size (the one with the most trailing zero bits, 16 between 7 and 21),
// when that size is more aligned than both ends: where the default loses no work to tails.
#pragma once

#include <cstdint>
#include <vector>

#include "tir/schedule_rules/cpu_tuned.h"

namespace kiln::tune {

struct Crossover {
  int64_t lower = 0, upper = 0;  // adjacent tuned sizes
  // Where to measure: tir::DispatchThreshold(lower, upper) when their bests differ; the
  // span's most aligned size when they are equal (then below == above, measured once).
  int64_t probe = 0;
  tir::CpuScheduleKnobs below, above;  // the best knobs at lower and at upper
};

// Every pair of adjacent tuned sizes of `tuned` with a size strictly between them that
// either have different best knobs, or the same knobs other than the default and a size
// between them more aligned than both (AlignedSizeBetween); in ascending order.
std::vector<Crossover> CrossoversToProbe(const tir::TunedWorkload& tuned);

// The size in (lower, upper) with the most trailing zero bits, if it has more than both
// lower and upper; 0 otherwise.
int64_t AlignedSizeBetween(int64_t lower, int64_t upper);

}  // namespace kiln::tune
