// llama.cpp's CPU arithmetic (ggml-cpu) for the layer operators of a Llama model, as
// operator variants that compile to kernels on every target: rms_norm, rotary_embedding and
// silu with the attribute numerics = "ggml" (or "ggml_avx2") compute the floats of the kiln.ggml.* host
// builtins (builtins/ggml_layer_ops.h; docs/llm.md "Numerics"), so that a GPU build gives
// the default CPU build's tokens. Kernels in legalize_ggml_numerics.cc.
#pragma once

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "tir/stmt.h"

namespace kiln::relax::op {

// Which arithmetic: the operator's own, or llama.cpp's as its AVX-512 build or its AVX2 build
// computes it (builtins/ggml_simd.h; only SwiGLU's exp differs between the two).
enum class GgmlNumerics { kDefault, kAvx512Build, kAvx2Build };

// The call's `numerics` attribute: "default" (or absent), "ggml" (llama.cpp's AVX-512 build)
// or "ggml_avx2" (its AVX2 build); an error naming the operator otherwise.
absl::StatusOr<GgmlNumerics> GgmlNumericsAttr(const CallNode& call);

// rms_norm over the last axis: the float squares summed in float64, mean = float(sum / h),
// scale = 1.0f / sqrtf(mean + float(epsilon)), y = (scale * x) * weight.
absl::StatusOr<tir::PrimFunc> LegalizeGgmlRmsNorm(const CallNode& call);

// rotary_embedding: pair m's angle is float(int32(position)) multiplied m times by
// powf(theta, -2 / rotary_dims) in float; cos and sin computed in float64 and rounded to
// float (the C library's sincosf gives those floats but in rare hard cases);
// y0 = fma(x0, cos, -(x1 sin)), y1 = fma(x0, sin, x1 cos).
absl::StatusOr<tir::PrimFunc> LegalizeGgmlRope(const CallNode& call);

// silu: x / (1 + exp(-x)) with ggml's vector exp (ggml_v_expf) for each row's first
// f & ~15 elements (AVX2 build: its exp, f & ~7), the target's exp after them (ggml: the C
// library's expf).
absl::StatusOr<tir::PrimFunc> LegalizeGgmlSilu(const CallNode& call, GgmlNumerics numerics);

// ggml_v_expf of x (float32), as TIR, of the AVX-512 build and of the AVX2 build: tests
// compare them with builtins/ggml_expf.inc.
tir::PrimExpr GgmlExp(const tir::PrimExpr& x);
tir::PrimExpr GgmlExpAvx2Build(const tir::PrimExpr& x);

}  // namespace kiln::relax::op
