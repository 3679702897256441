// FuseAttention: on CPU targets, attention written as operators,
//
//   %kt = R.permute_dims(k)            // swapping the last two axes
//   %s  = R.matmul(q, %kt)             // q: (B.., m, d), k: (B.., n, d)
//   %t  = R.multiply(%s, c)            // optional: also c * %s, or %s / c
//   %u  = R.add(%t, mask)              // optional: also mask + %t, or R.where(keep, %t, fill)
//                                      // or R.where(hide, fill, %t), fill a scalar constant
//   %p  = R.softmax(%u, axis=-1)
//   %o  = R.matmul(%p, v)              // v: (B.., n, e)
//
// becomes one kernel, `%o = R.call_tir(@attention, (q, k, v[, mask]), out_sinfo=...)`, that takes
// q's rows in blocks and, for each block, computes its scores into a buffer of the block's
// rows (R x n), their max, exp and sum, and their product with v, scaled by 1 / sum as it
// is written. The n x n scores and probabilities are never written to memory (two m x n
// tensors per call: 8 MiB at m = n = 1024, 32 MiB at 2048), and each block's scores are
// read by the softmax and the second matmul while they are in cache.
//
// The kernel (one PrimFunc): k transposed once into a d x n scratch buffer; then one block
// per (batch, row block) holding the blocks of the chain, so the CPU rules run the row
// blocks in parallel (cpu_injective.cc: a block holding blocks) and give each block inside
// its own rule (the matmul's register tiles, the row reductions' vector lanes). A block has
// 32 rows where vectors have 16 float lanes (4 of the matmul rule's 8-row tiles), else 24
// (4 of AVX2's 6-row tiles, or 6 of its 4-row ones); the last block of a batch has the
// rest.
//
// What it computes, against the operators: without a mask the max is taken over the
// unscaled scores and then scaled, which is exact for c > 0 (rounding is monotonic), and
// exp(s * c - max) may be contracted to one rounding; with one, the scores are scaled and
// masked in place first (s * c + mask, possibly contracted too, or select(keep, s * c,
// fill)). The products with v are
// summed before the division by the sum instead of after. Within float32 rounding of the
// operators' result; a row whose every key is masked with -inf is NaN, as the operators
// make it.
//
// Fused only when: the target is a CPU; q, k, v and every intermediate are float32, of one
// rank >= 2 with the same batch extents; every dim is a constant or a plain symbolic
// variable; c is a finite positive float32 scalar constant; the mask (float32, or bool for
// `where`) broadcasts to the scores (B.., m, n) without growing them (each of its dims,
// aligned from the right, a literal 1 or the scores' own: a padding mask (B, 1, 1, n), a
// causal one (m, n)); `where`'s fill is a float32 scalar constant; %s, %t, %u and %p have no other use (%kt may: it stays for the others); a
// dataflow variable the kernel reads is bound in the last matmul's dataflow block. Anything
// else stays as it was. Part of operator fusion: `kiln compile --no-fuse` skips it.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/target.h"

namespace kiln::relax {

absl::StatusOr<IRModule> FuseAttention(const IRModule& module, const tir::Target& target);

}  // namespace kiln::relax
