#include "serving/metrics.h"

#include <cmath>
#include <cstdlib>
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::serving {
namespace {

// Prometheus floats: shortest round-trip form, and its spellings of the special values.
std::string Float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Whole numbers as integers ("10", not "1e+01"), others in their shortest exact form.
  if (value == std::floor(value) && std::fabs(value) < 1e15) return absl::StrFormat("%.0f", value);
  for (int precision = 1;; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    if (precision >= 17 || std::strtod(text.c_str(), nullptr) == value) return text;
  }
}

void Header(std::string& out, absl::string_view name, absl::string_view type, absl::string_view help) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void Gauge(std::string& out, absl::string_view name, absl::string_view help, int64_t value) {
  Header(out, name, "gauge", help);
  absl::StrAppend(&out, name, " ", value, "\n");
}

void Counter(std::string& out, absl::string_view name, absl::string_view help, int64_t value) {
  Header(out, name, "counter", help);
  absl::StrAppend(&out, name, " ", value, "\n");
}

// A cumulative histogram. The engine keeps counts[i] = observations <= upper_bounds[i] and
// one more entry, the total (the +Inf bucket). A histogram of another shape (a bug) is
// written from what is consistent — its sum and count — rather than as wrong buckets.
void Histogram(std::string& out, absl::string_view name, absl::string_view help, const LatencyHistogram& histogram) {
  Header(out, name, "histogram", help);
  if (histogram.counts.size() == histogram.upper_bounds.size() + 1) {
    for (size_t i = 0; i < histogram.upper_bounds.size(); ++i) {
      absl::StrAppend(&out, name, "_bucket{le=\"", Float(histogram.upper_bounds[i]), "\"} ", histogram.counts[i], "\n");
    }
  }
  absl::StrAppend(&out, name, "_bucket{le=\"+Inf\"} ", histogram.count, "\n");
  absl::StrAppend(&out, name, "_sum ", Float(histogram.sum), "\n");
  absl::StrAppend(&out, name, "_count ", histogram.count, "\n");
}

}  // namespace

std::string PrometheusMetrics(const EngineStats& engine, const HttpStats& http) {
  std::string out;
  Gauge(out, "kiln_requests_queued", "Requests waiting to be admitted.", engine.queued);
  Gauge(out, "kiln_requests_running", "Sequences in prefill or decode.", engine.running);
  Gauge(out, "kiln_kv_cache_pages_used", "KV cache pages in use.", engine.kv_pages_used);
  Gauge(out, "kiln_kv_cache_pages_free", "KV cache pages free.", engine.kv_pages_free);
  Counter(out, "kiln_prefix_cache_hit_tokens_total", "Prompt tokens whose KV pages were reused from the prefix cache.",
          engine.prefix_cache_hit_tokens);
  Counter(out, "kiln_preemptions_total", "Running sequences preempted for lack of KV pages.", engine.preemptions);
  Counter(out, "kiln_prompt_tokens_total", "Prompt tokens prefilled.", engine.prompt_tokens_total);
  Counter(out, "kiln_generation_tokens_total", "Tokens generated.", engine.generated_tokens_total);
  Counter(out, "kiln_requests_finished_total", "Requests finished (any reason).", engine.requests_finished);
  Histogram(out, "kiln_time_to_first_token_seconds", "Time from a request's arrival to its first generated token.",
            engine.time_to_first_token);
  Histogram(out, "kiln_inter_token_latency_seconds", "Time between consecutive generated tokens of a sequence.",
            engine.inter_token_latency);
  Histogram(out, "kiln_request_latency_seconds", "Time from a request's arrival to its last token.",
            engine.end_to_end_latency);
  Header(out, "kiln_http_responses_total", "counter", "HTTP replies sent, by status code.");
  for (const auto& [status, count] : http.responses_by_status) {
    absl::StrAppend(&out, "kiln_http_responses_total{code=\"", status, "\"} ", count, "\n");
  }
  return out;
}

}  // namespace kiln::serving
