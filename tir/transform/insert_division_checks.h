// InsertDivisionChecks: an integer division or remainder whose divisor comes from the data
// is checked before it runs, so a kernel reports it instead of dying with SIGFPE.
//
// Runs after lower_blocks, before make_kernel_abi (it needs the parameters). For every
// scalar integer Div, FloorDiv and FloorMod whose divisor depends on the data - a buffer
// load, a scalar parameter that is not a buffer dimension, or a let variable bound to such
// a value - the statement holding it is preceded by
//     assert b != 0, "division by zero in floordiv(A[i], B[i])"
// and, for signed types when the divisor may be -1 and the dividend may be the type's
// minimum, by
//     assert !(a == MIN && b == -1), "integer overflow in floordiv(A[i], B[i]): -2147483648 divided by -1"
// (a literal -1 divisor gets the second check only). Not checked, so that index arithmetic
// in hot loops stays free of them: constant divisors other than -1, and divisors made of
// shape variables, loop variables and constants only (a zero extent means the loops that
// compute such indices do not run) - and divisors whose bounds (tir::Analyzer) exclude 0
// (and -1). A division inside a select's branch is checked only when that branch is taken:
// the condition becomes `!(guard) || ok`, and its divisor becomes select(ok, b, 1) because
// the emitter evaluates both branches. Let-bound values an expression refers to are re-bound
// (to fresh variables) inside the check. Vector divisions (lanes > 1) are not checked.
#pragma once

#include "tir/stmt.h"

namespace kiln::tir::transform {

PrimFunc InsertDivisionChecks(const PrimFunc& func);

}  // namespace kiln::tir::transform
