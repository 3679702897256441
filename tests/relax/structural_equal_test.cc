#include "relax/structural_equal.h"

#include <set>
#include <unordered_set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "relax/structural_hash.h"
#include "tests/relax/sample_function.h"
#include "tir/stmt.h"

namespace kiln::relax {
namespace {

using test_ir::SampleConstant;
using test_ir::SampleFunction;

const DataType kF32 = DataType::Float32();

void ExpectEqual(const Expr& a, const Expr& b) {
  EXPECT_TRUE(StructuralEqual(a, b)) << StructuralDiff(a, b);
  EXPECT_TRUE(StructuralEqual(b, a)) << StructuralDiff(b, a);
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  EXPECT_EQ(StructuralDiff(a, b), "");
}

void ExpectNotEqual(const Expr& a, const Expr& b) {
  EXPECT_FALSE(StructuralEqual(a, b));
  EXPECT_FALSE(StructuralEqual(b, a));
  EXPECT_NE(StructuralDiff(a, b), "");
}

Expr Add(Expr a, Expr b) { return Call(Op("add"), {std::move(a), std::move(b)}); }

// fn(params) { body } with no bindings.
Expr Fn(std::vector<Var> params, Expr body, StructInfo ret = ObjectSInfo()) {
  return Function(std::move(params), SeqExpr({}, std::move(body)), std::move(ret), true);
}

TEST(StructuralEqual, AlphaEquivalentFunctionsAreEqual) {
  Expr f = SampleFunction("");
  Expr g = SampleFunction("_renamed");
  ExpectEqual(f, g);
  ExpectEqual(f, f);
}

TEST(StructuralEqual, SwappedUsesDiffer) {
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t), y("y", t), a("a", t), b("b", t);
  ExpectEqual(Fn({x, y}, Add(x, y)), Fn({a, b}, Add(a, b)));
  ExpectNotEqual(Fn({x, y}, Add(x, y)), Fn({a, b}, Add(b, a)));
}

TEST(StructuralEqual, MappingIsOneToOne) {
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t), y("y", t), a("a", t), b("b", t);
  // x -> a, then x meets b.
  ExpectNotEqual(Fn({x, y}, Add(x, x)), Fn({a, b}, Add(a, b)));
  // x -> a and y -> a.
  ExpectNotEqual(Fn({x, y}, Add(x, y)), Fn({a, a}, Add(a, a)));
  // Bindings map too.
  Var lv("lv", t), lw("lw", t);
  Expr lhs = Function({x}, SeqExpr({{{{lv, Add(x, x), StructInfo()}, {lw, Add(lv, x), StructInfo()}}, false}}, lw),
                      t, true);
  Var u("u", t), v("v", t);
  Expr same = Function({a}, SeqExpr({{{{u, Add(a, a), StructInfo()}, {v, Add(u, a), StructInfo()}}, false}}, v),
                       t, true);
  Expr swapped = Function({a}, SeqExpr({{{{u, Add(a, a), StructInfo()}, {v, Add(a, u), StructInfo()}}, false}}, v),
                          t, true);
  ExpectEqual(lhs, same);
  ExpectNotEqual(lhs, swapped);
}

TEST(StructuralEqual, FreeVariablesCompareByIdentity) {
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t), y("y", t), other_x("x", t);
  EXPECT_TRUE(StructuralEqual(Add(x, y), Add(x, y)));
  EXPECT_FALSE(StructuralEqual(Add(x, y), Add(other_x, y)));
  // A parameter (bound) never equals a free variable.
  Var p("p", t);
  ExpectNotEqual(Fn({p}, Add(p, x)), Fn({p}, Add(p, p)));
  ExpectEqual(Fn({p}, Add(p, x)), Fn({y}, Add(y, x)));
}

TEST(StructuralEqual, SymbolicVariablesOfParametersAreRenamedConsistently) {
  tir::Var n = tir::Var::Shape("n"), m = tir::Var::Shape("m"), p = tir::Var::Shape("p"), q = tir::Var::Shape("q");
  auto fn = [](std::vector<PrimExpr> shape, StructInfo ret = ObjectSInfo()) {
    Var x("x", TensorSInfo(std::move(shape), DataType::Float32()));
    return Fn({x}, x, std::move(ret));
  };
  ExpectEqual(fn({n, m}), fn({p, q}));
  ExpectNotEqual(fn({n, n}), fn({p, q}));
  ExpectNotEqual(fn({n, m}), fn({p, p}));
  // Later mentions follow the mapping.
  ExpectEqual(fn({n, m}, ShapeSInfo({n, m})), fn({p, q}, ShapeSInfo({p, q})));
  ExpectNotEqual(fn({n, m}, ShapeSInfo({n, m})), fn({p, q}, ShapeSInfo({q, p})));
  // Across parameters.
  Var x1("x", TensorSInfo({n, m}, kF32)), y1("y", TensorSInfo({m}, kF32));
  Var x2("x", TensorSInfo({p, q}, kF32)), y2("y", TensorSInfo({q}, kF32)), y3("y", TensorSInfo({p}, kF32));
  ExpectEqual(Fn({x1, y1}, Add(x1, y1)), Fn({x2, y2}, Add(x2, y2)));
  ExpectNotEqual(Fn({x1, y1}, Add(x1, y1)), Fn({x2, y3}, Add(x2, y3)));
  // Standalone struct info is not a definition site: its variables are free.
  EXPECT_FALSE(StructuralEqual(TensorSInfo({n, m}, kF32), TensorSInfo({p, q}, kF32)));
  EXPECT_TRUE(StructuralEqual(TensorSInfo({n, m}, kF32), TensorSInfo({n, m}, kF32)));
  // A Func signature's parameters are.
  EXPECT_TRUE(StructuralEqual(FuncSInfo({TensorSInfo({n}, kF32)}, TensorSInfo({n}, kF32), true),
                              FuncSInfo({TensorSInfo({p}, kF32)}, TensorSInfo({p}, kF32), true)));
  EXPECT_FALSE(StructuralEqual(FuncSInfo({TensorSInfo({n}, kF32)}, TensorSInfo({n}, kF32), true),
                               FuncSInfo({TensorSInfo({p}, kF32)}, TensorSInfo({q}, kF32), true)));
}

TEST(StructuralEqual, SymbolicBoundsMatter) {
  tir::Var n = tir::Var::Shape("n", 4096), p = tir::Var::Shape("p", 4096), q = tir::Var::Shape("q", 2048);
  tir::Var u = tir::Var::Shape("u");
  auto fn = [](const tir::Var& dim) {
    Var x("x", TensorSInfo({dim}, DataType::Float32()));
    return Fn({x}, x);
  };
  ExpectEqual(fn(n), fn(p));
  ExpectNotEqual(fn(n), fn(q));
  ExpectNotEqual(fn(n), fn(u));
  EXPECT_NE(StructuralHash(fn(n)), StructuralHash(fn(q)));
}

TEST(StructuralEqual, MatchCastDefinesSymbolicVariables) {
  auto fn = [](const tir::Var& defined, const tir::Var& used) {
    Var x("x", TensorSInfoOfNdim(1, DataType::Float32()));
    Var z("z", TensorSInfo({defined}, DataType::Float32()));
    Var s("s", ShapeSInfo({used}));
    Binding cast{z, x, TensorSInfo({defined}, DataType::Float32())};
    Binding shape{s, ShapeExpr({used}), StructInfo()};
    return Function({x}, SeqExpr({{{cast, shape}, false}}, s), ShapeSInfoOfNdim(1), true);
  };
  tir::Var k = tir::Var::Shape("k"), j = tir::Var::Shape("j"), other = tir::Var::Shape("other");
  ExpectEqual(fn(k, k), fn(j, j));
  ExpectNotEqual(fn(k, k), fn(j, other));
  // A plain binding's annotation is not a definition site.
  Var x("x", TensorSInfoOfNdim(1, kF32));
  auto plain = [&](const tir::Var& dim) {
    Var z("z", TensorSInfo({dim}, kF32));
    return Function({x}, SeqExpr({{{{z, x, StructInfo()}}, false}}, z), ObjectSInfo(), true);
  };
  ExpectNotEqual(plain(k), plain(j));
  ExpectEqual(plain(k), plain(k));
}

TEST(StructuralEqual, StructInfoKindsAndPresenceMatter) {
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t);
  // Undefined vs defined struct info differs.
  ExpectNotEqual(Tuple({x}), Tuple({x}, TupleSInfo({t})));
  ExpectEqual(Tuple({x}), Tuple({x}));
  ExpectNotEqual(Tuple({x}, TupleSInfo({t})), Tuple({x}, TupleSInfo({ObjectSInfo()})));
  // Var vs DataflowVar.
  Var dv("dv", t, true), v("v", t);
  ExpectNotEqual(Function({x}, SeqExpr({{{{dv, x, StructInfo()}}, true}}, x), t, true),
                 Function({x}, SeqExpr({{{{v, x, StructInfo()}}, true}}, x), t, true));
  // The binding's own struct info.
  Var w("w", TensorSInfo({4}, DataType::Float(16)));
  ExpectNotEqual(Function({x}, SeqExpr({{{{v, x, StructInfo()}}, false}}, x), t, true),
                 Function({x}, SeqExpr({{{{w, x, StructInfo()}}, false}}, x), t, true));
  EXPECT_FALSE(StructuralEqual(TensorSInfo({4}, kF32), TensorSInfo({4}, kF32, "cuda:0")));
  EXPECT_FALSE(StructuralEqual(TensorSInfoOfNdim(2, kF32), TensorSInfo({4, 4}, kF32)));
  EXPECT_FALSE(StructuralEqual(TensorSInfoOfNdim(2, kF32), TensorSInfoOfNdim(2, std::nullopt)));
  EXPECT_FALSE(StructuralEqual(FuncSInfo({t}, t, true), FuncSInfo({t}, t, false)));
  EXPECT_FALSE(StructuralEqual(FuncSInfo({t}, t, true), OpaqueFuncSInfo(t, true)));
  EXPECT_TRUE(StructuralEqual(PrimSInfo(DataType::Int64(), 3), PrimSInfo(DataType::Int64(), 3)));
  EXPECT_FALSE(StructuralEqual(PrimSInfo(DataType::Int64(), 3), PrimSInfo(DataType::Int64())));
}

TEST(StructuralEqual, LeavesAndAttributes) {
  EXPECT_TRUE(StructuralEqual(SampleConstant({1, 2}), SampleConstant({1, 2})));
  EXPECT_FALSE(StructuralEqual(SampleConstant({1, 2}), SampleConstant({1, 3})));
  EXPECT_TRUE(StructuralEqual(GlobalVar("f"), GlobalVar("f")));
  EXPECT_FALSE(StructuralEqual(GlobalVar("f"), GlobalVar("g")));
  EXPECT_FALSE(StructuralEqual(Op("add"), Op("subtract")));
  EXPECT_FALSE(StructuralEqual(ExternFunc("a"), ExternFunc("b")));
  EXPECT_FALSE(StructuralEqual(StringImm("a"), StringImm("b")));
  EXPECT_FALSE(StructuralEqual(PrimValue(1), PrimValue(2)));
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t);
  auto call = [&](Attrs attrs) { return Call(Op("sum"), {x}, std::move(attrs)); };
  EXPECT_TRUE(StructuralEqual(call({{"axis", int64_t{1}}}), call({{"axis", int64_t{1}}})));
  EXPECT_FALSE(StructuralEqual(call({{"axis", int64_t{1}}}), call({{"axis", int64_t{0}}})));
  EXPECT_FALSE(StructuralEqual(call({{"axis", int64_t{1}}}), call({{"axes", int64_t{1}}})));
  EXPECT_FALSE(StructuralEqual(call({{"axis", int64_t{1}}}), call({{"axis", 1.0}})));
  EXPECT_FALSE(StructuralEqual(call({{"eps", 0.0}}), call({{"eps", -0.0}})));
  EXPECT_FALSE(StructuralEqual(call({{"axis", int64_t{1}}}), call({})));
  EXPECT_FALSE(StructuralEqual(call({{"axes", std::vector<int64_t>{0, 1}}}), call({{"axes", std::vector<int64_t>{1, 0}}})));
  EXPECT_FALSE(StructuralEqual(Call(Op("call_tir"), {x}, {}, {t}), Call(Op("call_tir"), {x}, {}, {ObjectSInfo()})));
  EXPECT_FALSE(StructuralEqual(TupleGetItem(x, 0), TupleGetItem(x, 1)));
}

TEST(StructuralEqual, DiffSaysWhere) {
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t), y("y", t), a("a", t), b("b", t);
  std::string diff = StructuralDiff(Fn({x, y}, Add(x, y)), Fn({a, b}, Add(b, a)));
  EXPECT_NE(diff.find("body.body.args[0]:"), std::string::npos) << diff;
}

tir::PrimFunc Kernel(const std::string& s) {
  tir::Var n = tir::Var::Shape("n" + s), i("i" + s);
  tir::Buffer a("A" + s, kF32, {n});
  return tir::PrimFunc({{a, tir::Var()}},
                       tir::For(i, 0, n, tir::ForKind::kSerial, tir::BufferStore(a, tir::FloatImm(kF32, 0.0), {i})));
}

IRModule Module(const std::string& s, bool reversed) {
  IRModule module;
  std::vector<std::pair<std::string, BaseFunc>> entries = {{"main", SampleFunction(s)}, {"kernel", Kernel(s)}};
  if (reversed) std::swap(entries[0], entries[1]);
  for (auto& [name, func] : entries) EXPECT_TRUE(module.Add(name, func).ok());
  return module;
}

TEST(StructuralEqual, ModulesCompareByName) {
  IRModule a = Module("", false);
  IRModule b = Module("_other", true);
  EXPECT_TRUE(StructuralEqual(a, b)) << StructuralDiff(a, b);
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  EXPECT_EQ(StructuralDiff(a, b), "");

  IRModule renamed = Module("", false);
  renamed.Remove("kernel");
  ASSERT_TRUE(renamed.Add("kernel2", Kernel("")).ok());
  EXPECT_FALSE(StructuralEqual(a, renamed));
  EXPECT_NE(StructuralDiff(a, renamed).find("'kernel'"), std::string::npos) << StructuralDiff(a, renamed);

  IRModule changed = Module("", false);
  tir::Var i("i");
  tir::Buffer out("A", kF32, {8});
  changed.Update("kernel", tir::PrimFunc({{out, tir::Var()}}, tir::Evaluate(0)));
  EXPECT_FALSE(StructuralEqual(a, changed));
  EXPECT_NE(StructuralDiff(a, changed).find("module['kernel']"), std::string::npos) << StructuralDiff(a, changed);

  IRModule missing = Module("", false);
  missing.Remove("main");
  EXPECT_FALSE(StructuralEqual(a, missing));
  EXPECT_FALSE(StructuralEqual(missing, a));
  EXPECT_NE(StructuralHash(a), StructuralHash(missing));
}

TEST(StructuralHash, DistinctObjectsHashDistinctly) {
  StructInfo t = TensorSInfo({4}, kF32);
  Var x("x", t), y("y", t);
  tir::Var n = tir::Var::Shape("n");
  std::vector<Expr> exprs = {
      x, y, Var("x", t, true), Add(x, y), Add(y, x), Add(x, x), Call(Op("multiply"), {x, y}),
      Call(Op("sum"), {x}, {{"axis", int64_t{0}}}), Call(Op("sum"), {x}, {{"axis", int64_t{1}}}),
      Tuple({x, y}), Tuple({y, x}), Tuple({x}), Tuple({}), TupleGetItem(x, 0), TupleGetItem(x, 1),
      ShapeExpr({4}), ShapeExpr({n}), ShapeExpr({4, 4}), PrimValue(1), PrimValue(2), StringImm("a"), StringImm("b"),
      SampleConstant({1}), SampleConstant({2}), SampleConstant({1, 1}), GlobalVar("f"), GlobalVar("g"), Op("add"),
      ExternFunc("f"), Fn({x}, x), Fn({x, y}, x), Fn({x, y}, y), Fn({x}, Add(x, x)), SampleFunction(""),
      If(PrimValue(tir::IntImm(DataType::Bool(), 1)), SeqExpr({}, x), SeqExpr({}, y))};
  std::set<uint64_t> hashes;
  for (size_t i = 0; i < exprs.size(); ++i) {
    hashes.insert(StructuralHash(exprs[i]));
    for (size_t j = 0; j < exprs.size(); ++j) {
      EXPECT_EQ(StructuralEqual(exprs[i], exprs[j]), i == j) << i << " vs " << j << ": "
                                                             << StructuralDiff(exprs[i], exprs[j]);
    }
  }
  EXPECT_EQ(hashes.size(), exprs.size());

  std::vector<StructInfo> sinfos = {ObjectSInfo(), PrimSInfo(DataType::Int64()), PrimSInfo(DataType::Int32()),
                                    ShapeSInfo({4}), ShapeSInfoOfNdim(1), ShapeSInfoOfNdim(kUnknownNdim), t,
                                    TensorSInfo({4}, std::nullopt), TensorSInfoOfNdim(1, kF32), TupleSInfo({t}),
                                    TupleSInfo({t, t}), FuncSInfo({t}, t, true), OpaqueFuncSInfo(t, true)};
  std::set<uint64_t> sinfo_hashes;
  for (const StructInfo& s : sinfos) sinfo_hashes.insert(StructuralHash(s));
  EXPECT_EQ(sinfo_hashes.size(), sinfos.size());
}

}  // namespace
}  // namespace kiln::relax

namespace kiln::relax {
namespace {

TEST(StructuralHash, KeysHashContainers) {
  std::unordered_set<Expr, StructuralHashFn, StructuralEqualFn> exprs;
  exprs.insert(test_ir::SampleFunction("a"));
  exprs.insert(test_ir::SampleFunction("b"));
  exprs.insert(GlobalVar("f"));
  exprs.insert(GlobalVar("f"));
  EXPECT_EQ(exprs.size(), 2u);
  // The Relax functors take TIR objects too.
  tir::Var n("n");
  EXPECT_TRUE(StructuralEqualFn()(PrimExpr(n + 1), PrimExpr(n + 1)));
  EXPECT_EQ(StructuralHashFn()(PrimExpr(n + 1)), StructuralHashFn()(PrimExpr(n + 1)));
}

}  // namespace
}  // namespace kiln::relax
