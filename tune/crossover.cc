// CrossoversToProbe.
#include "tune/crossover.h"

#include <algorithm>

namespace kiln::tune {

std::vector<Crossover> CrossoversToProbe(const tir::TunedWorkload& tuned) {
  std::vector<Crossover> out;
  if (tuned.dispatch_var.empty()) return out;
  for (size_t i = 1; i < tuned.best_by_size.size(); ++i) {
    const auto& [lower, below] = tuned.best_by_size[i - 1];
    const auto& [upper, above] = tuned.best_by_size[i];
    if (below == above || upper - lower < 2) continue;
    // DispatchThreshold lies in (lower, upper]; a probe must be strictly inside.
    int64_t probe = std::min(tir::DispatchThreshold(lower, upper), upper - 1);
    out.push_back(Crossover{lower, upper, probe, below, above});
  }
  return out;
}

}  // namespace kiln::tune
