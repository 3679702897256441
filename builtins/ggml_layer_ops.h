// The layer operations of a Llama-family model as llama.cpp's CPU backend computes them, so a
// model built with them (relax/models/llama_builder.h, LlamaBuildOptions::ggml_numerics)
// computes llama.cpp's floats (docs/llm.md, "Numerics"). VM builtins on contiguous float32
// CPU tensors; each returns a new tensor:
//
//   kiln.ggml.rms_norm (tensor x (..., h), tensor w (h), double eps) -> tensor
//       per row: sum of the float squares in float64, mean = float(sum / h),
//       scale = 1.0f / sqrtf(mean + float(eps)), y = (scale * x) * w (ggml's fused
//       rms_norm + mul).
//   kiln.ggml.rope (tensor x (n, heads, d), tensor positions int64 (n), double base,
//                   int rotary_dims, int neox) -> tensor
//       the angle of pair m is float(position) multiplied m times by
//       powf(float(base), -2.0f / rotary_dims) in float, cos/sin by the C library; pairs
//       (2m, 2m+1), or (m, m + dims/2) when neox; y0 = fma(x0, cos, -(x1 * sin)),
//       y1 = fma(x0, sin, x1 * cos) (the fused form GCC gives ggml, checked against its
//       binary for both modes); other dims copied.
//   kiln.ggml.swiglu (tensor gate (..., f), tensor up (..., f)) -> tensor
//       gate / (1 + exp(-gate)) * up, exp by ggml's polynomial (builtins/ggml_expf.inc) for
//       each row's first f & ~15 elements and by the C library's expf for the rest.
//
// AVX2+FMA and portable code give the same bits. Wrong dtypes, shapes or devices are errors
// naming the builtin.
#pragma once

#include "vm/builtin_registry.h"

namespace kiln::builtins {

void RegisterGgmlLayerOps(vm::BuiltinRegistry& registry);

// Tests: run the portable code even where AVX2 and FMA are available.
void ForcePortableLayerOpsForTesting(bool portable);

}  // namespace kiln::builtins
