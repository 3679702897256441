// Canonical simplification of PrimExprs.
//
// What it promises:
//  - Simplify(e) equals `e` for every assignment of its variables within their bounds
//    (declared on the Var, or in the VarBoundMap). Integer arithmetic is treated as exact
//    (the IR assumes no overflow).
//  - A scalar integer expression comes back as a canonical sum: coefficient * term, ...,
//    constant last. Terms are products of atoms (variables, and the operations the sum
//    cannot see through: floordiv/floormod that do not divide out, min/max and select that
//    bounds cannot decide, casts, loads, calls). Terms with positive coefficients come
//    first, then negative ones; within each group variables come first (by name), then
//    other terms by their printed text, ties by first appearance. Chains of min (or max)
//    are flattened, operands that can never be the result dropped, the rest ordered with
//    constants last, and a constant they all share moved out (min(n + 2, m + 2) is
//    min(m, n) + 2). Terms that cancel against an operand move inside: n - min(n, 1) is
//    max(n - 1, 0). `(n + 1) * 2 - 2 * n` is `2`, `floordiv(4 * n + 2, 2)` is `2 * n + 1`,
//    `8 * floordiv(f, 8) + floormod(f, 8)` is `f`.
//  - Division by a term that divides the dividend exactly is done: floordiv(n * m, m) is n.
//  - Comparisons come back as `positive terms OP rest` with common factors divided out
//    (2 * n < 5 is n < 3; 8 > n is n < 8; n > 3 stays), or as true/false when decided.
//  - floordiv/floormod by a nonzero constant divide exactly where coefficients allow and use
//    bounds to drop remainders (floormod(i, 8) with 0 <= i < 8 is i); min/max, comparisons,
//    select, and/or/not fold when bounds decide them; casts of constants fold.
//  - Floating-point arithmetic is never folded or reassociated (that would change rounding);
//    only integer subexpressions inside it are simplified.
//  - Results are deterministic: the same input gives the same output.
#pragma once

#include <memory>

#include "tir/const_int_bound.h"
#include "tir/expr.h"

namespace kiln::tir {

class CanonicalSimplifier {
 public:
  // `bounds` must outlive the simplifier.
  explicit CanonicalSimplifier(const VarBoundMap& bounds);
  ~CanonicalSimplifier();
  CanonicalSimplifier(const CanonicalSimplifier&) = delete;
  CanonicalSimplifier& operator=(const CanonicalSimplifier&) = delete;

  PrimExpr Simplify(const PrimExpr& expr);

  // A bound of a scalar integer expression read off its canonical form; tighter than a
  // structural walk where terms cancel (n - n is [0, 0]). Unbounded for other types.
  IntBound CanonicalBound(const PrimExpr& expr);

  // Structural identity after simplification: same tree, same variable nodes.
  bool SameAfterSimplify(const PrimExpr& a, const PrimExpr& b);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::tir
