// /metrics: the engine's statistics (EngineStats) and the HTTP server's reply counts in
// Prometheus' text exposition format (version 0.0.4), so a Prometheus server or any
// scraper reads them as they are:
//
//   # HELP kiln_time_to_first_token_seconds Time from arrival to the first generated token.
//   # TYPE kiln_time_to_first_token_seconds histogram
//   kiln_time_to_first_token_seconds_bucket{le="0.05"} 3
//   ...
//   kiln_time_to_first_token_seconds_bucket{le="+Inf"} 7
//   kiln_time_to_first_token_seconds_sum 1.25
//   kiln_time_to_first_token_seconds_count 7
//
// Names follow Prometheus' conventions: base units (seconds), counters end in _total.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "serving/engine.h"

namespace kiln::serving {

// What the HTTP server counts itself.
struct HttpStats {
  std::map<int, int64_t> responses_by_status;  // HTTP status -> replies sent
};

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string PrometheusMetrics(const EngineStats& engine, const HttpStats& http);

}  // namespace kiln::serving
