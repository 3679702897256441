// Engine: serves many generation requests at once from one compiled model — the library a
// C++ server embeds (and what `kiln serve` runs). Requests come from any thread; one loop
// thread owns the model (serving::LlmRunner: VM + paged KV cache) and schedules steps:
//
//   each step = one model call: the next token of every running sequence (ragged lengths)
//               + chunks of waiting prompts, as many as keep the step within
//               (1 + prefill_time_ratio) times the decode's own time (step_prefill_tokens
//               when nothing decodes)
//
// so the weights are read once per step and running streams keep a steady pace while new
// prompts arrive. Batching never changes a
// greedy result: a request's tokens are the same alone or among many others.
//
// Memory: a request is admitted when the KV cache has free pages for its prompt; when pages
// run out during decode the newest running request is preempted (its pages freed, its
// prompt + generated tokens recomputed later) rather than failed. Prefix caching: a prompt
// that shares whole pages with a cached one (a system prompt) forks those pages instead of
// recomputing them (EngineStats::prefix_cache_hit_tokens counts the reuse).
//
// Tokens stream back through the request's callback, called on the loop thread (keep it
// short: queue the event). The last event of every request (finished = true) says why it
// ended, and no event follows it.
//
//   auto engine = Engine::Load({.executable_path = "m.kx", .weights_path = "m.gguf"});
//   GenerationRequest request;
//   request.prompt = "Hello";
//   auto id = (*engine)->Submit(std::move(request), [](const TokenEvent& e) { ... });
//
// Errors a caller can cause (bad sampling parameters, a prompt longer than the context, a
// full queue) are statuses from Submit; nothing aborts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/llama_config.h"
#include "serving/chat_template.h"
#include "serving/llm_runner.h"
#include "serving/sampler.h"
#include "serving/tokenizer.h"

namespace kiln::serving {

struct EngineOptions {
  std::string executable_path;  // the compiled model (.kx)
  std::string weights_path;     // the GGUF it was compiled from
  std::string model_name;       // what /v1/models reports (default: the GGUF's general.name or file stem)
  LlmRunnerOptions runner;      // KV cache size, page size
  int threads = 0;              // VM worker threads (0: all cores)
  int64_t max_running = 64;     // sequences decoded together in one step
  int64_t max_queued = 256;     // waiting requests (>= 1); Submit beyond this is ResourceExhausted
  int64_t step_prefill_tokens = 256;  // prompt tokens prefilled per step at most (chunked prefill)
  // While streams decode, the prompt tokens added to a step may take at most this times as
  // long as the step's decode alone (measured: serving/step_cost_model.h), so running
  // streams' inter-token latency stays within (1 + ratio) times its idle value however many
  // prompts arrive; with nothing decoding, prompts get step_prefill_tokens. At least one
  // prompt token per step, so prompts always advance.
  double prefill_time_ratio = 0.5;
  bool prefix_caching = true;
};

struct GenerationRequest {
  // Exactly one of: prompt text, chat messages (the model's chat template applied, with the
  // generation prompt), or token ids.
  std::optional<std::string> prompt;
  std::optional<std::vector<ChatMessage>> messages;
  std::optional<std::vector<int32_t>> prompt_tokens;
  SamplingParams sampling;
  int64_t max_tokens = 256;          // generated tokens per choice (capped by the context)
  // The client asked for max_tokens itself: a prompt plus max_tokens beyond the context is
  // refused at Submit (OutOfRange, as OpenAI and vLLM answer 400) instead of ending early
  // with finish_reason length, which a client that counts on max_tokens would not notice.
  bool max_tokens_must_fit = false;
  std::vector<std::string> stop;     // stop strings (not included in the text)
  bool ignore_eos = false;           // keep going past end-of-generation tokens
  int top_logprobs = 0;              // 0..20: the most likely tokens with each generated one
  int n = 1;                         // choices; n > 1 forks the prompt's KV pages
};

struct TokenLogprob {
  int32_t token;
  std::string text;
  float logprob;
};

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };
const char* FinishReasonName(FinishReason reason);  // "stop", "length", "abort", "error"

struct TokenEvent {
  int64_t request_id = 0;
  int choice = 0;          // 0..n-1
  int32_t token = -1;      // -1 on a final event that carries no token
  std::string text;        // text delta (UTF-8 complete; stop strings held back until resolved)
  float logprob = 0;       // of `token`, under the unmodified distribution
  std::vector<TokenLogprob> top_logprobs;
  bool finished = false;   // last event of this choice
  FinishReason finish_reason = FinishReason::kNone;
  absl::Status error;      // set when finish_reason is kError
  int64_t prompt_tokens = 0;      // usage, on finished events
  int64_t completion_tokens = 0;
};

using TokenCallback = std::function<void(const TokenEvent&)>;

struct LatencyHistogram {
  std::vector<double> upper_bounds;  // seconds, increasing; +Inf implied
  std::vector<int64_t> counts;       // observations <= upper_bounds[i] (cumulative), then the total
  double sum = 0;
  int64_t count = 0;
};

struct EngineStats {
  int64_t queued = 0;           // waiting requests
  int64_t running = 0;          // sequences in decode or prefill
  int64_t kv_pages_used = 0;
  int64_t kv_pages_free = 0;
  int64_t prefix_cache_hit_tokens = 0;
  int64_t preemptions = 0;
  int64_t prompt_tokens_total = 0;
  int64_t generated_tokens_total = 0;
  int64_t requests_finished = 0;
  // Latencies in seconds, as cumulative histograms (Prometheus style; fixed memory).
  LatencyHistogram time_to_first_token;
  LatencyHistogram inter_token_latency;
  LatencyHistogram end_to_end_latency;
};

class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Load(const EngineOptions& options);
  ~Engine();  // aborts what is in flight and joins the loop thread

  // Thread-safe. Validates the request (sampling parameters, n, top_logprobs, prompt length
  // against the context), tokenizes it and queues it; returns its id. `callback` receives
  // every event of the request on the loop thread.
  absl::StatusOr<int64_t> Submit(GenerationRequest request, TokenCallback callback);
  // Thread-safe; an unknown or finished id is ignored. The request's last event has
  // finish_reason kAbort, and its pages are freed.
  void Abort(int64_t request_id);
  // Stops accepting requests (Submit returns Unavailable) and blocks until every in-flight
  // request has finished.
  void Drain();

  EngineStats Stats() const;  // thread-safe snapshot
  const std::string& model_name() const;
  const formats::LlamaConfig& config() const;
  const Tokenizer& tokenizer() const;
  // What chat requests use instead of the file's tokenizer.chat_template when it has none
  // ("ChatML", as llama.cpp does; ChatTemplate::fallback()); empty when it has one or when
  // its template did not parse (chat requests then fail, naming the problem).
  const std::string& chat_template_fallback() const;
  int64_t context_length() const;

 private:
  class Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::serving
