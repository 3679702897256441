#include "tir/analyzer.h"

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "tir/buffer.h"

namespace kiln::tir {
namespace {

// ---------------------------------------------------------------- a naive reference evaluator

using Env = std::unordered_map<const VarNode*, int64_t>;

int64_t RefFloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t RefFloorMod(int64_t a, int64_t b) { return a - b * RefFloorDiv(a, b); }

// Exact int64 evaluation with floor semantics; sets *ok to false on overflow, division by
// zero, or a node it does not know.
int64_t Eval(const PrimExpr& e, const Env& env, bool* ok) {
  if (const auto* imm = e.as<IntImmNode>()) return imm->value;
  if (const auto* var = e.as<VarNode>()) {
    auto it = env.find(var);
    if (it == env.end()) {
      *ok = false;
      return 0;
    }
    return it->second;
  }
  if (const auto* n = e.as<NotNode>()) return Eval(n->a, env, ok) != 0 ? 0 : 1;
  if (const auto* n = e.as<BitNotNode>()) return ~Eval(n->a, env, ok);
  if (const auto* s = e.as<SelectNode>()) {
    return Eval(s->condition, env, ok) != 0 ? Eval(s->true_value, env, ok) : Eval(s->false_value, env, ok);
  }
  const auto* bin = e.as<BinaryNode>();
  if (bin == nullptr) {
    *ok = false;
    return 0;
  }
  int64_t a = Eval(bin->a, env, ok);
  int64_t b = Eval(bin->b, env, ok);
  int64_t out = 0;
  switch (e.kind()) {
    case ExprKind::kAdd: if (__builtin_add_overflow(a, b, &out)) *ok = false; return out;
    case ExprKind::kSub: if (__builtin_sub_overflow(a, b, &out)) *ok = false; return out;
    case ExprKind::kMul: if (__builtin_mul_overflow(a, b, &out)) *ok = false; return out;
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod:
      if (b == 0 || (b == -1 && a == INT64_MIN)) {
        *ok = false;
        return 0;
      }
      return e.kind() == ExprKind::kFloorDiv ? RefFloorDiv(a, b) : RefFloorMod(a, b);
    case ExprKind::kMin: return a < b ? a : b;
    case ExprKind::kMax: return a > b ? a : b;
    case ExprKind::kEQ: return a == b;
    case ExprKind::kNE: return a != b;
    case ExprKind::kLT: return a < b;
    case ExprKind::kLE: return a <= b;
    case ExprKind::kGT: return a > b;
    case ExprKind::kGE: return a >= b;
    case ExprKind::kAnd: return (a != 0) && (b != 0);
    case ExprKind::kOr: return (a != 0) || (b != 0);
    // int64 only: x << k is x * 2^k modulo 2^64, x >> k is floor(x / 2^k); out of range
    // amounts shift everything out.
    case ExprKind::kBitAnd: return a & b;
    case ExprKind::kBitOr: return a | b;
    case ExprKind::kBitXor: return a ^ b;
    case ExprKind::kShl: return b < 0 || b >= 64 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
    case ExprKind::kShr:
      if (b < 0 || b >= 63) return a < 0 ? -1 : 0;
      return RefFloorDiv(a, int64_t{1} << b);
    default: *ok = false; return 0;
  }
}

// ---------------------------------------------------------------- the issue's examples

TEST(Analyzer, SimplifiesTheIssuesExamples) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  EXPECT_EQ(ToString(analyzer.Simplify((n + 1) * 2 - 2 * n)), "2");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(4 * n + 2, 2))), "2 * n + 1");
}

TEST(Analyzer, CanonicalFormOrdersTermsAndPutsTheConstantLast) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var m = Var::Shape("m");
  EXPECT_EQ(ToString(analyzer.Simplify(3 + n + m + n)), "m + 2 * n + 3");
  EXPECT_EQ(ToString(analyzer.Simplify(n - m - 1)), "n - m - 1");
  EXPECT_EQ(ToString(analyzer.Simplify(n * m - m * n + n * n)), "n * n");
  EXPECT_EQ(ToString(analyzer.Simplify(5 - n)), "5 - n");
  EXPECT_EQ(ToString(analyzer.Simplify((n + 2) * (n - 2))), "n * n - 4");
  EXPECT_EQ(ToString(analyzer.Simplify(n * 0 + m * 1)), "m");
  // The same canonical form whatever order the input came in.
  EXPECT_EQ(ToString(analyzer.Simplify(m + n)), ToString(analyzer.Simplify(n + m)));
}

TEST(Analyzer, DividesByConstants) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var i("i", DataType::Int64(), 0, 7);
  Var j("j", DataType::Int64(), 0, 7);
  Var f("f", DataType::Int64(), 0, 63);
  EXPECT_EQ(ToString(analyzer.Simplify(FloorMod(i, 8))), "i");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(i, 8))), "0");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(8 * n + i, 8))), "n");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorMod(8 * n + j, 8))), "j");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(4 * n + 3, 2))), "2 * n + 1");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorMod(6 * n + 4, 3))), "1");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(n, 4))), "floordiv(n, 4)");
  // Variables first, then other terms, then the constant.
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(n * 4 + j + 8, 4))), "n + floordiv(j, 4) + 2");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(FloorDiv(n, 4), 2))), "floordiv(n, 8)");
  // Splitting then fusing a loop gives the loop variable back.
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(f, 8) * 8 + FloorMod(f, 8))), "f");
  // Negative divisors: floordiv(x, -c) is floordiv(-x, c).
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(6 * n, -3))), "-2 * n");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorMod(i, -8))), "floormod(i, -8)");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(IntImm(DataType::Int64(), -7), 2))), "-4");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorMod(IntImm(DataType::Int64(), -7), 2))), "1");
}

TEST(Analyzer, DividesBySymbolicTermsThatDivideExactly) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var m = Var::Shape("m");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(n * m, m))), "n");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(n * m + m, m))), "n + 1");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(6 * n * m, 2 * m))), "3 * n");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorMod(4 * n * m, 2 * m))), "0");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(n * m + 1, m))), "floordiv(m * n + 1, m)");
  EXPECT_EQ(ToString(analyzer.Simplify(FloorDiv(3 * n * m, 2 * m))), "floordiv(3 * m * n, 2 * m)");
  EXPECT_TRUE(analyzer.CanProveEqual(FloorDiv(n * m, n), m));
  IntBound b = analyzer.ConstIntBound(FloorDiv(n, m));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, IntBound::kPosInf);
}

TEST(Analyzer, HandlesLargeAndSharedExpressions) {
  Analyzer analyzer;
  std::vector<Var> vars;
  for (int i = 0; i < 50; ++i) vars.push_back(Var::Shape("v" + std::to_string(100 + i)));
  // A long sum whose terms cancel pairwise.
  PrimExpr sum = 0;
  for (int round = 0; round < 20; ++round) {
    for (const Var& v : vars) sum = sum + v * (round + 1);
    for (const Var& v : vars) sum = sum - v * (round + 1);
  }
  EXPECT_EQ(ToString(analyzer.Simplify(sum)), "0");
  EXPECT_TRUE(analyzer.ConstIntBound(sum + 1).Contains(1));
  // A DAG whose tree form has 2^60 nodes: converted once per shared node.
  Var n = Var::Shape("n");
  PrimExpr e = n;
  for (int i = 0; i < 60; ++i) e = e - e + e + 1;
  EXPECT_EQ(ToString(analyzer.Simplify(e)), "n + 60");
  IntBound b = analyzer.ConstIntBound(e);
  EXPECT_EQ(b.min, 60);
  EXPECT_TRUE(analyzer.CanProveEqual(e, n + 60));
}

TEST(Analyzer, FoldsMinMaxComparisonsAndLogicWhenBoundsDecide) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var m = Var::Shape("m");
  Var i("i", DataType::Int64(), 0, 7);
  EXPECT_EQ(ToString(analyzer.Simplify(Min(i, 8))), "i");
  EXPECT_EQ(ToString(analyzer.Simplify(Max(i, 8))), "8");
  EXPECT_EQ(ToString(analyzer.Simplify(Min(n, n + 1))), "n");
  EXPECT_EQ(ToString(analyzer.Simplify(Max(n, m))), ToString(analyzer.Simplify(Max(m, n))));
  EXPECT_EQ(ToString(analyzer.Simplify(Min(Min(n, 5), 3))), "min(n, 3)");
  EXPECT_EQ(ToString(analyzer.Simplify(Min(n + 2, m + 2))), "min(m, n) + 2");
  // Terms outside a min/max that cancel against an operand move inside.
  EXPECT_EQ(ToString(analyzer.Simplify(n - Min(n, 1))), "max(n - 1, 0)");
  EXPECT_EQ(ToString(analyzer.Simplify(Max(n - Min(1, n), 0))), "max(n - 1, 0)");
  EXPECT_EQ(ToString(analyzer.Simplify(Max(n, m) - m)), "max(n - m, 0)");
  EXPECT_EQ(ToString(analyzer.Simplify(Max(Max(n, m + 1), m))), "max(m + 1, n)");
  EXPECT_EQ(ToString(analyzer.Simplify(LT(i, 8))), "true");
  EXPECT_EQ(ToString(analyzer.Simplify(GE(n, 0))), "true");
  EXPECT_EQ(ToString(analyzer.Simplify(EQ(2 * n, 2 * m + 1))), "false");
  EXPECT_EQ(ToString(analyzer.Simplify(LT(n + 1, m + 1))), "n < m");
  EXPECT_EQ(ToString(analyzer.Simplify(GT(8, n))), "n < 8");
  EXPECT_EQ(ToString(analyzer.Simplify(GT(n, 3))), "n > 3");
  EXPECT_EQ(ToString(analyzer.Simplify(NE(2 * n, 4))), "n != 2");
  EXPECT_EQ(ToString(analyzer.Simplify(LE(n * 2, m * 2))), "n <= m");
  EXPECT_EQ(ToString(analyzer.Simplify(LT(2 * n, 5))), "n < 3");
  EXPECT_EQ(ToString(analyzer.Simplify(LE(2 * n, 5))), "n <= 2");
  EXPECT_EQ(ToString(analyzer.Simplify(LT(5, 2 * n))), "n > 2");
  EXPECT_EQ(ToString(analyzer.Simplify(And(LT(i, 8), LT(n, m)))), "n < m");
  EXPECT_EQ(ToString(analyzer.Simplify(Or(LT(i, 0), LT(n, m)))), "n < m");
  EXPECT_EQ(ToString(analyzer.Simplify(Not(LT(n, m)))), "m <= n");
  EXPECT_EQ(ToString(analyzer.Simplify(Select(LE(0, n), n + 1, m))), "n + 1");
  EXPECT_EQ(ToString(analyzer.Simplify(Select(LT(n, m), n, n))), "n");
}

TEST(Analyzer, FoldsCastsOfConstantsAndLeavesFloatsAlone) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  EXPECT_EQ(ToString(analyzer.Simplify(Cast(DataType::Int32(), IntImm(DataType::Int64(), 5)))), "int32(5)");
  EXPECT_EQ(ToString(analyzer.Simplify(Cast(DataType::Int(8), IntImm(DataType::Int64(), 300)))), "int8(44)");
  EXPECT_EQ(ToString(analyzer.Simplify(Cast(DataType::Float32(), IntImm(DataType::Int64(), 2)))), "2.0");
  Var x("x", DataType::Float32());
  // Float arithmetic is not reassociated; integer parts inside it are simplified.
  PrimExpr e = (x + FloatImm(DataType::Float32(), 1)) - x;
  EXPECT_EQ(ToString(analyzer.Simplify(e)), "x + 1.0 - x");
  PrimExpr mixed = x * Cast(DataType::Float32(), n + n);
  EXPECT_EQ(ToString(analyzer.Simplify(mixed)), "x * cast(float32, 2 * n)");
  Buffer a("A", DataType::Float32(), {n});
  EXPECT_EQ(ToString(analyzer.Simplify(a.Load({n + 1 - 1}))), "A[n]");
}

TEST(Analyzer, SimplifiesInsideLetsVectorsCallsAndLoads) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var i("i", DataType::Int64(), 0, 7);
  Var t("t");
  // Inside the body t has the bound of its value, [1, 8].
  PrimExpr let = Let(t, i + 1, FloorDiv(t * 2 - t, 16) + t);
  EXPECT_EQ(ToString(analyzer.Simplify(let)), "let t = i + 1 in t");
  IntBound b = analyzer.ConstIntBound(Let(t, i + 1, t * 2));
  EXPECT_EQ(b.min, 2);
  EXPECT_EQ(b.max, 16);
  EXPECT_EQ(ToString(analyzer.Simplify(Ramp(n + 1 - 1, 2 * n - n, 4))), "ramp(n, n, 4)");
  b = analyzer.ConstIntBound(Ramp(i, 2, 4));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 13);
  EXPECT_EQ(ToString(analyzer.Simplify(Broadcast(i * 3 - i, 8))), "broadcast(2 * i, 8)");
  Var x("x", DataType::Float32());
  EXPECT_EQ(ToString(analyzer.Simplify(Call("exp", {x * Cast(DataType::Float32(), i - i + 2)}))), "exp(x * 2.0)");
}

TEST(Analyzer, SimplifiesNarrowIntegerTypes) {
  Analyzer analyzer;
  Var i("i", DataType::Int32());
  PrimExpr one = IntImm(DataType::Int32(), 1);
  PrimExpr s = analyzer.Simplify((i + one) * IntImm(DataType::Int32(), 2) - i);
  EXPECT_EQ(s.dtype(), DataType::Int32());
  EXPECT_EQ(ToString(s), "i + int32(2)");
}

// ---------------------------------------------------------------- bounds

TEST(Analyzer, ConstIntBoundFollowsVariableBounds) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var i("i", DataType::Int64(), 0, 7);
  Var k("k");
  IntBound b = analyzer.ConstIntBound(n);
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, IntBound::kPosInf);
  b = analyzer.ConstIntBound(2 * i + 1);
  EXPECT_EQ(b.min, 1);
  EXPECT_EQ(b.max, 15);
  b = analyzer.ConstIntBound(i - i);
  EXPECT_TRUE(b.is_const());
  EXPECT_EQ(b.min, 0);
  b = analyzer.ConstIntBound(FloorMod(k, 8));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 7);
  b = analyzer.ConstIntBound(FloorMod(k, -8));
  EXPECT_EQ(b.min, -7);
  EXPECT_EQ(b.max, 0);
  b = analyzer.ConstIntBound(FloorDiv(i, 2) - 5);
  EXPECT_EQ(b.min, -5);
  EXPECT_EQ(b.max, -2);
  b = analyzer.ConstIntBound(k);
  EXPECT_EQ(b.min, IntBound::kNegInf);
  EXPECT_EQ(b.max, IntBound::kPosInf);
  b = analyzer.ConstIntBound(Cast(DataType::Int(8), k));
  EXPECT_EQ(b.min, -128);
  EXPECT_EQ(b.max, 127);

  analyzer.Bind(n, 1, 100);
  b = analyzer.ConstIntBound(n * 4);
  EXPECT_EQ(b.min, 4);
  EXPECT_EQ(b.max, 400);
  analyzer.Bind(n, 50, 200);  // adds to the earlier fact: now [50, 100]
  b = analyzer.ConstIntBound(n);
  EXPECT_EQ(b.min, 50);
  EXPECT_EQ(b.max, 100);
  b = analyzer.ConstIntBound(Min(n, i));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 7);
  b = analyzer.ConstIntBound(LT(i, n));
  EXPECT_TRUE(b.is_const());
  EXPECT_EQ(b.min, 1);
}

TEST(Analyzer, ConstIntBoundSaturatesInsteadOfOverflowing) {
  Analyzer analyzer;
  Var big("big", DataType::Int64(), IntBound::kPosInf / 2, IntBound::kPosInf - 1);
  IntBound b = analyzer.ConstIntBound(big * 4);
  EXPECT_EQ(b.max, IntBound::kPosInf);
  EXPECT_GT(b.min, 0);
  b = analyzer.ConstIntBound(0 - big * 4);
  EXPECT_EQ(b.min, IntBound::kNegInf);
  EXPECT_LT(b.max, 0);
  b = analyzer.ConstIntBound(big + big);
  EXPECT_EQ(b.max, IntBound::kPosInf);
  Var n = Var::Shape("n");
  b = analyzer.ConstIntBound(n * -3);
  EXPECT_EQ(b.min, IntBound::kNegInf);
  EXPECT_EQ(b.max, 0);
}

// ---------------------------------------------------------------- proofs

TEST(Analyzer, ProvesWhatHoldsAndOnlyThat) {
  Analyzer analyzer;
  Var n = Var::Shape("n");
  Var m = Var::Shape("m");
  EXPECT_TRUE(analyzer.CanProveNotEqual(n, n + 1));
  EXPECT_TRUE(analyzer.CanProveLE(n, n + 1));
  EXPECT_TRUE(analyzer.CanProveLT(n, n + 1));
  EXPECT_FALSE(analyzer.CanProveLT(n, n));
  EXPECT_TRUE(analyzer.CanProveLE(n, n));
  EXPECT_TRUE(analyzer.CanProveEqual((n + 1) * 2, 2 * n + 2));
  EXPECT_TRUE(analyzer.CanProveEqual(FloorDiv(4 * n + 2, 2), 2 * n + 1));
  EXPECT_FALSE(analyzer.CanProveEqual(n, m));
  EXPECT_FALSE(analyzer.CanProveNotEqual(n, m));
  EXPECT_FALSE(analyzer.CanProveLE(n, m));
  EXPECT_FALSE(analyzer.CanProveLT(n, m));
  EXPECT_TRUE(analyzer.CanProveNotEqual(2 * n, 2 * m + 1));
  EXPECT_TRUE(analyzer.CanProveLE(0, n * m));
  EXPECT_TRUE(analyzer.CanProve(GE(n, 0)));
  EXPECT_FALSE(analyzer.CanProve(GE(n, 1)));
  EXPECT_TRUE(analyzer.CanProve(And(LE(n, n + m), LT(n, n + 1))));
  Var k("k");
  EXPECT_TRUE(analyzer.CanProveLE(Min(k, m), k));
  EXPECT_TRUE(analyzer.CanProveLE(k, Max(k, m)));
  EXPECT_TRUE(analyzer.CanProveLT(Min(k, m) + 1, k + 2));
  EXPECT_FALSE(analyzer.CanProveLE(Min(k, m), k - 1));
  // Mixed integer widths compare as int64; floats never prove an order.
  Var i("i", DataType::Int32(), 0, 10);
  EXPECT_TRUE(analyzer.CanProveLT(i, n + 11));
  Var x("x", DataType::Float32());
  EXPECT_FALSE(analyzer.CanProveLE(x, x));
  EXPECT_TRUE(analyzer.CanProveEqual(x + FloatImm(DataType::Float32(), 1), x + FloatImm(DataType::Float32(), 1)));

  analyzer.Bind(m, 1, 16);
  EXPECT_TRUE(analyzer.CanProveLE(m, 16));
  EXPECT_TRUE(analyzer.CanProveLT(FloorMod(n, m), 16));
  EXPECT_TRUE(analyzer.CanProveNotEqual(m, 0));
}

// ---------------------------------------------------------------- randomized

class RandomExprs {
 public:
  RandomExprs(uint32_t seed, std::vector<Var> vars) : rng_(seed), vars_(std::move(vars)) {}

  int64_t Uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  PrimExpr Int(int depth) {
    if (depth == 0 || Uniform(0, 9) < 2) {
      int64_t pick = Uniform(0, 9);
      if (pick < 6) return vars_[Uniform(0, static_cast<int64_t>(vars_.size()) - 1)];
      if (pick < 8) return Linear();
      return PrimExpr(Uniform(-6, 6));
    }
    switch (Uniform(0, 12)) {
      case 11: {
        // Division by an expression, which may be zero (such points are skipped).
        if (Uniform(0, 3) == 0) return Uniform(0, 1) == 0 ? FloorDiv(Int(depth - 1), Int(depth - 1))
                                                          : FloorMod(Int(depth - 1), Int(depth - 1));
        return Linear();
      }
      case 12: {
        // Split then fuse: c * floordiv(x, c) + floormod(x, c), sometimes scaled.
        PrimExpr x = Uniform(0, 1) == 0 ? Linear() : Int(depth - 1);
        PrimExpr c(Uniform(1, 9));
        PrimExpr k(Uniform(1, 3));
        return k * (FloorDiv(x, c) * c) + FloorMod(x, c) * k;
      }
      case 0: case 1: return Int(depth - 1) + Int(depth - 1);
      case 2: return Int(depth - 1) - Int(depth - 1);
      case 3: return Int(depth - 1) * PrimExpr(Uniform(-4, 4));
      case 4: return Int(depth - 1) * Int(depth - 1);
      case 5: return FloorDiv(Int(depth - 1), Divisor());
      case 6: return FloorMod(Int(depth - 1), Divisor());
      case 7: return Min(Int(depth - 1), Int(depth - 1));
      case 8: return Max(Int(depth - 1), Int(depth - 1));
      case 9: return Select(Bool(depth - 1), Int(depth - 1), Int(depth - 1));
      default: return Int(depth - 1) + PrimExpr(Uniform(-10, 10));
    }
  }

  // An index-like sum c1 * v1 + c2 * v2 + k, where floordiv/floormod have terms to split.
  PrimExpr Linear() {
    PrimExpr out(Uniform(-10, 10));
    for (const Var& v : vars_) {
      int64_t c = Uniform(-2, 8);
      if (c != 0) out = out + PrimExpr(c) * v;
    }
    return out;
  }

  PrimExpr Bool(int depth) {
    if (depth > 1 && Uniform(0, 4) == 0) {
      switch (Uniform(0, 2)) {
        case 0: return And(Bool(depth - 1), Bool(depth - 1));
        case 1: return Or(Bool(depth - 1), Bool(depth - 1));
        default: return Not(Bool(depth - 1));
      }
    }
    PrimExpr a = Int(depth > 0 ? depth - 1 : 0);
    PrimExpr b = Int(depth > 0 ? depth - 1 : 0);
    switch (Uniform(0, 5)) {
      case 0: return EQ(a, b);
      case 1: return NE(a, b);
      case 2: return LT(a, b);
      case 3: return LE(a, b);
      case 4: return GT(a, b);
      default: return GE(a, b);
    }
  }

 private:
  PrimExpr Divisor() {
    int64_t d = 0;
    while (d == 0) d = Uniform(-9, 9);
    return PrimExpr(d);
  }

  std::mt19937 rng_;
  std::vector<Var> vars_;
};

struct Sampled {
  Var var;
  int64_t lo;
  int64_t hi;
};

TEST(Analyzer, RandomExpressionsKeepTheirValues) {
  Var x("x", DataType::Int64(), 0, 15);
  Var y("y", DataType::Int64(), -7, 7);
  Var z("z", DataType::Int64(), -20, -3);
  Var n = Var::Shape("n");  // bounded below only; the analyzer learns an upper bound by Bind
  Analyzer analyzer;
  analyzer.Bind(n, 0, 40);
  std::vector<Sampled> vars = {{x, 0, 15}, {y, -7, 7}, {z, -20, -3}, {n, 0, 40}};

  RandomExprs gen(20261122, {x, y, z, n});
  std::mt19937 points(7);
  constexpr int kExprs = 5000;
  constexpr int kPoints = 24;
  int changed = 0;
  int evaluated = 0;
  for (int iter = 0; iter < kExprs; ++iter) {
    bool boolean = iter % 5 == 4;
    PrimExpr e = boolean ? gen.Bool(4) : gen.Int(4);
    PrimExpr s = analyzer.Simplify(e);
    ASSERT_EQ(s.dtype(), e.dtype()) << ToString(e);
    if (ToString(s) != ToString(e)) ++changed;
    IntBound bound = analyzer.ConstIntBound(e);
    IntBound simplified_bound = analyzer.ConstIntBound(s);
    PrimExpr other = gen.Int(2);
    bool le = !boolean && analyzer.CanProveLE(e, other);
    bool lt = !boolean && analyzer.CanProveLT(e, other);
    bool eq = !boolean && analyzer.CanProveEqual(e, other);
    bool ne = !boolean && analyzer.CanProveNotEqual(e, other);
    bool holds = boolean && analyzer.CanProve(e);
    for (int p = 0; p < kPoints; ++p) {
      Env env;
      for (const Sampled& v : vars) {
        // The ends of each range are the likeliest places for an off-by-one.
        int64_t pick = std::uniform_int_distribution<int64_t>(0, 5)(points);
        int64_t value = pick == 0 ? v.lo : pick == 1 ? v.hi
                                          : std::uniform_int_distribution<int64_t>(v.lo, v.hi)(points);
        env[v.var.get()] = value;
      }
      bool ok = true;
      int64_t before = Eval(e, env, &ok);
      if (!ok) continue;  // the input divides by zero or overflows at this point
      ++evaluated;
      bool ok_after = true;
      int64_t after = Eval(s, env, &ok_after);
      ASSERT_TRUE(ok_after) << ToString(e) << "\n  simplified to " << ToString(s);
      ASSERT_EQ(before, after) << ToString(e) << "\n  simplified to " << ToString(s);
      ASSERT_TRUE(bound.Contains(before)) << ToString(e) << " = " << before << " outside [" << bound.min << ", "
                                          << bound.max << "]";
      ASSERT_TRUE(simplified_bound.Contains(before)) << ToString(s) << " = " << before;
      if (boolean) {
        ASSERT_TRUE(!holds || before != 0) << "proved " << ToString(e);
        continue;
      }
      bool ok_other = true;
      int64_t o = Eval(other, env, &ok_other);
      if (!ok_other) continue;
      ASSERT_TRUE(!le || before <= o) << "proved " << ToString(e) << " <= " << ToString(other);
      ASSERT_TRUE(!lt || before < o) << "proved " << ToString(e) << " < " << ToString(other);
      ASSERT_TRUE(!eq || before == o) << "proved " << ToString(e) << " == " << ToString(other);
      ASSERT_TRUE(!ne || before != o) << "proved " << ToString(e) << " != " << ToString(other);
    }
  }
  // The test must actually exercise the simplifier.
  EXPECT_GT(changed, kExprs / 2);
  EXPECT_GT(evaluated, kExprs * kPoints / 2);
}

// Bit operations mixed with arithmetic: simplification keeps every value and the constant
// bounds contain it, shift amounts out of range included.
TEST(Analyzer, RandomBitOperationsKeepTheirValuesAndBounds) {
  Var x("x", DataType::Int64(), 0, 15);
  Var y("y", DataType::Int64(), -7, 7);
  Var z("z", DataType::Int64(), -300, 300);
  std::vector<Sampled> vars = {{x, 0, 15}, {y, -7, 7}, {z, -300, 300}};
  std::mt19937 rng(424242);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::function<PrimExpr(int)> gen = [&](int depth) -> PrimExpr {
    if (depth == 0 || uniform(0, 5) == 0) {
      switch (uniform(0, 4)) {
        case 0: return x;
        case 1: return y;
        case 2: return z;
        default: return PrimExpr(uniform(-40, 300));
      }
    }
    PrimExpr a = gen(depth - 1);
    switch (uniform(0, 9)) {
      case 0: return BitAnd(a, gen(depth - 1));
      case 1: return BitOr(a, gen(depth - 1));
      case 2: return BitXor(a, gen(depth - 1));
      case 3: return Shl(a, PrimExpr(uniform(-2, 70)));
      case 4: return Shr(a, PrimExpr(uniform(-2, 70)));
      case 5: return Shr(a, gen(depth - 1));
      case 6: return BitNot(a);
      case 7: return BitAnd(a, PrimExpr(uniform(0, 255)));
      case 8: return a + gen(depth - 1);
      default: return a * PrimExpr(uniform(-3, 3));
    }
  };
  Analyzer analyzer;
  int folded = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    PrimExpr e = gen(4);
    PrimExpr s = analyzer.Simplify(e);
    if (s.as_int()) ++folded;
    IntBound bound = analyzer.ConstIntBound(e);
    for (int p = 0; p < 16; ++p) {
      Env env;
      for (const Sampled& v : vars) env[v.var.get()] = uniform(v.lo, v.hi);
      bool ok = true;
      int64_t before = Eval(e, env, &ok);
      if (!ok) continue;
      bool ok_after = true;
      int64_t after = Eval(s, env, &ok_after);
      ASSERT_TRUE(ok_after) << ToString(e) << "\n  simplified to " << ToString(s);
      ASSERT_EQ(before, after) << ToString(e) << "\n  simplified to " << ToString(s);
      ASSERT_TRUE(bound.Contains(before)) << ToString(e) << " = " << before << " outside [" << bound.min << ", "
                                          << bound.max << "]";
    }
  }
  EXPECT_GT(folded, 10);
}

TEST(Analyzer, FoldsBitOperationsOfConstants) {
  Analyzer analyzer;
  Var x("x", DataType::Int64(), 0, 15);
  auto i8 = [](int64_t v) { return IntImm(DataType::Int(8), v); };
  auto u8 = [](int64_t v) { return IntImm(DataType::UInt(8), v); };
  EXPECT_EQ(ToString(analyzer.Simplify(BitAnd(PrimExpr(0xf0), PrimExpr(0x3c)))), "48");
  EXPECT_EQ(ToString(analyzer.Simplify(BitXor(PrimExpr(5), PrimExpr(3)))), "6");
  EXPECT_EQ(ToString(analyzer.Simplify(Shl(i8(1), i8(7)))), "int8(-128)");  // wraps: bits shifted out
  EXPECT_EQ(ToString(analyzer.Simplify(Shr(i8(-128), i8(3)))), "int8(-16)");  // arithmetic
  EXPECT_EQ(ToString(analyzer.Simplify(Shr(u8(200), u8(3)))), "uint8(25)");   // logical
  EXPECT_EQ(ToString(analyzer.Simplify(Shr(i8(-5), i8(9)))), "int8(-1)");     // out of range
  EXPECT_EQ(ToString(analyzer.Simplify(Shl(u8(3), u8(8)))), "uint8(0)");
  EXPECT_EQ(ToString(analyzer.Simplify(BitNot(u8(0x0f)))), "uint8(240)");
  EXPECT_EQ(ToString(analyzer.Simplify(BitNot(BitNot(x)))), "x");
  EXPECT_EQ(ToString(analyzer.Simplify(BitOr(x, PrimExpr(0)))), "x");
  EXPECT_EQ(ToString(analyzer.Simplify(Shl(x + 0, PrimExpr(0)))), "x");
  EXPECT_EQ(ToString(analyzer.Simplify(BitAnd(x, PrimExpr(0)))), "0");
  // x in [0, 15]: x & 7 is in [0, 7], x >> 2 in [0, 3], x | 16 in [16, 31], ~x in [-16, -1].
  IntBound masked = analyzer.ConstIntBound(BitAnd(x, PrimExpr(7)));
  EXPECT_EQ(masked.min, 0);
  EXPECT_EQ(masked.max, 7);
  IntBound shifted = analyzer.ConstIntBound(Shr(x, PrimExpr(2)));
  EXPECT_EQ(shifted.min, 0);
  EXPECT_EQ(shifted.max, 3);
  IntBound ored = analyzer.ConstIntBound(BitOr(x, PrimExpr(16)));
  EXPECT_EQ(ored.min, 16);
  EXPECT_EQ(ored.max, 31);
  IntBound flipped = analyzer.ConstIntBound(BitNot(x));
  EXPECT_EQ(flipped.min, -16);
  EXPECT_EQ(flipped.max, -1);
  EXPECT_TRUE(analyzer.CanProve(LT(BitAnd(x, PrimExpr(7)), PrimExpr(8))));
}

TEST(Analyzer, SimplifyIsIdempotentOnRandomExpressions) {
  Var x("x", DataType::Int64(), 0, 15);
  Var y("y", DataType::Int64(), -7, 7);
  Var n = Var::Shape("n");
  Analyzer analyzer;
  RandomExprs gen(99, {x, y, n});
  for (int iter = 0; iter < 1000; ++iter) {
    PrimExpr e = gen.Int(3);
    PrimExpr s = analyzer.Simplify(e);
    EXPECT_EQ(ToString(analyzer.Simplify(s)), ToString(s)) << ToString(e);
  }
}

}  // namespace
}  // namespace kiln::tir
