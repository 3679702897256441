#include "tir/structural_equal.h"

#include <cmath>
#include <limits>
#include <set>
#include <unordered_set>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tir/sample_prim_func.h"
#include "tir/structural_hash.h"

namespace kiln::tir {
namespace {

using test_ir::SamplePrimFunc;

const DataType kF32 = DataType::Float32();

// Equal both ways, hashes equal, and no diff.
void ExpectEqual(const PrimFunc& a, const PrimFunc& b) {
  EXPECT_TRUE(StructuralEqual(a, b)) << StructuralDiff(a, b);
  EXPECT_TRUE(StructuralEqual(b, a)) << StructuralDiff(b, a);
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  EXPECT_EQ(StructuralDiff(a, b), "");
}

void ExpectNotEqual(const PrimFunc& a, const PrimFunc& b) {
  EXPECT_FALSE(StructuralEqual(a, b));
  EXPECT_FALSE(StructuralEqual(b, a));
  EXPECT_NE(StructuralDiff(a, b), "");
}

PrimFunc ScalarFunc(std::vector<Var> params, Stmt body) {
  std::vector<PrimFuncParam> p;
  for (Var& v : params) p.push_back({Buffer(), std::move(v)});
  return PrimFunc(std::move(p), std::move(body));
}

TEST(StructuralEqual, AlphaEquivalentFunctionsAreEqual) {
  PrimFunc f = SamplePrimFunc("");
  PrimFunc g = SamplePrimFunc("_renamed");
  ExpectEqual(f, g);
  ExpectEqual(f, f);
  // The bodies alone are not equal: their buffers and parameters are free there, and
  // free things compare by identity.
  EXPECT_FALSE(StructuralEqual(f->body, g->body));
  EXPECT_TRUE(StructuralEqual(f->body, f->body));
}

TEST(StructuralEqual, SwappedUsesDiffer) {
  Var x("x"), y("y"), a("a"), b("b");
  ExpectEqual(ScalarFunc({x, y}, Evaluate(x - y)), ScalarFunc({a, b}, Evaluate(a - b)));
  ExpectNotEqual(ScalarFunc({x, y}, Evaluate(x - y)), ScalarFunc({a, b}, Evaluate(b - a)));
}

TEST(StructuralEqual, MappingIsOneToOne) {
  Var i("i"), j("j"), a("a"), b("b");
  auto loops = [](Var outer, Var inner, PrimExpr value) {
    return For(outer, 0, 8, ForKind::kSerial, For(inner, 0, 8, ForKind::kSerial, Evaluate(value)));
  };
  // x -> a, then x meets b.
  EXPECT_FALSE(StructuralEqual(loops(i, j, i + i), loops(a, b, a + b)));
  EXPECT_TRUE(StructuralEqual(loops(i, j, i + j), loops(a, b, a + b)));
  // Two lhs variables onto one rhs variable (redefined in the inner loop).
  EXPECT_FALSE(StructuralEqual(loops(i, j, i + j), loops(a, a, a + a)));
  EXPECT_FALSE(StructuralEqual(loops(a, a, a + a), loops(i, j, i + j)));
}

TEST(StructuralEqual, FreeVariablesCompareByIdentity) {
  Var n("n"), other_n("n");
  EXPECT_TRUE(StructuralEqual(n + 1, n + 1));
  EXPECT_FALSE(StructuralEqual(n + 1, other_n + 1));
  // A bound variable never equals a free one.
  Var i("i");
  EXPECT_FALSE(StructuralEqual(For(i, 0, 4, ForKind::kSerial, Evaluate(n)),
                               For(n, 0, 4, ForKind::kSerial, Evaluate(n))));
  EXPECT_FALSE(StructuralEqual(For(i, 0, 4, ForKind::kSerial, Evaluate(n)),
                               For(i, 0, 4, ForKind::kSerial, Evaluate(i))));
  // Free variables hash by name and dtype, so hashes are stable across runs.
  EXPECT_EQ(StructuralHash(n + 1), StructuralHash(other_n + 1));
}

TEST(StructuralEqual, SymbolicShapesOfParametersAreDefinitions) {
  auto func = [](std::vector<std::vector<PrimExpr>> shapes) {
    std::vector<PrimFuncParam> params;
    for (auto& shape : shapes) params.push_back({Buffer("A", kF32, std::move(shape)), Var()});
    return PrimFunc(std::move(params), Evaluate(0));
  };
  Var n = Var::Shape("n"), m = Var::Shape("m"), p = Var::Shape("p"), q = Var::Shape("q");
  ExpectEqual(func({{n, m}}), func({{p, q}}));
  ExpectNotEqual(func({{n, n}}), func({{p, q}}));
  ExpectNotEqual(func({{n, m}}), func({{p, p}}));
  ExpectEqual(func({{n, m}, {m}}), func({{p, q}, {q}}));
  ExpectNotEqual(func({{n, m}, {m}}), func({{p, q}, {p}}));
  ExpectEqual(func({{n * 2 + 1}}), func({{p * 2 + 1}}));
  ExpectNotEqual(func({{n * 2}}), func({{p * 3}}));
}

TEST(StructuralEqual, BoundsAndTypesOfDefinitionsMatter) {
  Var n = Var::Shape("n", 4096), p = Var::Shape("p", 4096), q = Var::Shape("q", 2048);
  Var unbounded = Var::Shape("u");
  Var i32("w", DataType::Int32());
  ExpectEqual(ScalarFunc({n}, Evaluate(n)), ScalarFunc({p}, Evaluate(p)));
  ExpectNotEqual(ScalarFunc({n}, Evaluate(n)), ScalarFunc({q}, Evaluate(q)));
  ExpectNotEqual(ScalarFunc({n}, Evaluate(n)), ScalarFunc({unbounded}, Evaluate(unbounded)));
  ExpectNotEqual(ScalarFunc({Var("x")}, Evaluate(0)), ScalarFunc({i32}, Evaluate(0)));
  EXPECT_NE(StructuralHash(ScalarFunc({n}, Evaluate(n))), StructuralHash(ScalarFunc({q}, Evaluate(q))));
}

TEST(StructuralEqual, BuffersMapAtTheirDefinition) {
  Var i("i");
  Buffer a("A", kF32, {4}, {}, "local"), b("B", kF32, {4}, {}, "local"), c("C", kF32, {4}, {}, "shared");
  auto body = [&](const Buffer& buf) {
    return Allocate(buf, For(i, 0, 4, ForKind::kSerial, BufferStore(buf, FloatImm(kF32, 1.0), {i})));
  };
  EXPECT_TRUE(StructuralEqual(body(a), body(b)));  // names do not matter
  EXPECT_EQ(StructuralHash(body(a)), StructuralHash(body(b)));
  EXPECT_FALSE(StructuralEqual(body(a), body(c)));  // scope does
  // A store to a buffer defined elsewhere (free) compares by identity.
  Stmt free_a = BufferStore(a, FloatImm(kF32, 1.0), {0});
  Stmt free_b = BufferStore(b, FloatImm(kF32, 1.0), {0});
  EXPECT_FALSE(StructuralEqual(free_a, free_b));
  EXPECT_TRUE(StructuralEqual(free_a, free_a));
}

TEST(StructuralEqual, ValuesAttributesAndKindsMatter) {
  Var x("x");
  EXPECT_FALSE(StructuralEqual(x + 1, x + 2));
  EXPECT_FALSE(StructuralEqual(x + 1, x - 1));
  EXPECT_FALSE(StructuralEqual(IntImm(DataType::Int32(), 1), IntImm(DataType::Int64(), 1)));
  EXPECT_FALSE(StructuralEqual(Ramp(x, 1, 4), Ramp(x, 1, 8)));
  EXPECT_FALSE(StructuralEqual(Call("exp", {FloatImm(kF32, 1)}), Call("log", {FloatImm(kF32, 1)})));
  // Floats compare by bits.
  EXPECT_FALSE(StructuralEqual(FloatImm(kF32, 0.0), FloatImm(kF32, -0.0)));
  PrimExpr nan = FloatImm(kF32, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(StructuralEqual(nan, FloatImm(kF32, std::numeric_limits<double>::quiet_NaN())));
  // Block names, loop kinds, thread tags and function attributes.
  PrimFunc f = SamplePrimFunc("");
  ExpectNotEqual(f, PrimFunc(f->params, f->body, {{"op_pattern", "elementwise"}}));
  ExpectNotEqual(f, PrimFunc(f->params, f->body));
  Var i("i"), j("j");
  EXPECT_FALSE(StructuralEqual(For(i, 0, 4, ForKind::kSerial, Evaluate(i)),
                               For(j, 0, 4, ForKind::kUnrolled, Evaluate(j))));
  EXPECT_FALSE(StructuralEqual(For(i, 0, 4, ForKind::kThreadBinding, Evaluate(i), "threadIdx.x"),
                               For(j, 0, 4, ForKind::kThreadBinding, Evaluate(j), "threadIdx.y")));
  EXPECT_FALSE(StructuralEqual(Block("a", {}, Evaluate(0)), Block("b", {}, Evaluate(0))));
  EXPECT_FALSE(StructuralEqual(IfThenElse(EQ(x, 0), Evaluate(0)),
                               IfThenElse(EQ(x, 0), Evaluate(0), Evaluate(1))));
}

TEST(StructuralEqual, DiffSaysWhere) {
  Var x("x"), y("y"), a("a"), b("b");
  PrimFunc f = ScalarFunc({x, y}, SeqStmt({Evaluate(x), Evaluate(x - y)}));
  PrimFunc g = ScalarFunc({a, b}, SeqStmt({Evaluate(a), Evaluate(a - a)}));
  std::string diff = StructuralDiff(f, g);
  EXPECT_NE(diff.find("body.seq[1].value.b:"), std::string::npos) << diff;
  EXPECT_NE(diff.find("y"), std::string::npos) << diff;
}

TEST(StructuralHash, DistinctObjectsHashDistinctly) {
  Var x("x"), y("y");
  std::vector<PrimExpr> exprs = {
      x, y, x + 1, x + 2, 1 + x, x - 1, x * 2, FloorDiv(x, 2), FloorMod(x, 2), Min(x, 2), Max(x, 2),
      LT(x, 2), LE(x, 2), EQ(x, 2), NE(x, 2), GT(x, 2), GE(x, 2), Not(LT(x, 2)), And(LT(x, 2), GT(y, 1)),
      Or(LT(x, 2), GT(y, 1)), Select(LT(x, 2), x, y), Cast(DataType::Int32(), x), Cast(kF32, x),
      FloatImm(kF32, 1.0), FloatImm(kF32, 2.0), FloatImm(DataType::Float(64), 1.0), IntImm(DataType::Int32(), 1),
      Ramp(x, 1, 4), Ramp(x, 1, 8), Broadcast(x, 4), Let(Var("t"), x, Var("u") + 1), Call("exp", {Cast(kF32, x)}),
      PrimExpr(0), PrimExpr(1), PrimExpr(-1), BitAnd(x, y), BitOr(x, y), BitXor(x, y), Shl(x, y), Shr(x, y),
      Shr(y, x), BitNot(x), BitNot(y), Reinterpret(kF32.with_lanes(2), x), Reinterpret(DataType::UInt(64), x)};
  std::set<uint64_t> hashes;
  for (size_t i = 0; i < exprs.size(); ++i) {
    hashes.insert(StructuralHash(exprs[i]));
    for (size_t j = 0; j < exprs.size(); ++j) {
      EXPECT_EQ(StructuralEqual(exprs[i], exprs[j]), i == j) << ToString(exprs[i]) << " vs " << ToString(exprs[j]);
    }
  }
  EXPECT_EQ(hashes.size(), exprs.size());
}

}  // namespace
}  // namespace kiln::tir

namespace kiln::tir {
namespace {

TEST(StructuralHash, KeysHashContainers) {
  std::unordered_set<PrimFunc, StructuralHashFn, StructuralEqualFn> funcs;
  funcs.insert(test_ir::SamplePrimFunc("a"));
  funcs.insert(test_ir::SamplePrimFunc("b"));
  Var x("x");
  funcs.insert(PrimFunc({{Buffer(), x}}, Evaluate(x)));
  EXPECT_EQ(funcs.size(), 2u);
}

}  // namespace
}  // namespace kiln::tir
