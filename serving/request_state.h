// The engine's record of one request while it is in flight (loop thread only): its prompt,
// its choices (n > 1 completions, one KV-cache sequence each) with their samplers, text
// decoders and stop-string matchers, and where the request stands in the schedule.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "serving/engine.h"
#include "serving/sampler.h"
#include "serving/stop_strings.h"
#include "serving/stream_decoder.h"

namespace kiln::serving {

using EngineClock = std::chrono::steady_clock;

struct ChoiceState {
  ChoiceState(int index, SamplingParams params, std::shared_ptr<const Tokenizer> tokenizer,
              std::vector<std::string> stop)
      : index(index), sampler(std::move(params)), decoder(std::move(tokenizer)), stops(std::move(stop)) {}

  int index;
  int64_t sequence = -1;          // KV-cache sequence id; -1 when it holds no pages
  std::vector<int32_t> history;   // prompt + generated tokens (what the sampler's penalties see)
  int64_t generated = 0;
  Sampler sampler;
  StreamDecoder decoder;
  StopStrings stops;
  bool finished = false;
  EngineClock::time_point last_token_time;
};

// Tokens a sequence must hold before it can decode: the prompt the first time, and after a
// preemption the prompt plus every generated token but the last (the last one is the next
// decode step's input).
struct PrefillJob {
  int choice = 0;
  std::vector<int32_t> tokens;
  int64_t done = 0;  // tokens already in the sequence (prefix cache hits included)
};

enum class RequestPhase {
  kWaiting,  // not admitted (or preempted): holds no pages
  kPrefill,  // admitted, prompt chunks being computed
  kDecode,   // every unfinished choice has its next input token
};

struct RequestState {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  GenerationRequest params;  // sampling, max_tokens, stop, ignore_eos, top_logprobs, n
  TokenCallback callback;
  std::vector<ChoiceState> choices;
  RequestPhase phase = RequestPhase::kWaiting;
  std::vector<PrefillJob> jobs;  // while in kPrefill
  bool started = false;          // the first tokens were sampled (choices forked)
  bool first_token_sent = false;
  EngineClock::time_point submit_time;

  int64_t unfinished() const {
    int64_t count = 0;
    for (const ChoiceState& c : choices) count += !c.finished;
    return count;
  }
};

}  // namespace kiln::serving
