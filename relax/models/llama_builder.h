// BuildLlamaModule: the Relax module of a Llama-family model (formats/llama_config.h)
// whose weights are the tensors of a GGUF file, declared as external constants by their
// GGUF names (formats/gguf_tensor_view.h gives each one's dtype and shape; quantized ones
// stay uint8 blocks and are used by `quantized_matmul` / `dequantize`, never expanded in
// memory). The executable compiled from it references the file instead of copying it; a
// loader resolves the weights with serving::GgufWeightProvider.
//
// The module has three impure functions, each taking the token ids of one step and a paged
// KV cache (builtins/paged_kv_cache.h) on which the caller has run BeginForward for that
// step (which sequences the tokens belong to, at which positions):
//
//   prefill(tokens: Tensor((n,), int32), cache: Object) -> Tensor((1, vocab), float32)
//       n tokens of ONE sequence (a prompt, or a chunk of one); the logits of the last.
//   decode(tokens: Tensor((b,), int32), cache: Object) -> Tensor((b, vocab), float32)
//       one token for each of b sequences; the logits of every token.
//   prefill_batch(tokens: Tensor((n,), int32), rows: Tensor((s,), int64), cache: Object)
//       -> Tensor((s, vocab), float32)
//       n tokens of several sequences (prompts or chunks, one after the other, as the
//       cache's step lists them); the logits of the listed rows (each sequence's last), so
//       that several prompts are prefilled in one call, reading the weights once.
//
// with n, b, s <= max_tokens. Per layer: RMS norm, Q/K/V projections (+ biases for qwen2),
// rotary embedding at the cache's positions (builtin kiln.kv_cache.positions), attention
// over the cache (builtin kiln.kv_cache.attention: appends K and V, causal, grouped-query),
// output projection and residual; RMS norm, SwiGLU MLP, residual. Then the final norm and
// the output projection (token_embd when the embeddings are tied). The graph-level parts
// between two attention calls are dataflow blocks, so they fuse.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "formats/gguf_file.h"
#include "relax/ir_module.h"
#include "formats/llama_config.h"

namespace kiln::relax::models {

struct LlamaBuildOptions {
  // Upper bound of n and b (0: the model's context length).
  int64_t max_tokens = 0;
  // RMSNorm, RoPE and SwiGLU as llama.cpp's CPU backend computes them (the kiln.ggml.*
  // builtins, builtins/ggml_layer_ops.h: llama.cpp's floats, docs/llm.md "Numerics"), each
  // a VM builtin call between the fused dataflow blocks; false: the rms_norm,
  // rotary_embedding, silu and multiply operators, compiled and fused.
  bool ggml_numerics = true;
  // With ggml_numerics: the same floats from the operators with numerics = "ggml"
  // (relax/op/ggml_numerics.h), compiled and fused into kernels like the rest of the block,
  // rather than the host builtins (GPU targets, whose data stays on the device).
  bool ggml_operators = false;
  // With ggml_operators: llama.cpp's AVX2 build's floats (numerics = "ggml_avx2": its exp in
  // SwiGLU) rather than its AVX-512 build's (builtins/ggml_simd.h; the host builtins choose at
  // run time, compiled operators here).
  bool ggml_avx2_build = false;
  // The quantized matmuls' `activations` attribute (relax/op/quantize.cc): empty leaves it
  // to the pipeline (on the CPU the library kernels follow LibraryOptions::
  // quantize_activations); "q8" or "float32" fixes it, for targets whose kernels are
  // generated from the operator (GPUs).
  std::string quantized_activations;
};

absl::StatusOr<IRModule> BuildLlamaModule(const formats::GgufFile& file, const formats::LlamaConfig& config,
                                          const LlamaBuildOptions& options = {});

}  // namespace kiln::relax::models
