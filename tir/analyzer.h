// Analyzer: simplification, bounds and proofs over integer PrimExprs.
//
// What it promises:
//  - Simplify(e) returns an expression equal to `e` for every assignment of its variables
//    that respects their bounds (the Var's own lower/upper bound, and any bound added with
//    Bind). It brings linear integer expressions to a canonical form (a sum of
//    coefficient * term plus a constant, terms in a stable order), so `(n + 1) * 2 - 2 * n`
//    becomes `2` and `floordiv(4 * n + 2, 2)` becomes `2 * n + 1`; constants fold.
//  - ConstIntBound(e) returns an interval certainly containing every value of `e`;
//    kNegInf / kPosInf stand for "unbounded".
//  - CanProve*(...) returns true only when the fact holds for every such assignment. A false
//    answer means "not proven", never "disproven".
//  - Integer arithmetic is assumed not to overflow (see tir/expr.h). Non-integer expressions
//    pass through Simplify with only their integer subexpressions simplified.
//  - Answers depend only on the arguments and the bounds known so far, not on earlier
//    queries. The canonical form is described in tir/canonical_simplify.h, the interval
//    arithmetic in tir/const_int_bound.h.
#pragma once

#include <cstdint>
#include <memory>

#include "tir/const_int_bound.h"  // IntBound
#include "tir/expr.h"

namespace kiln::tir {

class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // Adds the fact min <= var <= max (inclusive) for the rest of this analyzer's life, on
  // top of the bounds the Var declares (e.g. a loop variable over [0, extent)). Facts
  // accumulate: binding a variable twice keeps the intersection.
  void Bind(const Var& var, int64_t min, int64_t max);

  PrimExpr Simplify(const PrimExpr& expr);
  IntBound ConstIntBound(const PrimExpr& expr);

  // `condition` is a bool expression; true when it provably holds.
  bool CanProve(const PrimExpr& condition);
  bool CanProveEqual(const PrimExpr& a, const PrimExpr& b);
  bool CanProveLE(const PrimExpr& a, const PrimExpr& b);
  bool CanProveLT(const PrimExpr& a, const PrimExpr& b);
  // a != b for every assignment (e.g. n vs n + 1): used to report certain shape mismatches.
  bool CanProveNotEqual(const PrimExpr& a, const PrimExpr& b);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::tir
