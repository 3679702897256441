// FuseAttention: on CPU targets, attention written as operators,
//
//   %kt = R.permute_dims(k)            // swapping the last two axes
//   %s  = R.matmul(q, %kt)             // q: (B.., m, d), k: (B.., n, d)
//   %t  = R.multiply(%s, c)            // optional: also c * %s, or %s / c
//   %p  = R.softmax(%t, axis=-1)
//   %o  = R.matmul(%p, v)              // v: (B.., n, e)
//
// becomes one kernel, `%o = R.call_tir(@attention, (q, k, v), out_sinfo=...)`, that takes
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
// What it computes, against the operators: the max is taken over the unscaled scores and
// then scaled, which is exact for c > 0 (rounding is monotonic); exp(s * c - max) may be
// contracted to one rounding; the products with v are summed before the division by the
// sum instead of after. Within float32 rounding of the operators' result.
//
// Fused only when: the target is a CPU; q, k, v and every intermediate are float32, of one
// rank >= 2 with the same batch extents; every dim is a constant or a plain symbolic
// variable; c is a finite positive float32 scalar constant; %s, %t and %p have no other use
// (%kt may: it stays for the others). Anything else stays as it was. Part of operator
// fusion: `kiln compile --no-fuse` skips it.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/target.h"

namespace kiln::relax {

absl::StatusOr<IRModule> FuseAttention(const IRModule& module, const tir::Target& target);

}  // namespace kiln::relax
