// Evaluation of scalar PrimExprs (symbolic shape arithmetic, PrimValue contents) under an
// environment of symbolic variable values, for the reference evaluator.
//
// Integer arithmetic is exact in int64 and wraps to the expression's dtype; FloorDiv and
// FloorMod round toward negative infinity; Div truncates for integers and is true division
// for floats; a zero integer divisor is an InvalidArgument. Float results round to their
// dtype (float32, float16, bfloat16). Math intrinsics are evaluated in double. Buffer loads,
// ramps and broadcasts are Unimplemented (no TIR interpretation); an unbound variable is an
// InvalidArgument naming it.
#pragma once

#include <unordered_map>

#include "absl/status/statusor.h"
#include "tests/reference/ref_value.h"
#include "tir/expr.h"

namespace kiln::reference {

using SymbolEnv = std::unordered_map<const tir::VarNode*, PrimScalar>;

absl::StatusOr<PrimScalar> EvalPrimExpr(const tir::PrimExpr& expr, const SymbolEnv& env);

// `value` converted to `dtype` as a cast does (float -> int truncates, int wraps to width,
// bool is != 0, floats round to their width).
PrimScalar CastScalar(const PrimScalar& value, DataType dtype);

}  // namespace kiln::reference
