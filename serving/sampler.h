// Sampling: from a step's logits to the next token, with the parameters users of llama.cpp
// and the OpenAI API expect.
//
// The transforms apply in llama.cpp's default order (so `kiln generate` and llama-cli agree
// on what a flag means): logit bias; penalties (repetition, llama.cpp style over the last
// `repeat_last_n` tokens: a positive logit is divided by the penalty, a negative one
// multiplied; then OpenAI's presence (once per seen token) and frequency (per occurrence)
// penalties over the same window); then, unless the temperature is 0 (greedy: the largest
// logit, the lowest id among equals), top-k, top-p (the smallest set of most likely tokens
// whose probabilities reach p), min-p (tokens at least min_p times as likely as the most
// likely), the temperature, and a draw from what is left. top-p and min-p see probabilities
// before the temperature, as in llama.cpp.
//
// Draws use a specified generator (SplitMix64 seeding xoshiro256**, doubles from the top 53
// bits), so a seed gives the same tokens on every machine and compiler.
//
// Speed: tokens whose logit is more than 50 below the largest (probability below e^-50
// relative to it: less than 1e-17 of the mass for a 100k vocabulary) are dropped before
// sorting, so a 49k vocabulary samples in tens of microseconds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"

namespace kiln::serving {

struct SamplingParams {
  double temperature = 0.8;  // 0: greedy
  int64_t top_k = 40;        // 0: off
  double top_p = 0.95;       // 1: off
  double min_p = 0.05;       // 0: off
  double repeat_penalty = 1.0;  // 1: off
  int64_t repeat_last_n = 64;   // window of the repetition, presence and frequency penalties (-1: all)
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  std::map<int32_t, float> logit_bias;
  std::optional<uint64_t> seed;  // none: drawn from the clock

  // Greedy decoding: no randomness and no truncation.
  static SamplingParams Greedy();
  // Errors name the parameter and its allowed range (top_p = 1.5: "top_p must be in (0, 1]").
  absl::Status Validate(int64_t vocab_size) const;
};

// A deterministic random generator: xoshiro256** seeded by SplitMix64.
class SamplingRandom {
 public:
  explicit SamplingRandom(uint64_t seed);
  uint64_t Next();
  double Uniform();  // [0, 1)

 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  // `params` must have passed Validate.
  explicit Sampler(SamplingParams params);
  const SamplingParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }

  // The next token given the step's logits (changed in place by the transforms) and the
  // tokens so far (prompt and generated; the penalties look at its last repeat_last_n).
  int32_t Sample(std::span<float> logits, std::span<const int32_t> history);

 private:
  SamplingParams params_;
  uint64_t seed_;
  SamplingRandom random_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused across calls
};

}  // namespace kiln::serving
