// CheckCallTirSignature: a call_tir's arguments against the parameters of the PrimFunc it
// calls, where the call is normalized (relax/block_builder.h).
//
// The kernel reads its buffers as the PrimFunc declares them, so a tensor of another dtype or
// rank than its buffer was found only when the compiled kernel checked its arguments at run
// time (or, for a dtype of the same width, not at all). This refuses at compile time:
//  - a call passing more or fewer values (inputs, outputs, tir_vars) than the PrimFunc has
//    parameters;
//  - a tensor (input or output) where the parameter is a scalar, or a non-tensor where it is a
//    buffer, or a tir_var where it is a buffer;
//  - a tensor whose known rank or dtype differs from its buffer's;
//  - a tensor dim that certainly differs from its buffer's: a constant (Tensor((4, 8)) for
//    Buffer((4, 16))), an expression over the PrimFunc's variables (2 * n when the call gives
//    n the value 4), or a variable that two arguments give different values (Buffer((n, 8))
//    for input 0 and output 0, passed Tensor((4, 8)) and Tensor((5, 8))), or a value certainly
//    outside the variable's declared bounds (6 for `where n <= 4`). The kernel checked these
//    when it ran; a variable bound consistently (n to 4, or n to the caller's m) is fine.
// Unknown ranks, dtypes and dims (Tensor(ndim=...), Tensor, m against 4) are left to the
// kernel's run-time check. Errors read `call_tir @k: output 0 is Tensor((n, 64), float32), but
// parameter 1 'B' of @k is Buffer((m,), float32): rank 2, not 1`, or end `: dim 0 is 5, but
// 'n' is 4 (from input 0 'x' dim 0)`.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "relax/expr.h"
#include "tir/analyzer.h"
#include "tir/stmt.h"

namespace kiln::relax {

// `call` is a normalized call_tir (its arguments carry struct info) of `callee`, the
// module's PrimFunc named `callee_name`; `analyzer` knows the caller's bounds.
absl::Status CheckCallTirSignature(const CallNode& call, const tir::PrimFunc& callee, const std::string& callee_name,
                                   tir::Analyzer& analyzer);

}  // namespace kiln::relax
