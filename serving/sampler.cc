#include "serving/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace kiln::serving {

namespace {

constexpr float kDropBelowMax = 50.0f;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

SamplingParams SamplingParams::Greedy() {
  SamplingParams p;
  p.temperature = 0;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0;
  return p;
}

absl::Status SamplingParams::Validate(int64_t vocab_size) const {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  if (!(temperature >= 0) || !std::isfinite(temperature)) {
    return bad(absl::StrCat("temperature must be a finite number >= 0, got ", temperature));
  }
  if (top_k < 0) return bad(absl::StrCat("top_k must be >= 0 (0: off), got ", top_k));
  if (!(top_p > 0 && top_p <= 1)) return bad(absl::StrCat("top_p must be in (0, 1], got ", top_p));
  if (!(min_p >= 0 && min_p <= 1)) return bad(absl::StrCat("min_p must be in [0, 1], got ", min_p));
  if (!(repeat_penalty > 0) || !std::isfinite(repeat_penalty)) {
    return bad(absl::StrCat("repeat_penalty must be > 0 (1: off), got ", repeat_penalty));
  }
  if (repeat_last_n < -1) return bad(absl::StrCat("repeat_last_n must be >= -1 (-1: all tokens), got ", repeat_last_n));
  if (!std::isfinite(presence_penalty) || !(std::fabs(presence_penalty) <= 2)) {
    return bad(absl::StrCat("presence_penalty must be in [-2, 2], got ", presence_penalty));
  }
  if (!std::isfinite(frequency_penalty) || !(std::fabs(frequency_penalty) <= 2)) {
    return bad(absl::StrCat("frequency_penalty must be in [-2, 2], got ", frequency_penalty));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= vocab_size) return bad(absl::StrCat("logit_bias names token ", id, ", outside [0, ", vocab_size, ")"));
    if (std::isnan(bias)) return bad(absl::StrCat("logit_bias of token ", id, " is NaN"));
  }
  return absl::OkStatus();
}

SamplingRandom::SamplingRandom(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& s : s_) s = SplitMix64(state);
}

uint64_t SamplingRandom::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double SamplingRandom::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

Sampler::Sampler(SamplingParams params)
    : params_(std::move(params)),
      seed_(params_.seed.value_or(static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()))),
      random_(seed_) {}

int32_t Sampler::Sample(std::span<float> logits, std::span<const int32_t> history) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && id < vocab) logits[static_cast<size_t>(id)] += bias;
  }
  const bool penalize = params_.repeat_penalty != 1.0 || params_.presence_penalty != 0 || params_.frequency_penalty != 0;
  if (penalize && !history.empty()) {
    const size_t window = params_.repeat_last_n < 0 ? history.size()
                                                    : std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
    std::unordered_map<int32_t, int> counts;
    for (int32_t id : history.subspan(history.size() - window)) {
      if (id >= 0 && id < vocab) ++counts[id];
    }
    for (const auto& [id, count] : counts) {
      float& l = logits[static_cast<size_t>(id)];
      l = l > 0 ? static_cast<float>(l / params_.repeat_penalty) : static_cast<float>(l * params_.repeat_penalty);
      l -= static_cast<float>(params_.presence_penalty + params_.frequency_penalty * count);
    }
  }
  // The largest logit; the lowest id among equal ones. NaN logits never win.
  int32_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(best)] || std::isnan(logits[static_cast<size_t>(best)])) {
      best = static_cast<int32_t>(i);
    }
  }
  if (params_.temperature == 0 || vocab <= 1) return best;

  const float max = logits[static_cast<size_t>(best)];
  candidates_.clear();
  for (int64_t i = 0; i < vocab; ++i) {
    const float l = logits[static_cast<size_t>(i)];
    if (l >= max - kDropBelowMax) candidates_.push_back({l, static_cast<int32_t>(i)});
  }
  // Most likely first; equal logits by id, so the order (and the draw) is deterministic.
  auto more_likely = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep), candidates_.end(),
                      more_likely);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), more_likely);
  }
  candidates_.resize(keep);
  // Probabilities before the temperature, for top-p and min-p.
  std::vector<double> probs(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += probs[i] = std::exp(static_cast<double>(candidates_[i].first - max));
  if (params_.top_p < 1.0) {
    double cumulative = 0;
    size_t n = 0;
    while (n < keep) {
      cumulative += probs[n] / sum;
      ++n;
      if (cumulative >= params_.top_p) break;
    }
    keep = std::max<size_t>(n, 1);
  }
  if (params_.min_p > 0) {
    size_t n = 1;  // the most likely always stays
    while (n < keep && probs[n] >= params_.min_p * probs[0]) ++n;
    keep = n;
  }
  // The temperature, then a draw.
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp(static_cast<double>(candidates_[i].first - max) / params_.temperature);
    total += probs[i];
  }
  const double target = random_.Uniform() * total;
  double cumulative = 0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += probs[i];
    if (target < cumulative) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

}  // namespace kiln::serving
