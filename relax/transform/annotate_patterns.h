// AnnotatePatterns: gives every PrimFunc of a module the attribute `op_pattern`, the class
// of computation operator fusion (relax/transform/fuse_ops.h) reasons about:
//
//   elementwise        out[i..] = f(A[i..], B[i..], ...): every read at the output's index
//   broadcast          reads index a subsequence of the output's index (dims dropped or read
//                      at a constant, as numpy broadcasting does): bias add
//   injective          each output element from inputs at index expressions of its own
//                      index (transpose, reshape, slicing)
//   out_ewise_fusable  one reduction `C[..] = C[..] + a * b` (matmul): elementwise
//                      epilogues can be computed on its output tile
//   comm_reduce        one other reduction `C[..] = combine(C[..], value)`
//   opaque             anything else (several blocks, stores outside blocks, ...)
//
// A PrimFunc that already has op_pattern keeps it (legalization sets it for the kernels it
// makes; a name fusion does not know is treated as not fusable);
// only the ones without it (hand-written prim_funcs) are analysed. The analysis looks at
// the TIR alone and is conservative: a kernel it cannot classify is opaque, which fusion
// leaves alone. Relax functions are unchanged.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/stmt.h"

namespace kiln::relax {

// The pattern of one PrimFunc, by analysis of its body (ignores an existing attribute).
std::string AnalyzeOpPattern(const tir::PrimFunc& func);

absl::StatusOr<IRModule> AnnotatePatterns(const IRModule& module);

}  // namespace kiln::relax
