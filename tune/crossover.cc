// CrossoversToProbe and AlignedSizeBetween.
#include "tune/crossover.h"

#include <algorithm>
#include <bit>

namespace kiln::tune {

int64_t AlignedSizeBetween(int64_t lower, int64_t upper) {
  if (lower < 0 || upper - lower < 2) return 0;
  auto zeros = [](int64_t v) { return v == 0 ? 64 : std::countr_zero(static_cast<uint64_t>(v)); };
  // The largest power of two with a multiple strictly inside: that multiple has the most
  // trailing zeros of the span (two such multiples would hold one of the next power).
  for (int64_t step = int64_t{1} << (63 - std::countl_zero(static_cast<uint64_t>(upper))); step > 0; step /= 2) {
    int64_t multiple = (lower / step + 1) * step;
    if (multiple < upper) return zeros(multiple) > std::max(zeros(lower), zeros(upper)) ? multiple : 0;
  }
  return 0;
}

std::vector<Crossover> CrossoversToProbe(const tir::TunedWorkload& tuned) {
  std::vector<Crossover> out;
  if (tuned.dispatch_var.empty()) return out;
  for (size_t i = 1; i < tuned.best_by_size.size(); ++i) {
    const auto& [lower, below] = tuned.best_by_size[i - 1];
    const auto& [upper, above] = tuned.best_by_size[i];
    if (upper - lower < 2) continue;
    if (below == above) {
      int64_t aligned = AlignedSizeBetween(lower, upper);
      if (aligned != 0 && below != tir::CpuScheduleKnobs()) out.push_back(Crossover{lower, upper, aligned, below, above});
      continue;
    }
    // DispatchThreshold lies in (lower, upper]; a probe must be strictly inside.
    int64_t probe = std::min(tir::DispatchThreshold(lower, upper), upper - 1);
    out.push_back(Crossover{lower, upper, probe, below, above});
  }
  return out;
}

}  // namespace kiln::tune
