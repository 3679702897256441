// LlamaConfig: the hyperparameters of a Llama-family model, read from a GGUF file's metadata
// (the `<arch>.*` keys llama.cpp writes), nothing assumed about a particular model.
//
// Architectures: `llama` (Llama 1-3, SmolLM, Mistral-style GQA; rotary embedding on
// adjacent pairs, as the GGUF converter permutes Q and K for) and `qwen2` (biases on the Q,
// K and V projections; rotary embedding on halves, "neox"). Any other architecture is an
// error naming it and the supported ones.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "formats/gguf_file.h"

namespace kiln::formats {

struct LlamaConfig {
  std::string architecture;   // "llama", "qwen2"
  int64_t num_layers = 0;     // <arch>.block_count
  int64_t hidden_size = 0;    // <arch>.embedding_length
  int64_t ffn_size = 0;       // <arch>.feed_forward_length
  int64_t num_heads = 0;      // <arch>.attention.head_count
  int64_t num_kv_heads = 0;   // <arch>.attention.head_count_kv (default: num_heads)
  int64_t head_dim = 0;       // <arch>.attention.key_length (default: hidden / heads)
  int64_t vocab_size = 0;     // rows of token_embd.weight
  int64_t context_length = 0; // <arch>.context_length
  double rms_norm_epsilon = 1e-5;  // <arch>.attention.layer_norm_rms_epsilon
  double rope_theta = 10000.0;     // <arch>.rope.freq_base
  int64_t rope_dims = 0;           // <arch>.rope.dimension_count (default: head_dim)
  std::string rope_mode;           // "normal" (llama) or "neox" (qwen2)
  bool qkv_bias = false;           // blk.0.attn_q.bias present
  bool tied_embeddings = false;    // no output.weight: the output projection is token_embd

  // Reads and checks (positive sizes, heads dividing evenly, tensors present).
  static absl::StatusOr<LlamaConfig> FromGguf(const GgufFile& file);
  // One line for logs: "llama: 30 layers, hidden 576, 9 heads (3 kv) x 64, ffn 1536, vocab 49152".
  std::string Summary() const;
};

}  // namespace kiln::formats
