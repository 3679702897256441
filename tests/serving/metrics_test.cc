#include "serving/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::serving {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LatencyHistogram Histogram() {
  LatencyHistogram histogram;
  histogram.upper_bounds = {0.01, 0.1, 1};
  histogram.counts = {1, 3, 4, 5};  // cumulative, then the total
  histogram.sum = 2.5;
  histogram.count = 5;
  return histogram;
}

TEST(Metrics, PrometheusTextFormat) {
  EngineStats stats;
  stats.queued = 2;
  stats.running = 3;
  stats.kv_pages_used = 40;
  stats.kv_pages_free = 88;
  stats.prefix_cache_hit_tokens = 512;
  stats.preemptions = 1;
  stats.prompt_tokens_total = 1000;
  stats.generated_tokens_total = 2000;
  stats.requests_finished = 7;
  stats.time_to_first_token = Histogram();
  stats.inter_token_latency = Histogram();
  stats.end_to_end_latency = Histogram();
  HttpStats http;
  http.responses_by_status = {{200, 7}, {429, 2}};
  const std::string text = PrometheusMetrics(stats, http);

  // Every family has HELP and TYPE, then its samples.
  EXPECT_THAT(text, HasSubstr("# HELP kiln_requests_queued "));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_requests_queued gauge\nkiln_requests_queued 2\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_requests_running gauge\nkiln_requests_running 3\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_kv_cache_pages_used 40\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_kv_cache_pages_free 88\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_prefix_cache_hit_tokens_total counter\nkiln_prefix_cache_hit_tokens_total 512\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_preemptions_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_prompt_tokens_total 1000\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_generation_tokens_total 2000\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_requests_finished_total 7\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_time_to_first_token_seconds histogram\n"
                              "kiln_time_to_first_token_seconds_bucket{le=\"0.01\"} 1\n"
                              "kiln_time_to_first_token_seconds_bucket{le=\"0.1\"} 3\n"
                              "kiln_time_to_first_token_seconds_bucket{le=\"1\"} 4\n"
                              "kiln_time_to_first_token_seconds_bucket{le=\"+Inf\"} 5\n"
                              "kiln_time_to_first_token_seconds_sum 2.5\n"
                              "kiln_time_to_first_token_seconds_count 5\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_inter_token_latency_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE kiln_request_latency_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("kiln_http_responses_total{code=\"200\"} 7\nkiln_http_responses_total{code=\"429\"} 2\n"));
  EXPECT_EQ(text.back(), '\n');
}

TEST(Metrics, EveryLineIsACommentOrASample) {
  const std::string text = PrometheusMetrics(EngineStats{}, HttpStats{});
  size_t at = 0;
  int samples = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    ASSERT_NE(end, std::string::npos);
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    // name{labels} value: a metric name, one space, a number.
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_EQ(line.rfind("kiln_", 0), 0u) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(space + 1))) << line;
    ++samples;
  }
  EXPECT_GT(samples, 15);
}

TEST(Metrics, MisshapenHistogramKeepsOnlyConsistentSamples) {
  EngineStats stats;
  stats.time_to_first_token.upper_bounds = {0.1, 1};
  stats.time_to_first_token.counts = {1};  // too short: a bug upstream, not a crash here
  stats.time_to_first_token.count = 3;
  stats.time_to_first_token.sum = 0.75;
  const std::string text = PrometheusMetrics(stats, HttpStats{});
  EXPECT_THAT(text, Not(HasSubstr("kiln_time_to_first_token_seconds_bucket{le=\"0.1\"}")));
  EXPECT_THAT(text, HasSubstr("kiln_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("kiln_time_to_first_token_seconds_sum 0.75\n"));
}

}  // namespace
}  // namespace kiln::serving
