// Library kernels for quantized_matmul (relax/op/quantize.cc has the semantics): float32
// activations times GGML-quantized weights, the weights decoded block by block inside the
// kernel and never written out.
//
//   kiln.cpu.quantized_matmul_q4_0 / _q4_1 / _q8_0 (x, w, out) "ttt":
//     x float32 (..., k), w uint8 (n, k / 32 * block_bytes), out float32 (..., n);
//     out = x @ dequantize(w)^T computed as llama.cpp's CPU backend computes it: each row
//     of x quantized to 8-bit blocks (Q8_0, or Q8_1 for Q4_1 weights), integer dot products
//     per block, scaled and summed in ggml's order (builtins/q8_block_dot.h), so the result
//     is llama.cpp's float for float; about 1e-2 relative from the exact product.
//   kiln.cpu.quantized_matmul_f32x_q4_0 / _q4_1 / _q8_0: the same with float32 activations
//     (the operator's exact semantics up to float32 rounding; relax::LibraryOptions::
//     quantize_activations = false picks them).
//
// The float32-activation kernels are described below.
// Why a hand-written kernel next to the generated one (relax/op/legalize_quantize.cc, whose
// reduction over (block, half, position) the row-reduction rule vectorizes, with vector
// accumulators and rows in parallel): the generated kernel decodes a weight block once per
// activation row, this one once per weight row for all activation rows, so this one wins
// when there are many rows (prefill) and the generated one, with its wider, unrolled lanes,
// when there is one (decode); benchmarks/qmatmul_bench.cc measures both. Each task decodes
// a weight row once into float32 (an L1-resident buffer) and takes its dot products with
// every row of x, four at a time; tasks are ranges of output columns on the VM's thread
// pool. The inner loops use AVX2, FMA and F16C where the CPU has them (chosen at run time),
// else portable code.
#pragma once

#include "vm/builtin_registry.h"

namespace kiln::builtins {

void RegisterQuantizedMatmulKernels(vm::BuiltinRegistry& registry);

}  // namespace kiln::builtins
