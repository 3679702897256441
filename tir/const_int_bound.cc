#include "tir/const_int_bound.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "support/int_math.h"
#include "tir/buffer.h"

namespace kiln::tir {
namespace {

constexpr int64_t kNegInf = IntBound::kNegInf;
constexpr int64_t kPosInf = IntBound::kPosInf;

// Which way an undetermined result (inf - inf) resolves: a lower end goes down, an upper end
// goes up, so the interval only ever widens.
enum class End { kLower, kUpper };

bool IsInf(int64_t x) { return x == kNegInf || x == kPosInf; }
int Sign(int64_t x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
int64_t Undetermined(End end) { return end == End::kLower ? kNegInf : kPosInf; }

// Keeps a finite result from reading as the opposite infinity (see the header): a lower
// end that reached kPosInf becomes the largest finite value, and vice versa. Both moves
// widen the interval.
int64_t Finish(int64_t value, End end) {
  if (end == End::kLower && value == kPosInf) return kPosInf - 1;
  if (end == End::kUpper && value == kNegInf) return kNegInf + 1;
  return value;
}

int64_t ExtAdd(int64_t a, int64_t b, End end) {
  if (IsInf(a) && IsInf(b) && a != b) return Undetermined(end);
  if (IsInf(a)) return a;
  if (IsInf(b)) return b;
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return a > 0 ? kPosInf : kNegInf;
  return Finish(out, end);
}

int64_t ExtNeg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

int64_t ExtMul(int64_t a, int64_t b, End end) {
  // A bound's infinity stands for "some finite value, arbitrarily large", so times 0 is 0.
  if (a == 0 || b == 0) return 0;
  if (IsInf(a) || IsInf(b)) return Sign(a) * Sign(b) > 0 ? kPosInf : kNegInf;
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return Sign(a) * Sign(b) > 0 ? kPosInf : kNegInf;
  return Finish(out, end);
}

int64_t FloorDivFinite(int64_t a, int64_t b) {
  if (a == kNegInf && b == -1) return kPosInf;  // overflows: saturate
  return support::FloorDiv(a, b);
}

// floor(a / b) for b != 0 over the extended integers.
int64_t ExtFloorDiv(int64_t a, int64_t b, End end) {
  if (IsInf(a) && IsInf(b)) {
    // Both huge: the quotient is only known to be >= 0 (same signs) or <= -1.
    if (Sign(a) == Sign(b)) return end == End::kLower ? 0 : kPosInf;
    return end == End::kLower ? kNegInf : -1;
  }
  if (IsInf(a)) return Sign(a) * Sign(b) > 0 ? kPosInf : kNegInf;
  if (IsInf(b)) {
    if (a == 0 || Sign(a) == Sign(b)) return 0;
    return -1;
  }
  return Finish(FloorDivFinite(a, b), end);
}

// Bound of floordiv over a divisor range of one sign. For a fixed divisor the quotient is
// monotone in the dividend, and along either end of the dividend range it is monotone in
// the divisor, so the extremes are at the corners.
IntBound FloorDivSameSign(const IntBound& a, const IntBound& b) {
  int64_t lo = kPosInf;
  int64_t hi = kNegInf;
  for (int64_t x : {a.min, a.max}) {
    for (int64_t y : {b.min, b.max}) {
      lo = std::min(lo, ExtFloorDiv(x, y, End::kLower));
      hi = std::max(hi, ExtFloorDiv(x, y, End::kUpper));
    }
  }
  return MakeBound(lo, hi);
}

// Bound of floormod over a divisor range of one sign.
IntBound FloorModSameSign(const IntBound& a, const IntBound& b) {
  if (b.is_const() && !IsInf(a.min) && !IsInf(a.max)) {
    // One quotient over the whole dividend range: floormod is the dividend shifted.
    int64_t c = b.min;
    int64_t q = FloorDivFinite(a.min, c);
    if (q == FloorDivFinite(a.max, c)) {
      int64_t shift = ExtMul(q, c, End::kLower);
      if (!IsInf(shift)) {
        return MakeBound(ExtAdd(a.min, ExtNeg(shift), End::kLower),
                         ExtAdd(a.max, ExtNeg(shift), End::kUpper));
      }
    }
  }
  if (b.min > 0) {
    // The result has the divisor's sign and is smaller in magnitude; a non-negative
    // dividend is never increased.
    int64_t hi = b.max == kPosInf ? kPosInf : b.max - 1;
    if (a.min >= 0) hi = std::min(hi, a.max);
    return MakeBound(0, hi);
  }
  int64_t lo = b.min == kNegInf ? kNegInf : b.min + 1;
  if (a.max <= 0) lo = std::max(lo, a.min);
  return MakeBound(lo, 0);
}

// Splits the divisor range into its positive and negative parts (0 is excluded: division
// by zero is undefined) and unions `op` over them.
template <typename Op>
IntBound OverNonzeroDivisor(const IntBound& a, const IntBound& b, Op op) {
  std::optional<IntBound> out;
  if (b.max >= 1) {
    IntBound part = op(a, MakeBound(std::max<int64_t>(1, b.min), b.max));
    out = part;
  }
  if (b.min <= -1) {
    IntBound part = op(a, MakeBound(b.min, std::min<int64_t>(-1, b.max)));
    out = out ? UnionBounds(*out, part) : part;
  }
  return out ? *out : IntBound{};
}

// The smallest 2^k - 1 that is >= v (v >= 0, finite): every value with no bit above v's.
int64_t AllOnesCovering(int64_t v) {
  int64_t ones = 0;
  while (ones < v) ones = ones * 2 + 1;
  return ones;
}

// Bounds of the bit operations of tir/expr.h on values of `t` (a, b: the operands' bounds).
IntBound BoundBitwise(ExprKind kind, DataType t, const IntBound& a, const IntBound& b) {
  const bool a_nonneg = a.min >= 0;
  const bool b_nonneg = b.min >= 0;
  const int64_t bits = t.bits();
  switch (kind) {
    case ExprKind::kBitAnd:
      // A non-negative operand has no bit above its own maximum, and keeps the result >= 0.
      if (a_nonneg && b_nonneg) return MakeBound(0, std::min(a.max, b.max));
      if (a_nonneg) return MakeBound(0, a.max);
      if (b_nonneg) return MakeBound(0, b.max);
      return DTypeBound(t);
    case ExprKind::kBitOr:
    case ExprKind::kBitXor:
      if (!a_nonneg || !b_nonneg || IsInf(a.max) || IsInf(b.max)) return DTypeBound(t);
      return MakeBound(kind == ExprKind::kBitOr ? std::max(a.min, b.min) : 0,
                       AllOnesCovering(std::max(a.max, b.max)));
    case ExprKind::kShr:
      if (b.is_const() && b.min >= 0 && b.min < bits) {
        auto shift = [&](int64_t v) { return IsInf(v) ? v : v >> b.min; };
        return MakeBound(shift(a.min), shift(a.max));
      }
      // Any shift moves a value toward 0 (or -1), never past it.
      return MakeBound(std::min<int64_t>(a.min, 0), std::max<int64_t>(a.max, 0));
    case ExprKind::kShl: {
      if (!b.is_const() || b.min < 0 || b.min >= bits || b.min >= 63) return DTypeBound(t);
      IntBound scaled = BoundMul(a, MakeBound(int64_t{1} << b.min, int64_t{1} << b.min));
      IntBound range = DTypeBound(t);
      // Only when nothing is shifted out is the result the product.
      if (scaled.min >= range.min && scaled.max <= range.max && !IsInf(scaled.min) && !IsInf(scaled.max)) {
        return scaled;
      }
      return range;
    }
    default: return DTypeBound(t);
  }
}

// ~a is -a - 1 for int and (2^bits - 1) - a for uint.
IntBound BoundBitNot(DataType t, const IntBound& a) {
  if (t.is_int()) return BoundAdd(BoundNeg(a), MakeBound(-1, -1));
  if (t.bits() < 64 && !IsInf(a.max)) {
    const int64_t ones = (int64_t{1} << t.bits()) - 1;
    return MakeBound(ones - a.max, ones - std::max<int64_t>(a.min, 0));
  }
  return DTypeBound(t);
}

class BoundWalker {
 public:
  explicit BoundWalker(const VarBoundMap& bounds) : bounds_(bounds) {}

  IntBound Visit(const PrimExpr& e) {
    DataType t = e.dtype();
    if (!t.is_integer() && !t.is_bool()) return IntBound{};
    // Shared subexpressions are visited once; inside a Let the answers depend on the
    // binding, so nothing is remembered there.
    bool cacheable = lets_.empty();
    if (cacheable) {
      auto it = memo_.find(e.get());
      if (it != memo_.end()) return it->second;
    }
    IntBound out = IntersectBounds(VisitNode(e), DTypeBound(t));
    if (cacheable) memo_.emplace(e.get(), out);
    return out;
  }

 private:
  IntBound VisitNode(const PrimExpr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        return MakeBound(v, v);
      }
      case ExprKind::kVar: {
        const auto* var = e.as<VarNode>();
        auto it = lets_.find(var);
        if (it != lets_.end()) return it->second;
        return VarBound(*var, bounds_);
      }
      case ExprKind::kAdd: case ExprKind::kSub: {
        // Long chains are walked along their left spine in a loop, not by recursion.
        IntBound acc = MakeBound(0, 0);
        PrimExpr spine = e;
        while (spine.kind() == ExprKind::kAdd || spine.kind() == ExprKind::kSub) {
          const auto* bin = spine.as<BinaryNode>();
          IntBound b = Visit(bin->b);
          acc = BoundAdd(acc, spine.kind() == ExprKind::kAdd ? b : BoundNeg(b));
          spine = bin->a;
        }
        return BoundAdd(acc, Visit(spine));
      }
      case ExprKind::kMul: case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod: case ExprKind::kMin: case ExprKind::kMax: {
        const auto* bin = e.as<BinaryNode>();
        IntBound a = Visit(bin->a);
        IntBound b = Visit(bin->b);
        switch (e.kind()) {
          case ExprKind::kMul: return BoundMul(a, b);
          case ExprKind::kFloorDiv: return BoundFloorDiv(a, b);
          case ExprKind::kFloorMod: return BoundFloorMod(a, b);
          case ExprKind::kMin: return BoundMin(a, b);
          default: return BoundMax(a, b);
        }
      }
      case ExprKind::kEQ: case ExprKind::kNE: case ExprKind::kLT:
      case ExprKind::kLE: case ExprKind::kGT: case ExprKind::kGE: {
        const auto* bin = e.as<BinaryNode>();
        return BoundCompare(e.kind(), Visit(bin->a), Visit(bin->b));
      }
      case ExprKind::kAnd: case ExprKind::kOr: {
        const auto* bin = e.as<BinaryNode>();
        int a = BoundTruth(Visit(bin->a));
        int b = BoundTruth(Visit(bin->b));
        // One decisive side decides (false for &&, true for ||); two undecisive ones too.
        int decisive = e.kind() == ExprKind::kAnd ? 0 : 1;
        if (a == decisive || b == decisive) return MakeBound(decisive, decisive);
        if (a == 1 - decisive && b == 1 - decisive) return MakeBound(1 - decisive, 1 - decisive);
        return MakeBound(0, 1);
      }
      case ExprKind::kBitAnd: case ExprKind::kBitOr: case ExprKind::kBitXor:
      case ExprKind::kShl: case ExprKind::kShr: {
        const auto* bin = e.as<BinaryNode>();
        return BoundBitwise(e.kind(), e.dtype(), Visit(bin->a), Visit(bin->b));
      }
      case ExprKind::kBitNot: return BoundBitNot(e.dtype(), Visit(e.as<BitNotNode>()->a));
      case ExprKind::kNot: {
        int a = BoundTruth(Visit(e.as<NotNode>()->a));
        if (a == -1) return MakeBound(0, 1);
        return MakeBound(1 - a, 1 - a);
      }
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        int c = BoundTruth(Visit(s->condition));
        if (c == 1) return Visit(s->true_value);
        if (c == 0) return Visit(s->false_value);
        return UnionBounds(Visit(s->true_value), Visit(s->false_value));
      }
      case ExprKind::kCast: {
        const PrimExpr& value = e.as<CastNode>()->value;
        DataType from = value.dtype();
        if (!from.is_integer() && !from.is_bool()) return DTypeBound(e.dtype());
        IntBound v = Visit(value);
        if (e.dtype().is_bool()) {
          int truth = BoundTruth(v);
          return truth == -1 ? MakeBound(0, 1) : MakeBound(truth, truth);
        }
        IntBound range = DTypeBound(e.dtype());
        // Values outside the target's range wrap, so only a source that fits keeps its bound.
        if (v.min >= range.min && v.max <= range.max) return v;
        return range;
      }
      case ExprKind::kRamp: {
        const auto* r = e.as<RampNode>();
        IntBound lanes = MakeBound(0, r->lanes - 1);
        return BoundAdd(Visit(r->base), BoundMul(Visit(r->stride), lanes));
      }
      case ExprKind::kBroadcast: return Visit(e.as<BroadcastNode>()->value);
      case ExprKind::kLet: {
        const auto* let = e.as<LetNode>();
        const VarNode* var = let->var.get();
        IntBound value = Visit(let->value);
        auto saved = lets_.find(var);
        std::optional<IntBound> old;
        if (saved != lets_.end()) old = saved->second;
        lets_[var] = IntersectBounds(value, VarBound(*var, bounds_));
        IntBound body = Visit(let->body);
        if (old) {
          lets_[var] = *old;
        } else {
          lets_.erase(var);
        }
        return body;
      }
      default: return DTypeBound(e.dtype());  // Div, Call, BufferLoad, Reinterpret: nothing known
    }
  }

  const VarBoundMap& bounds_;
  VarBoundMap lets_;  // variables bound by an enclosing Let
  // Keyed by node; the nodes live at least as long as the walk (the root holds them).
  std::unordered_map<const PrimExprNode*, IntBound> memo_;
};

}  // namespace

IntBound MakeBound(int64_t lo, int64_t hi) { return {Finish(lo, End::kLower), Finish(hi, End::kUpper)}; }

IntBound IntersectBounds(const IntBound& a, const IntBound& b) {
  return {std::max(a.min, b.min), std::min(a.max, b.max)};
}

IntBound UnionBounds(const IntBound& a, const IntBound& b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}

IntBound DTypeBound(DataType dtype) {
  if (dtype.is_bool()) return MakeBound(0, 1);
  int bits = dtype.bits();
  if (dtype.is_int() && bits < 64) {
    int64_t half = int64_t{1} << (bits - 1);
    return MakeBound(-half, half - 1);
  }
  if (dtype.is_uint()) return MakeBound(0, bits < 64 ? (int64_t{1} << bits) - 1 : kPosInf);
  return IntBound{};
}

IntBound VarBound(const VarNode& var, const VarBoundMap& bounds) {
  IntBound out = DTypeBound(var.dtype());
  if (var.lower_bound) out = IntersectBounds(out, MakeBound(*var.lower_bound, kPosInf));
  if (var.upper_bound) out = IntersectBounds(out, MakeBound(kNegInf, *var.upper_bound));
  auto it = bounds.find(&var);
  if (it != bounds.end()) out = IntersectBounds(out, it->second);
  return out;
}

IntBound BoundAdd(const IntBound& a, const IntBound& b) {
  return MakeBound(ExtAdd(a.min, b.min, End::kLower), ExtAdd(a.max, b.max, End::kUpper));
}

IntBound BoundNeg(const IntBound& a) { return MakeBound(ExtNeg(a.max), ExtNeg(a.min)); }

IntBound BoundMul(const IntBound& a, const IntBound& b) {
  int64_t lo = kPosInf;
  int64_t hi = kNegInf;
  for (int64_t x : {a.min, a.max}) {
    for (int64_t y : {b.min, b.max}) {
      lo = std::min(lo, ExtMul(x, y, End::kLower));
      hi = std::max(hi, ExtMul(x, y, End::kUpper));
    }
  }
  return MakeBound(lo, hi);
}

IntBound BoundFloorDiv(const IntBound& a, const IntBound& b) {
  return OverNonzeroDivisor(a, b, FloorDivSameSign);
}

IntBound BoundFloorMod(const IntBound& a, const IntBound& b) {
  return OverNonzeroDivisor(a, b, FloorModSameSign);
}

IntBound BoundMin(const IntBound& a, const IntBound& b) {
  return {std::min(a.min, b.min), std::min(a.max, b.max)};
}

IntBound BoundMax(const IntBound& a, const IntBound& b) {
  return {std::max(a.min, b.min), std::max(a.max, b.max)};
}

int BoundTruth(const IntBound& b) {
  if (b.min > 0 || b.max < 0) return 1;
  if (b.min == 0 && b.max == 0) return 0;
  return -1;
}

IntBound BoundCompare(ExprKind kind, const IntBound& a, const IntBound& b) {
  std::optional<bool> known;
  switch (kind) {
    case ExprKind::kLT:
      if (a.max < b.min) known = true;
      if (a.min >= b.max) known = false;
      break;
    case ExprKind::kLE:
      if (a.max <= b.min) known = true;
      if (a.min > b.max) known = false;
      break;
    case ExprKind::kGT: return BoundCompare(ExprKind::kLT, b, a);
    case ExprKind::kGE: return BoundCompare(ExprKind::kLE, b, a);
    case ExprKind::kEQ: case ExprKind::kNE:
      if (a.is_const() && b.is_const() && a.min == b.min) known = true;
      if (a.max < b.min || a.min > b.max) known = false;
      if (known && kind == ExprKind::kNE) known = !*known;
      break;
    default: break;
  }
  if (!known) return MakeBound(0, 1);
  return *known ? MakeBound(1, 1) : MakeBound(0, 0);
}

IntBound ComputeConstIntBound(const PrimExpr& expr, const VarBoundMap& bounds) {
  return BoundWalker(bounds).Visit(expr);
}

}  // namespace kiln::tir
