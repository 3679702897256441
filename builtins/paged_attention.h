// The builtins a compiled language model calls on its paged KV cache
// (builtins/paged_kv_cache.h), for the step the caller opened with BeginForward:
//
//   kiln.kv_cache.positions  (object:paged_kv_cache) -> tensor
//       the step's token positions, int64 (n,): each token's position in its sequence
//       (what rotary embeddings rotate by).
//   kiln.kv_cache.attention  (object:paged_kv_cache, int, tensor, tensor, tensor, double) -> tensor
//       (cache, layer, q (n, q_heads, d), k (n, kv_heads, d), v (n, kv_heads, d), scale), all
//       float32: stores the step's k and v at their tokens' positions in `layer`, then
//       returns (n, q_heads, d) float32: for each token, softmax(scale * q . K^T) V over its
//       own sequence's positions 0 to its position (causal), q head h reading kv head
//       h / (q_heads / kv_heads) (grouped-query attention). With a float32 cache: float32
//       scores, softmax and weighted sum. With a float16 cache (the default): llama.cpp's CPU
//       arithmetic (without flash attention, as its AVX-512 build computes it), so Kiln's
//       tokens are llama.cpp's: q rounded to float16, each score the float16 dot product of
//       ggml_vec_dot_f16 (64 products in lanes of 16 and 4 accumulators, combined pairwise),
//       softmax with ggml's exp polynomial summed per 16 positions into float64, the
//       probabilities rounded to float16, and each output element their float16 dot product
//       with that element's values over the positions, in the same lane order
//       (builtins/ggml_attention_math.inc). A sequence with two or more tokens in the step
//       (a prompt) gets both products in llamafile tinyBLAS's order instead, as llama.cpp
//       computes a batch: 16 lanes, each a fused chain, then the same 16-lane sum (docs/llm.md,
//       Numerics). Every CPU gives the same bits (AVX2 or portable).
//
// Parallel over (token, kv head) on the VM's thread pool; the q heads sharing a kv head are
// computed together so each key and value is read once per token. Wrong shapes, a layer out
// of range or a call outside a step are errors naming the builtin.
#pragma once

#include <cstdint>
#include <vector>

#include "vm/builtin_registry.h"

namespace kiln::builtins {

void RegisterKvCacheBuiltins(vm::BuiltinRegistry& registry);

// Tests: run the float16 attention's portable code even where AVX2 is available.
void ForcePortableAttentionForTesting(bool portable);

// Tests: split every (token, kv head) of a float16-cache attention into `parts` position and
// element ranges (1: never split; 0: the builtin's own choice, splitting only long decode
// steps on several threads).
void SetAttentionPartsForTesting(int parts);

// Tests: the float16 attention's scores before the softmax (scale * q . key, q rounded to
// float16) as the builtin computes them for one token and kv head: q is rows x d, keys is
// positions x d float16 bits; `prompt` picks a prompt's (tinyBLAS) order. Returns rows x
// positions. (The end-to-end output rounds the probabilities to float16, which can hide a
// score's last bits.)
std::vector<float> AttentionScoresForTesting(const std::vector<float>& q, int64_t rows, const std::vector<uint16_t>& keys,
                                             int64_t d, float scale, bool prompt);

}  // namespace kiln::builtins
