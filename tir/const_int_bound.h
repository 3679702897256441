// Constant integer bounds: an interval that certainly contains every value an integer (or
// bool, as 0/1) expression can take, given bounds on its variables.
//
// What it promises:
//  - The interval is sound, never tight by guarantee: [kNegInf, kPosInf] ("don't know") is
//    always a correct answer. kNegInf / kPosInf stand for unbounded ends.
//  - Arithmetic saturates instead of overflowing: a bound that would leave int64 becomes the
//    unbounded end on that side; a lower bound is never kPosInf and an upper bound never
//    kNegInf, so each end reads unambiguously.
//  - Values are mathematical integers (the IR assumes no overflow, see tir/expr.h), clamped
//    to the range of the expression's dtype. Floating-point values are unbounded.
//  - A variable's bound is its declared lower/upper bound intersected with its dtype's range
//    and with any entry for it in the VarBoundMap.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "tir/expr.h"

namespace kiln::tir {

struct IntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;
  bool is_const() const { return min == max && min != kNegInf && min != kPosInf; }
  bool Contains(int64_t value) const { return min <= value && value <= max; }
};

// Extra facts about variables, keyed by node identity (a Var is its node).
using VarBoundMap = std::unordered_map<const VarNode*, IntBound>;

// [lo, hi] with the saturation convention above applied to finite inputs.
IntBound MakeBound(int64_t lo, int64_t hi);
IntBound IntersectBounds(const IntBound& a, const IntBound& b);
IntBound UnionBounds(const IntBound& a, const IntBound& b);
// The values a dtype can hold: int8 is [-128, 127], bool [0, 1], floats unbounded.
IntBound DTypeBound(DataType dtype);
IntBound VarBound(const VarNode& var, const VarBoundMap& bounds);

// Interval arithmetic; each result contains op(x, y) for every x in a, y in b (and, for
// division and modulo, y != 0).
IntBound BoundAdd(const IntBound& a, const IntBound& b);
IntBound BoundNeg(const IntBound& a);
IntBound BoundMul(const IntBound& a, const IntBound& b);
IntBound BoundFloorDiv(const IntBound& a, const IntBound& b);
IntBound BoundFloorMod(const IntBound& a, const IntBound& b);
IntBound BoundMin(const IntBound& a, const IntBound& b);
IntBound BoundMax(const IntBound& a, const IntBound& b);

// Whether a bool-valued bound (0 false, anything else true) is known: 1 true, 0 false,
// -1 unknown.
int BoundTruth(const IntBound& b);
// The bound of `a kind b` (a comparison) as a bool: [1, 1], [0, 0] or [0, 1].
IntBound BoundCompare(ExprKind kind, const IntBound& a, const IntBound& b);

// Walks `expr` structurally with interval arithmetic.
IntBound ComputeConstIntBound(const PrimExpr& expr, const VarBoundMap& bounds);

}  // namespace kiln::tir
