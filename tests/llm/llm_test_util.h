// Small helpers shared by the language-model tests: logit comparisons, argmax, a
// deterministic token sequence, and greedy generation through serving::LlmRunner.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "serving/llm_runner.h"
#include "tests/formats/tiny_llama_gguf.h"

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

// Tiny random models covering every weight format and both architectures, with a name each:
// the bundled model's formats (q4_1 matmuls, tied q8_0 embeddings), q4_0 with untied
// embeddings and as many kv heads as heads, qwen2 (q/k/v biases, RoPE on halves) in q8_0
// with one kv head, and float32.
inline std::vector<std::pair<std::string, formats::testing::TinyLlamaSpec>> TinyModelsInEveryWeightFormat() {
  formats::testing::TinyLlamaSpec q4_1;
  formats::testing::TinyLlamaSpec q4_0;
  q4_0.matmul_type = 2;
  q4_0.embed_type = 0;
  q4_0.tied = false;
  q4_0.heads = 4;
  q4_0.kv_heads = 4;
  formats::testing::TinyLlamaSpec qwen;
  qwen.architecture = "qwen2";
  qwen.matmul_type = 8;
  qwen.embed_type = 1;
  qwen.kv_heads = 1;
  qwen.layers = 3;
  formats::testing::TinyLlamaSpec f32;
  f32.matmul_type = 0;
  f32.embed_type = 0;
  // Q5_0 weights; Q5_1 weights and embedding rows (dequantize); the K-quants (hidden 256),
  // also as embedding rows and as an untied output projection.
  formats::testing::TinyLlamaSpec q5_0;
  q5_0.matmul_type = 6;
  formats::testing::TinyLlamaSpec q5_1;
  q5_1.matmul_type = 7;
  q5_1.embed_type = 7;
  formats::testing::TinyLlamaSpec q4_k;
  q4_k.hidden = 256;
  q4_k.ffn = 256;
  q4_k.layers = 1;
  q4_k.matmul_type = 12;
  q4_k.embed_type = 12;
  formats::testing::TinyLlamaSpec q5_k = q4_k;
  q5_k.matmul_type = 13;
  q5_k.embed_type = 14;
  formats::testing::TinyLlamaSpec q6_k = q4_k;
  q6_k.matmul_type = 14;
  q6_k.embed_type = 13;
  q6_k.tied = false;
  // Q3_K, IQ4_NL and IQ4_XS weights; IQ4_XS and Q3_K embedding rows (and a Q3_K tied output
  // projection).
  formats::testing::TinyLlamaSpec q3_k = q4_k;
  q3_k.matmul_type = 11;
  q3_k.embed_type = 12;
  formats::testing::TinyLlamaSpec iq4_nl = q4_k;
  iq4_nl.matmul_type = 20;
  iq4_nl.embed_type = 23;
  iq4_nl.tied = false;
  formats::testing::TinyLlamaSpec iq4_xs = q4_k;
  iq4_xs.matmul_type = 23;
  iq4_xs.embed_type = 11;
  // Q2_K weights, embedding rows and tied output projection.
  formats::testing::TinyLlamaSpec q2_k = q4_k;
  q2_k.matmul_type = 10;
  q2_k.embed_type = 10;
  return {{"tiny_q4_1", q4_1},       {"tiny_q4_0_untied_mha", q4_0}, {"tiny_qwen2_q8_0", qwen}, {"tiny_f32", f32},
          {"tiny_q5_0", q5_0},       {"tiny_q5_1", q5_1},            {"tiny_q4_K", q4_k},       {"tiny_q5_K", q5_k},
          {"tiny_q6_K_untied", q6_k}, {"tiny_q3_K", q3_k}, {"tiny_iq4_nl_untied", iq4_nl}, {"tiny_iq4_xs", iq4_xs},
          {"tiny_q2_K", q2_k}};
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
