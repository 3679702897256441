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
//       h / (q_heads / kv_heads) (grouped-query attention). Scores, softmax and the weighted
//       sum are float32 (float16 keys and values are widened exactly).
//
// Parallel over (token, kv head) on the VM's thread pool; the q heads sharing a kv head are
// computed together so each key and value is read once per token. Wrong shapes, a layer out
// of range or a call outside a step are errors naming the builtin.
#pragma once

#include "vm/builtin_registry.h"

namespace kiln::builtins {

void RegisterKvCacheBuiltins(vm::BuiltinRegistry& registry);

}  // namespace kiln::builtins
