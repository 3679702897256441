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
//  - a tensor whose known rank or dtype differs from its buffer's.
// Unknown ranks and dtypes (Tensor(ndim=...), Tensor) are left to the kernel's run-time check.
// Errors read `call_tir @k: output 0 is Tensor((n, 64), float32), but parameter 1 'B' of @k is
// Buffer((m,), float32): rank 2, not 1`.
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
