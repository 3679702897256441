// Small helpers shared by the language-model tests: logit comparisons, argmax, a
// deterministic token sequence, and greedy generation through serving::LlmRunner.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "serving/llm_runner.h"

namespace kiln::llm_test {

inline double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

inline double MaxAbs(const std::vector<float>& a) {
  double m = 0;
  for (float v : a) m = std::max(m, std::fabs(double(v)));
  return m;
}

inline int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// `n` token ids below `vocab`, the same for the same seed.
inline std::vector<int32_t> Tokens(int n, int vocab, int seed) {
  std::vector<int32_t> out;
  uint32_t s = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    out.push_back(static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab)));
  }
  return out;
}

// Adds sequence `id`, prefills `prompt` and takes `steps` greedy tokens (steps - 1 decode
// calls); returns the tokens and, in `logits`, the logits each was chosen from. Failures are
// test failures (the tokens so far are returned).
inline std::vector<int32_t> Greedy(serving::LlmRunner& runner, int64_t id, const std::vector<int32_t>& prompt, int steps,
                                   std::vector<std::vector<float>>* logits) {
  std::vector<int32_t> out;
  absl::Status added = runner.AddSequence(id);
  EXPECT_TRUE(added.ok()) << added;
  if (!added.ok()) return out;
  absl::StatusOr<std::vector<float>> step = runner.Prefill(id, prompt);
  EXPECT_TRUE(step.ok()) << step.status();
  if (!step.ok()) return out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(Argmax(*step));
    logits->push_back(*step);
    if (i + 1 == steps) break;
    const int64_t ids[] = {id};
    const int32_t tokens[] = {out.back()};
    absl::StatusOr<std::vector<std::vector<float>>> next = runner.Decode(ids, tokens);
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok()) return out;
    *step = std::move((*next)[0]);
  }
  return out;
}

}  // namespace kiln::llm_test
