// Latency histograms for the engine's statistics (serving/engine.h's LatencyHistogram):
// fixed bucket bounds chosen once, cumulative counts as Prometheus exposes them, so memory
// stays constant however many requests are served.
#pragma once

#include <vector>

#include "serving/engine.h"

namespace kiln::serving {

// Bounds from 1 ms to 60 s, roughly doubling: fine enough for inter-token latencies of a
// few milliseconds and coarse enough for end-to-end latencies of a minute.
std::vector<double> DefaultLatencyBounds();

// An empty histogram over `upper_bounds` (increasing).
LatencyHistogram MakeLatencyHistogram(std::vector<double> upper_bounds);

// Counts one observation of `seconds`.
void Observe(LatencyHistogram& histogram, double seconds);

}  // namespace kiln::serving
