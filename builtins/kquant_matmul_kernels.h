// Library kernels for quantized_matmul (relax/op/quantize.cc) with GGML's Q5_0, Q5_1, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights (the formats of builtins/quantized_matmul_kernels.h are Q4_0, Q4_1
// and Q8_0):
//
//   kiln.cpu.quantized_matmul_q5_0 / _q5_1 / _q2_K / _q3_K / _q4_K / _q5_K / _q6_K / _iq4_xs
//     (x, w, out) "ttt":
//     x float32 (..., k), w uint8 (n, k / block_weights * block_bytes), out float32 (..., n);
//     out = x @ dequantize(w)^T as llama.cpp's CPU backend computes it: each row of x
//     quantized (Q8_0 for Q5_0, Q8_1 for Q5_1: builtins/q8_block_dot.h; Q8_K for the
//     K-quants: builtins/kquant_block_dot.h), integer dot products per block summed in
//     ggml's order (builtins/q5_block_dot.h, builtins/kquant_block_dot.h). A row holding an
//     inf or NaN is computed with float32 activations instead (quantized, it would be NaN).
//   kiln.cpu.quantized_matmul_by_block_q4_K: the same in the orders of llama.cpp's repacked
//     Q4_K kernels, which llama.cpp uses for Q4_K weights with a multiple of 8 rows on AVX2
//     and AVX-512 CPUs: of x's n rows, the first n - n % 4 (when n > 3) in its GEMM's
//     (KQuantSummation::kBlockQuarters), the others in its GEMV's (kBlocks).
//   kiln.cpu.quantized_matmul_by_block_q2_K: likewise for Q2_K (its GEMM kBlockHalves), which
//     llama.cpp repacks only when built for AVX-512: with the AVX2 arithmetic
//     (builtins/ggml_simd.h) the tiled kernel's choice below instead.
//   kiln.cpu.quantized_matmul_tiled_<K-quant format>: the same in the order of
//     llama.cpp's tiled K-quant matmul (KQuantSummation::kTiles) when x has 8 or more rows
//     (all leading dims together), else vec_dot's, as llama.cpp chooses per call: a row's
//     bits then depend on how many rows share the call.
//   kiln.cpu.quantized_matmul_f32x_<format>: float32 activations against the decoded
//     weights (builtins/ggml_row_decode.h), the operator's exact semantics up to float32
//     rounding (relax::LibraryOptions::quantize_activations = false).
//
// Tasks are ranges of output columns on the VM's thread pool; each decodes or reads a weight
// row once for all activation rows (in chunks that stay in L2), Q5 weight rows four at a time
// on AVX-512 VNNI CPUs (DotQ5Tile).
#pragma once

#include "vm/builtin_registry.h"

namespace kiln::builtins {

void RegisterKQuantMatmulKernels(vm::BuiltinRegistry& registry);

}  // namespace kiln::builtins
