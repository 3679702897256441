// The Engine's loop and its scheduling policy (docs/serving.md describes both). Everything
// that touches the model, the KV cache, the prefix cache or a request's state runs on the
// loop thread; other threads only queue requests and aborts under `mu_` and read the
// statistics.
#include "serving/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "formats/gguf_file.h"
#include "serving/latency_histogram.h"
#include "serving/prefix_cache.h"
#include "serving/prompt_chunk.h"
#include "serving/request_state.h"
#include "serving/step_cost_model.h"
#include "serving/utf8.h"
#include "support/heap_trim.h"
#include "support/status_macros.h"

namespace kiln::serving {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "none";
}

namespace {

constexpr int kMaxTopLogprobs = 20;
// Entries of the prefix cache. Each holds pages that would otherwise be free, and lookups
// compare the prompt with every entry, so it stays small; the engine evicts from it first
// whenever pages run short.
constexpr int64_t kPrefixCacheEntries = 32;

double Seconds(EngineClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

class Engine::Impl {
 public:
  absl::Status Init(const EngineOptions& options);
  ~Impl();

  absl::StatusOr<int64_t> Submit(GenerationRequest request, TokenCallback callback);
  void Abort(int64_t request_id);
  void Drain();
  EngineStats Stats() const;

  std::string model_name_;
  formats::LlamaConfig config_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  int64_t context_length_ = 0;
  std::string chat_template_fallback_;  // ChatTemplate::fallback() of the file's template

 private:
  absl::StatusOr<std::vector<int32_t>> PromptTokens(const GenerationRequest& request) const;

  // Loop thread.
  void Loop();
  void Step();
  void Admit();
  bool CombinedStep();
  void DecodeStep();
  void PrefillStep();
  void StartPrefill(RequestState& request);
  void FinishPrefill(RequestState& request, std::vector<float>& logits);
  // Samples choice `choice`'s next token from `logits` and streams it.
  void Accept(RequestState& request, int choice, std::span<const float> logits);
  void FinishChoice(RequestState& request, ChoiceState& choice, TokenEvent& event, FinishReason reason);
  void FailRequest(RequestState& request, const absl::Status& error);
  void EndRequest(RequestState& request, FinishReason reason, const absl::Status& error);
  void ReleaseSequences(RequestState& request);
  void RequestDone(RequestState& request);
  // Frees pages: a prefix-cache entry first, else preempts the newest running request newer
  // than `keep` (any, for nullptr) unless it is the only one. False when neither is possible.
  bool FreeSomePages(const RequestState* keep);
  void Preempt(RequestState& victim);
  void SweepFinished();
  int64_t RunningSequences() const;
  int64_t LiveRequests() const;  // running requests with unfinished choices
  int64_t PagesToAdmit(const RequestState& request) const;
  void PublishGauges();

  EngineOptions options_;
  int64_t max_running_ = 0;
  std::shared_ptr<const formats::GgufFile> gguf_;
  std::optional<ChatTemplate> chat_template_;
  absl::Status chat_template_error_;
  mutable std::mutex chat_mu_;  // the Jinja renderer is not promised to be reentrant

  // Shared with the threads that submit, abort, drain and read statistics.
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the loop waits for work
  std::condition_variable idle_;  // Drain waits for in_flight_ == 0
  bool worked_since_trim_ = false;  // loop thread only: a step ran since the heap was last trimmed
  std::deque<std::unique_ptr<RequestState>> incoming_;
  std::vector<int64_t> aborts_;
  bool accepting_ = true;
  bool stopping_ = false;
  int64_t next_request_id_ = 1;
  int64_t in_flight_ = 0;
  int64_t waiting_count_ = 0;  // waiting_.size(), published by the loop
  EngineStats stats_;

  // Loop thread only.
  std::unique_ptr<LlmRunner> runner_;
  std::unique_ptr<PrefixCache> prefix_cache_;
  std::deque<std::unique_ptr<RequestState>> waiting_;   // preempted ones at the front
  std::vector<std::unique_ptr<RequestState>> running_;  // in admission order: the back is the newest
  int64_t next_sequence_id_ = 0;
  int64_t ended_unpublished_ = 0;  // requests ended since the last PublishGauges
  std::vector<float> scratch_;  // logits the sampler may change
  StepCostModel step_cost_;     // seconds per combined step against its tokens

  std::thread loop_;
};

// ---------------------------------------------------------------------------------------
// Loading and the caller-facing side.

absl::Status Engine::Impl::Init(const EngineOptions& options) {
  options_ = options;
  if (options.threads < 0) return absl::InvalidArgumentError(absl::StrCat("threads must be 0 (all cores) or positive, got ", options.threads));
  if (options.max_running < 1) return absl::InvalidArgumentError("max_running must be at least 1");
  // Every request is queued until the loop admits it, even on an idle engine: 0 would refuse all.
  if (options.max_queued < 1) return absl::InvalidArgumentError("max_queued must be at least 1");
  if (options.step_prefill_tokens < 1) return absl::InvalidArgumentError("step_prefill_tokens must be at least 1");
  if (!(options.prefill_time_ratio > 0) || !std::isfinite(options.prefill_time_ratio)) {
    return absl::InvalidArgumentError("prefill_time_ratio must be a positive number");
  }
  // The runtime's thread pool is process-wide and sized at its first use; an explicit count
  // is passed the way the pool reads it, unless the user already chose one.
  if (options.threads > 0 && std::getenv("KILN_NUM_THREADS") == nullptr) {
    setenv("KILN_NUM_THREADS", std::to_string(options.threads).c_str(), 0);
  }
  KILN_ASSIGN_OR_RETURN(gguf_, formats::GgufFile::Open(options.weights_path));
  KILN_ASSIGN_OR_RETURN(tokenizer_, Tokenizer::FromGguf(*gguf_));
  KILN_ASSIGN_OR_RETURN(runner_, LlmRunner::Load(options.executable_path, gguf_, options.runner));
  config_ = runner_->config();
  if (tokenizer_->vocab_size() > config_.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(options.weights_path, ": the tokenizer has ", tokenizer_->vocab_size(),
                                                   " tokens, the model's vocabulary ", config_.vocab_size));
  }
  context_length_ = runner_->max_sequence_length();
  max_running_ = std::min(options.max_running, runner_->max_call_tokens());
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::FromGguf(*gguf_, *tokenizer_);
  if (chat.ok()) {
    chat_template_fallback_ = chat->fallback();
    chat_template_ = *std::move(chat);
  } else {
    chat_template_error_ = chat.status();  // only chat requests need it
  }
  model_name_ = options.model_name;
  if (model_name_.empty()) {
    absl::StatusOr<std::string_view> name = gguf_->GetString("general.name");
    model_name_ = name.ok() && !name->empty() ? std::string(*name)
                                              : std::filesystem::path(options.weights_path).stem().string();
  }
  prefix_cache_ = std::make_unique<PrefixCache>(&runner_->cache(), options.prefix_caching ? kPrefixCacheEntries : 0);
  const std::vector<double> bounds = DefaultLatencyBounds();
  stats_.time_to_first_token = MakeLatencyHistogram(bounds);
  stats_.inter_token_latency = MakeLatencyHistogram(bounds);
  stats_.end_to_end_latency = MakeLatencyHistogram(bounds);
  PublishGauges();
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

Engine::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    accepting_ = false;
  }
  wake_.notify_all();
  if (loop_.joinable()) loop_.join();
  prefix_cache_.reset();  // before the runner that owns the KV cache it points into
}

absl::StatusOr<std::vector<int32_t>> Engine::Impl::PromptTokens(const GenerationRequest& request) const {
  const int sources = request.prompt.has_value() + request.messages.has_value() + request.prompt_tokens.has_value();
  if (sources != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a request needs exactly one of prompt, messages or prompt_tokens (", sources, " given)"));
  }
  std::vector<int32_t> ids;
  if (request.prompt.has_value()) {
    // Control tokens in a raw prompt are recognized, as llama.cpp's server and Hugging Face
    // tokenizers recognize them.
    KILN_ASSIGN_OR_RETURN(ids, tokenizer_->EncodePrompt(*request.prompt));
  } else if (request.messages.has_value()) {
    if (!chat_template_.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("this model has no usable chat template: ", chat_template_error_.message()));
    }
    if (request.messages->empty()) return absl::InvalidArgumentError("messages must not be empty");
    absl::StatusOr<std::string> text;
    {
      std::lock_guard<std::mutex> lock(chat_mu_);
      text = chat_template_->Apply(*request.messages, /*add_generation_prompt=*/true);
    }
    if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("chat template: ", text.status().message()));
    KILN_ASSIGN_OR_RETURN(ids, tokenizer_->EncodeChatPrompt(*text));
  } else {
    ids = *request.prompt_tokens;
    for (int32_t id : ids) {
      if (id < 0 || id >= config_.vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrCat("prompt token ", id, " is outside the vocabulary [0, ", config_.vocab_size, ")"));
      }
    }
  }
  if (ids.empty()) return absl::InvalidArgumentError("the prompt has no tokens");
  if (static_cast<int64_t>(ids.size()) >= context_length_) {
    return absl::OutOfRangeError(absl::StrCat("the prompt has ", ids.size(), " tokens; the context holds ",
                                              context_length_, " (room is needed for at least one more)"));
  }
  const int64_t room = context_length_ - static_cast<int64_t>(ids.size());
  if (request.max_tokens_must_fit && request.max_tokens > room) {
    return absl::OutOfRangeError(absl::StrCat("the context holds ", context_length_, " tokens; the prompt has ", ids.size(),
                                              " and max_tokens asks for ", request.max_tokens,
                                              " more: max_tokens may be at most ", room, " for this prompt"));
  }
  return ids;
}

absl::StatusOr<int64_t> Engine::Impl::Submit(GenerationRequest request, TokenCallback callback) {
  if (!callback) return absl::InvalidArgumentError("a request needs a callback");
  if (request.n < 1 || request.n > max_running_) {
    return absl::InvalidArgumentError(absl::StrCat("n must be in [1, ", max_running_, "], got ", request.n));
  }
  if (request.top_logprobs < 0 || request.top_logprobs > kMaxTopLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_logprobs must be in [0, ", kMaxTopLogprobs, "], got ", request.top_logprobs));
  }
  if (request.max_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_tokens must be at least 1, got ", request.max_tokens));
  }
  for (const std::string& stop : request.stop) {
    if (stop.empty()) return absl::InvalidArgumentError("stop strings must not be empty");
  }
  KILN_RETURN_IF_ERROR(request.sampling.Validate(config_.vocab_size));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, PromptTokens(request));

  auto state = std::make_unique<RequestState>();
  state->prompt = std::move(prompt);
  state->callback = std::move(callback);
  state->submit_time = EngineClock::now();
  // Each choice samples with its own generator: seed + choice index, so n > 1 choices differ
  // and a seeded request repeats exactly.
  const uint64_t seed = request.sampling.seed.has_value()
                            ? *request.sampling.seed
                            : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  for (int i = 0; i < request.n; ++i) {
    SamplingParams params = request.sampling;
    params.seed = seed + static_cast<uint64_t>(i);
    state->choices.emplace_back(i, std::move(params), tokenizer_, request.stop);
    state->choices.back().history = state->prompt;
  }
  state->params = std::move(request);
  state->params.prompt.reset();
  state->params.messages.reset();
  state->params.prompt_tokens.reset();

  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return absl::UnavailableError("the engine is not accepting requests (draining or shutting down)");
    const int64_t queued = static_cast<int64_t>(incoming_.size()) + waiting_count_;
    if (queued >= options_.max_queued) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the queue is full: ", queued, " requests are waiting (max_queued ", options_.max_queued, ")"));
    }
    id = next_request_id_++;
    state->id = id;
    ++in_flight_;
    ++stats_.queued;
    stats_.prompt_tokens_total += static_cast<int64_t>(state->prompt.size());
    incoming_.push_back(std::move(state));
  }
  wake_.notify_one();
  return id;
}

void Engine::Impl::Abort(int64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborts_.push_back(request_id);
  }
  wake_.notify_one();
}

void Engine::Impl::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  idle_.wait(lock, [&] { return in_flight_ == 0; });
}

EngineStats Engine::Impl::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// ---------------------------------------------------------------------------------------
// The loop.

void Engine::Impl::Loop() {
  while (true) {
    std::vector<int64_t> aborts;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto has_work = [&] {
        return stopping_ || !incoming_.empty() || !aborts_.empty() || !waiting_.empty() || !running_.empty();
      };
      // Once idle for a moment (the HTTP threads have written their last replies by then),
      // give the heap memory of the burst back: glibc keeps it in per-thread arenas otherwise,
      // and a server's resident memory would stay at its busiest level.
      if (worked_since_trim_ && !wake_.wait_for(lock, std::chrono::milliseconds(250), has_work)) {
        lock.unlock();
        support::ReleaseFreeHeapMemory();
        worked_since_trim_ = false;
        lock.lock();
      }
      wake_.wait(lock, has_work);
      worked_since_trim_ = true;
      for (auto& request : incoming_) waiting_.push_back(std::move(request));
      incoming_.clear();
      waiting_count_ = static_cast<int64_t>(waiting_.size());
      aborts.swap(aborts_);
      stop = stopping_;
    }
    if (stop) {
      for (auto& request : running_) EndRequest(*request, FinishReason::kAbort, absl::OkStatus());
      for (auto& request : waiting_) EndRequest(*request, FinishReason::kAbort, absl::OkStatus());
      running_.clear();
      waiting_.clear();
      PublishGauges();
      return;
    }
    for (int64_t id : aborts) {
      auto matches = [id](const std::unique_ptr<RequestState>& r) { return r->id == id; };
      if (auto it = std::find_if(waiting_.begin(), waiting_.end(), matches); it != waiting_.end()) {
        EndRequest(**it, FinishReason::kAbort, absl::OkStatus());
        waiting_.erase(it);
      } else if (auto jt = std::find_if(running_.begin(), running_.end(), matches); jt != running_.end()) {
        EndRequest(**jt, FinishReason::kAbort, absl::OkStatus());
        running_.erase(jt);
      }
    }
    Step();
    PublishGauges();
  }
}

void Engine::Impl::Step() {
  Admit();
  if (!CombinedStep()) {
    DecodeStep();
    SweepFinished();
    PrefillStep();
  }
  SweepFinished();
}

// One model call for the whole step: each decoding sequence's next token and the prompt
// chunks that fit the step's budget, so the weights are read once per step however many
// prompts arrive. Returns false, having changed nothing, when that call cannot be made
// (pages ran short, an executable without prefill_batch, a fault of the model): the step
// then runs decode and prefill apart, whose paths preempt or fail the request at fault.
bool Engine::Impl::CombinedStep() {
  if (!runner_->has_prefill_batch()) return false;
  struct Row {
    RequestState* request;
    int choice;        // a decode row's choice
    PrefillJob* job;   // a prefill row's job (nullptr for decode rows)
    int64_t count;
  };
  std::vector<Row> rows;
  std::vector<int64_t> ids;
  std::vector<std::span<const int32_t>> chunks;
  for (auto& request : running_) {
    if (request->phase != RequestPhase::kDecode) continue;
    for (ChoiceState& choice : request->choices) {
      if (choice.finished) continue;
      rows.push_back({request.get(), choice.index, nullptr, 1});
      ids.push_back(choice.sequence);
      chunks.push_back(std::span<const int32_t>(choice.history).last(1));
    }
  }
  const int64_t decode_tokens = static_cast<int64_t>(rows.size());
  int64_t budget = decode_tokens == 0 ? options_.step_prefill_tokens
                                      : step_cost_.TokensToAdd(decode_tokens, options_.prefill_time_ratio,
                                                               std::min<int64_t>(2, options_.step_prefill_tokens),
                                                               options_.step_prefill_tokens);
  budget = std::min(budget, runner_->max_call_tokens() - decode_tokens);
  const int64_t most_prefill = std::min(options_.step_prefill_tokens, runner_->max_call_tokens());
  for (auto& request : running_) {
    if (budget <= 0) break;
    if (request->phase != RequestPhase::kPrefill) continue;
    // A request's jobs (one per choice after a preemption) are prefilled in order.
    for (PrefillJob& job : request->jobs) {
      const int64_t left = static_cast<int64_t>(job.tokens.size()) - job.done;
      if (left <= 0) continue;
      const int64_t chunk = PromptChunk(left, budget, most_prefill);
      if (chunk == 0) break;
      rows.push_back({request.get(), job.choice, &job, chunk});
      ids.push_back(request->choices[static_cast<size_t>(job.choice)].sequence);
      chunks.push_back(std::span<const int32_t>(job.tokens).subspan(static_cast<size_t>(job.done),
                                                                    static_cast<size_t>(chunk)));
      budget -= chunk;
      if (chunk < left || budget <= 0) break;
    }
  }
  if (rows.empty()) return true;
  int64_t tokens = 0;
  for (const Row& row : rows) tokens += row.count;
  const EngineClock::time_point began = EngineClock::now();
  absl::StatusOr<std::vector<std::vector<float>>> out = runner_->PrefillBatch(ids, chunks);
  if (!out.ok()) return false;
  step_cost_.Observe(tokens, Seconds(EngineClock::now() - began));

  std::vector<RequestState*> prefilled;  // requests with a chunk in this step, in order
  std::map<RequestState*, std::vector<float>*> last_logits;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    if (row.job == nullptr) {
      Accept(*row.request, row.choice, (*out)[i]);
      continue;
    }
    row.job->done += row.count;
    if (last_logits.count(row.request) == 0) prefilled.push_back(row.request);
    last_logits[row.request] = &(*out)[i];
  }
  for (RequestState* request : prefilled) {
    if (request->unfinished() == 0) continue;
    const bool complete = std::all_of(request->jobs.begin(), request->jobs.end(), [](const PrefillJob& job) {
      return job.done == static_cast<int64_t>(job.tokens.size());
    });
    if (complete) FinishPrefill(*request, *last_logits[request]);
  }
  return true;
}

int64_t Engine::Impl::RunningSequences() const {
  int64_t count = 0;
  for (const auto& request : running_) count += request->unfinished();
  return count;
}

int64_t Engine::Impl::LiveRequests() const {
  return std::count_if(running_.begin(), running_.end(), [](const auto& r) { return r->unfinished() > 0; });
}

// Pages a request needs to reach decode: its prefill jobs' tokens less what the prefix cache
// already holds, plus one page per sequence for the first decode steps.
int64_t Engine::Impl::PagesToAdmit(const RequestState& request) const {
  const int64_t page_size = runner_->cache().config().page_size;
  auto pages = [&](int64_t tokens) { return (tokens + page_size - 1) / page_size; };
  auto job = [&](std::span<const int32_t> tokens) {
    return pages(static_cast<int64_t>(tokens.size())) - prefix_cache_->Lookup(tokens) / page_size;
  };
  if (!request.started) return job(request.prompt) + request.params.n;
  int64_t total = 0;
  for (const ChoiceState& choice : request.choices) {
    if (!choice.finished) total += job(std::span<const int32_t>(choice.history).first(choice.history.size() - 1)) + 1;
  }
  return total;
}

void Engine::Impl::Admit() {
  builtins::PagedKvCache& cache = runner_->cache();
  int64_t sequences = RunningSequences();
  while (!waiting_.empty()) {
    RequestState& request = *waiting_.front();
    const int64_t wanted = request.unfinished();
    if (!running_.empty() && sequences + wanted > max_running_) break;
    // Admission by free pages, keeping one page of headroom per running sequence so that
    // admitting does not immediately force a preemption. Cached prefixes give way first.
    const int64_t needed = PagesToAdmit(request) + sequences;
    while (cache.FreePages() < needed && prefix_cache_->EvictOne()) {
    }
    if (!running_.empty() && cache.FreePages() < needed) break;
    std::unique_ptr<RequestState> admitted = std::move(waiting_.front());
    waiting_.pop_front();
    sequences += wanted;
    running_.push_back(std::move(admitted));
    StartPrefill(*running_.back());
  }
}

void Engine::Impl::StartPrefill(RequestState& request) {
  request.phase = RequestPhase::kPrefill;
  request.jobs.clear();
  if (!request.started) {
    request.jobs.push_back(PrefillJob{0, request.prompt, 0});
  } else {
    for (const ChoiceState& choice : request.choices) {
      if (choice.finished) continue;
      request.jobs.push_back(PrefillJob{choice.index, {choice.history.begin(), choice.history.end() - 1}, 0});
    }
  }
  for (PrefillJob& job : request.jobs) {
    ChoiceState& choice = request.choices[static_cast<size_t>(job.choice)];
    const int64_t sequence = next_sequence_id_++;
    absl::StatusOr<int64_t> reused = prefix_cache_->Reuse(job.tokens, sequence);
    absl::Status status = reused.status();
    if (reused.ok() && *reused == 0) status = runner_->AddSequence(sequence);
    if (!status.ok()) {
      FailRequest(request, status);
      return;
    }
    choice.sequence = sequence;
    job.done = reused.ok() ? *reused : 0;
    if (job.done > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.prefix_cache_hit_tokens += job.done;
    }
  }
}

void Engine::Impl::PrefillStep() {
  int64_t budget = options_.step_prefill_tokens;
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    RequestState& request = *running_[i];
    if (request.phase != RequestPhase::kPrefill) continue;
    std::vector<float> logits;
    bool blocked = false;
    for (PrefillJob& job : request.jobs) {
      const int64_t size = static_cast<int64_t>(job.tokens.size());
      while (job.done < size && budget > 0) {
        const int64_t chunk =
            PromptChunk(size - job.done, std::min(budget, runner_->max_call_tokens()),
                        std::min(options_.step_prefill_tokens, runner_->max_call_tokens()));
        if (chunk == 0) break;
        const int64_t sequence = request.choices[static_cast<size_t>(job.choice)].sequence;
        absl::StatusOr<std::vector<float>> out =
            runner_->Prefill(sequence, std::span<const int32_t>(job.tokens).subspan(static_cast<size_t>(job.done),
                                                                                     static_cast<size_t>(chunk)));
        if (!out.ok()) {
          if (absl::IsResourceExhausted(out.status())) {
            if (FreeSomePages(&request)) continue;
            // Nothing else to take pages from: alone, this request cannot fit the cache;
            // behind older requests, it waits for them to finish (and newer prompts wait
            // behind it: no prefill this step takes the pages it is waiting for).
            if (LiveRequests() == 1) {
              FailRequest(request, absl::ResourceExhaustedError(absl::StrCat(
                                       "the KV cache (", runner_->cache().config().num_pages,
                                       " pages) cannot hold this request: ", out.status().message())));
            } else {
              budget = 0;
            }
          } else {
            FailRequest(request, out.status());
          }
          blocked = true;
          break;
        }
        job.done += chunk;
        budget -= chunk;
        logits = *std::move(out);
      }
      if (blocked || job.done < size) break;
    }
    if (blocked || request.unfinished() == 0) continue;
    const bool complete = std::all_of(request.jobs.begin(), request.jobs.end(), [](const PrefillJob& job) {
      return job.done == static_cast<int64_t>(job.tokens.size());
    });
    if (complete) FinishPrefill(request, logits);
  }
}

void Engine::Impl::FinishPrefill(RequestState& request, std::vector<float>& logits) {
  request.phase = RequestPhase::kDecode;
  request.jobs.clear();
  if (request.started) return;  // recomputed after a preemption: each choice has its next input
  request.started = true;
  ChoiceState& first = request.choices[0];
  if (absl::Status s = prefix_cache_->Insert(request.prompt, first.sequence); !s.ok()) {
    FailRequest(request, s);
    return;
  }
  // n > 1: the other choices share the prompt's pages (copy-on-write for the last one).
  for (size_t i = 1; i < request.choices.size(); ++i) {
    const int64_t sequence = next_sequence_id_++;
    if (absl::Status s = runner_->cache().ForkSequence(first.sequence, sequence); !s.ok()) {
      FailRequest(request, s);
      return;
    }
    request.choices[i].sequence = sequence;
  }
  for (size_t i = 0; i < request.choices.size(); ++i) Accept(request, static_cast<int>(i), logits);
}

void Engine::Impl::DecodeStep() {
  while (true) {
    std::vector<RequestState*> owners;
    std::vector<int> choices;
    std::vector<int64_t> ids;
    std::vector<int32_t> tokens;
    for (auto& request : running_) {
      if (request->phase != RequestPhase::kDecode) continue;
      for (ChoiceState& choice : request->choices) {
        if (choice.finished) continue;
        owners.push_back(request.get());
        choices.push_back(choice.index);
        ids.push_back(choice.sequence);
        tokens.push_back(choice.history.back());
      }
    }
    if (ids.empty()) return;
    absl::StatusOr<std::vector<std::vector<float>>> out = runner_->Decode(ids, tokens);
    if (!out.ok()) {
      if (absl::IsResourceExhausted(out.status())) {
        if (FreeSomePages(nullptr)) continue;
        // One request alone needs more pages than the cache has (n > 1 choices that grew).
        FailRequest(*owners.back(), absl::ResourceExhaustedError(absl::StrCat(
                                        "the KV cache (", runner_->cache().config().num_pages,
                                        " pages) cannot hold this request: ", out.status().message())));
        continue;
      }
      // A fault of the model itself: every request in the step ends with it.
      for (RequestState* owner : owners) {
        if (owner->unfinished() > 0) FailRequest(*owner, out.status());
      }
      return;
    }
    for (size_t i = 0; i < ids.size(); ++i) Accept(*owners[i], choices[i], (*out)[i]);
    return;
  }
}

// ---------------------------------------------------------------------------------------
// Tokens, events and the end of requests.

void Engine::Impl::Accept(RequestState& request, int index, std::span<const float> logits) {
  ChoiceState& choice = request.choices[static_cast<size_t>(index)];
  // Log-probabilities come from the raw logits (the model's distribution, before penalties,
  // truncation or temperature), as OpenAI reports them. Logits more than kNegligibleLogit
  // below the largest add less than vocab * e^-40 (about 1e-13 for 100k tokens) to the
  // normalizer, far below float precision, and are skipped: this runs for every token of
  // every sequence.
  constexpr float kNegligibleLogit = 40.0f;
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) {
    if (v > max - kNegligibleLogit) sum += std::exp(static_cast<double>(v - max));
  }
  const double log_normalizer = max + std::log(sum);
  TokenEvent event;
  event.request_id = request.id;
  event.choice = index;
  if (request.params.top_logprobs > 0) {
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min(order.size(), static_cast<size_t>(request.params.top_logprobs));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (size_t i = 0; i < k; ++i) {
      const int32_t id = order[i];
      std::string text = tokenizer_->IsValid(id) ? ReplaceInvalidUtf8(tokenizer_->TokenBytes(id)) : std::string();
      event.top_logprobs.push_back({id, std::move(text), static_cast<float>(logits[id] - log_normalizer)});
    }
  }
  scratch_.assign(logits.begin(), logits.end());
  const int32_t token = choice.sampler.Sample(scratch_, choice.history);
  event.token = token;
  event.logprob = static_cast<float>(logits[static_cast<size_t>(token)] - log_normalizer);
  choice.history.push_back(token);
  ++choice.generated;

  const EngineClock::time_point now = EngineClock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.generated_tokens_total;
    if (!request.first_token_sent) {
      Observe(stats_.time_to_first_token, Seconds(now - request.submit_time));
    } else if (choice.generated > 1) {
      Observe(stats_.inter_token_latency, Seconds(now - choice.last_token_time));
    }
  }
  request.first_token_sent = true;
  choice.last_token_time = now;

  // End-of-generation tokens end the choice without text; otherwise the token's complete
  // characters go through the stop strings.
  FinishReason reason = FinishReason::kNone;
  if (!request.params.ignore_eos && tokenizer_->IsEndOfGeneration(token)) {
    event.text = choice.stops.Push(choice.decoder.Finish());
    if (!choice.stops.stopped()) event.text += choice.stops.Finish();
    reason = FinishReason::kStop;
  } else {
    absl::StatusOr<std::string> piece = choice.decoder.Push(token);
    // The model's vocabulary may be larger than the tokenizer's (padding rows): such ids
    // decode to nothing.
    event.text = choice.stops.Push(piece.ok() ? *piece : std::string());
    if (choice.stops.stopped()) {
      reason = FinishReason::kStop;
    } else if (choice.generated >= request.params.max_tokens ||
               static_cast<int64_t>(choice.history.size()) >= context_length_) {
      event.text += choice.stops.Push(choice.decoder.Finish());
      if (!choice.stops.stopped()) event.text += choice.stops.Finish();
      reason = choice.stops.stopped() ? FinishReason::kStop : FinishReason::kLength;
    }
  }
  if (reason == FinishReason::kNone) {
    request.callback(event);
    return;
  }
  FinishChoice(request, choice, event, reason);
}

void Engine::Impl::FinishChoice(RequestState& request, ChoiceState& choice, TokenEvent& event, FinishReason reason) {
  choice.finished = true;
  if (choice.sequence >= 0) {
    (void)runner_->RemoveSequence(choice.sequence);
    choice.sequence = -1;
  }
  event.finished = true;
  event.finish_reason = reason;
  event.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  event.completion_tokens = choice.generated;
  request.callback(event);
  if (request.unfinished() == 0) RequestDone(request);
}

void Engine::Impl::FailRequest(RequestState& request, const absl::Status& error) {
  EndRequest(request, FinishReason::kError, error);
}

// Ends every unfinished choice with a final event that carries no token.
void Engine::Impl::EndRequest(RequestState& request, FinishReason reason, const absl::Status& error) {
  ReleaseSequences(request);
  request.jobs.clear();
  for (ChoiceState& choice : request.choices) {
    if (choice.finished) continue;
    TokenEvent event;
    event.request_id = request.id;
    event.choice = choice.index;
    if (reason == FinishReason::kError) event.error = error;
    FinishChoice(request, choice, event, reason);
  }
}

void Engine::Impl::ReleaseSequences(RequestState& request) {
  for (ChoiceState& choice : request.choices) {
    if (choice.sequence >= 0) {
      (void)runner_->RemoveSequence(choice.sequence);
      choice.sequence = -1;
    }
  }
}

void Engine::Impl::RequestDone(RequestState& request) {
  const double seconds = Seconds(EngineClock::now() - request.submit_time);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Observe(stats_.end_to_end_latency, seconds);
    ++stats_.requests_finished;
  }
  // Drain's waiters are released by PublishGauges, once the statistics they may read next
  // (pages, running sequences) no longer count this request.
  ++ended_unpublished_;
}

bool Engine::Impl::FreeSomePages(const RequestState* keep) {
  if (prefix_cache_->EvictOne()) return true;
  // Preempting the only running request would only restart it into the same shortage.
  if (LiveRequests() < 2) return false;
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (it->get() == keep) return false;  // only older requests than `keep` are left
    if ((*it)->unfinished() == 0) continue;
    Preempt(**it);
    return true;
  }
  return false;
}

// Preemption by recompute: the victim's pages are freed now and its prompt and generated
// tokens are prefilled again when it is readmitted (first in line). Its streams see nothing
// but a pause.
void Engine::Impl::Preempt(RequestState& victim) {
  ReleaseSequences(victim);
  victim.jobs.clear();
  victim.phase = RequestPhase::kWaiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.preemptions;
  }
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &victim; });
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

void Engine::Impl::SweepFinished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& r) { return r->unfinished() == 0; }),
                 running_.end());
}

void Engine::Impl::PublishGauges() {
  const int64_t running = RunningSequences();
  const builtins::PagedKvCache& cache = runner_->cache();
  std::lock_guard<std::mutex> lock(mu_);
  waiting_count_ = static_cast<int64_t>(waiting_.size());
  stats_.queued = waiting_count_ + static_cast<int64_t>(incoming_.size());
  stats_.running = running;
  stats_.kv_pages_used = cache.UsedPages();
  stats_.kv_pages_free = cache.FreePages();
  if (ended_unpublished_ > 0) {
    in_flight_ -= ended_unpublished_;
    ended_unpublished_ = 0;
    idle_.notify_all();
  }
}

// ---------------------------------------------------------------------------------------
// Engine.

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

absl::StatusOr<std::unique_ptr<Engine>> Engine::Load(const EngineOptions& options) {
  auto impl = std::make_unique<Impl>();
  KILN_RETURN_IF_ERROR(impl->Init(options));
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

absl::StatusOr<int64_t> Engine::Submit(GenerationRequest request, TokenCallback callback) {
  return impl_->Submit(std::move(request), std::move(callback));
}
void Engine::Abort(int64_t request_id) { impl_->Abort(request_id); }
void Engine::Drain() { impl_->Drain(); }
EngineStats Engine::Stats() const { return impl_->Stats(); }
const std::string& Engine::model_name() const { return impl_->model_name_; }
const formats::LlamaConfig& Engine::config() const { return impl_->config_; }
const Tokenizer& Engine::tokenizer() const { return *impl_->tokenizer_; }
const std::string& Engine::chat_template_fallback() const { return impl_->chat_template_fallback_; }
int64_t Engine::context_length() const { return impl_->context_length_; }

}  // namespace kiln::serving
