#include "serving/latency_histogram.h"

#include <utility>

namespace kiln::serving {

std::vector<double> DefaultLatencyBounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.5, 5, 10, 20, 40, 60};
}

LatencyHistogram MakeLatencyHistogram(std::vector<double> upper_bounds) {
  LatencyHistogram histogram;
  histogram.counts.assign(upper_bounds.size() + 1, 0);
  histogram.upper_bounds = std::move(upper_bounds);
  return histogram;
}

void Observe(LatencyHistogram& histogram, double seconds) {
  // Cumulative buckets: every bucket whose bound is at least `seconds` counts it, and the
  // last entry (+Inf) counts everything.
  for (size_t i = 0; i < histogram.upper_bounds.size(); ++i) {
    if (seconds <= histogram.upper_bounds[i]) ++histogram.counts[i];
  }
  ++histogram.counts.back();
  histogram.sum += seconds;
  ++histogram.count;
}

}  // namespace kiln::serving
