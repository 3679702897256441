// A naive forward pass of a Llama-family GGUF model, the independent reference for Kiln's
// compiled model. It shares no code with Kiln's compiler, operators or kernels: it uses the
// GGUF reader only to find bytes and metadata, decodes the weight blocks itself (from the
// GGML block definitions), and computes in the most obvious way — float64 dot products and
// norms, float32 storage — one token at a time with a plain per-layer K/V list.
// With `quantize_activations` (the default, what Kiln's library kernels and llama.cpp do) the
// input of every matmul with quantized weights is first rounded to float32 and quantized
// per 32-block to int8 with a float16 scale d = max|x| / 127 (Q4_1, Q5_1: also the float16
// s = d * sum(q)), for the K-quants per 256-block with a float32 d = max / -127 (max: the
// value of largest magnitude); the products are then summed in float64.
//
//   NaiveLlama model = *NaiveLlama::Load(gguf);
//   std::vector<float> logits = model.Forward(token, position);   // appends to its cache
//   std::vector<int32_t> out = model.Greedy(prompt, 32);           // fresh cache
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf_file.h"

namespace kiln::test {

class NaiveLlama {
 public:
  static absl::StatusOr<NaiveLlama> Load(const formats::GgufFile& file, bool quantize_activations = true);

  // The logits after `token` at position `position` (== the number of tokens before it).
  std::vector<float> Forward(int32_t token, int64_t position);
  void Reset();
  // Feeds `prompt`, then appends the argmax (lowest id among equal logits) `n` times.
  std::vector<int32_t> Greedy(const std::vector<int32_t>& prompt, int n);
  // The logits after the last token of `tokens` (a fresh cache).
  std::vector<float> LastLogits(const std::vector<int32_t>& tokens);

  int64_t vocab_size() const { return vocab_; }

 private:
  struct Matrix {  // rows x cols, row-major, float32
    int64_t rows = 0, cols = 0;
    std::vector<float> data;
    int type = 0;               // the GGUF tensor type
    std::vector<uint8_t> raw;   // its blocks, for the quantized-activation product
  };
  struct Layer {
    std::vector<float> attn_norm, ffn_norm, q_bias, k_bias, v_bias;
    Matrix q, k, v, o, gate, up, down;
    std::vector<std::vector<float>> keys, values;  // per position: kv_heads * head_dim
  };

  std::vector<double> MatVec(const Matrix& m, const std::vector<double>& x) const;
  void RmsNorm(std::vector<double>& x, const std::vector<float>& weight) const;
  void Rope(std::vector<double>& v, int64_t heads, int64_t position) const;

  int64_t layers_ = 0, hidden_ = 0, ffn_ = 0, heads_ = 0, kv_heads_ = 0, head_dim_ = 0, vocab_ = 0, rope_dims_ = 0;
  double eps_ = 0, theta_ = 0;
  bool neox_ = false;
  bool quantize_activations_ = true;
  Matrix embed_, output_;
  std::vector<float> output_norm_;
  std::vector<Layer> blocks_;
};

}  // namespace kiln::test
