#include "relax/block_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "relax/struct_info_functions.h"
#include "relax/text_parser.h"
#include "relax/well_formed.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;

const DataType f32 = DataType::Float32();

std::string SInfo(const Expr& e) { return ToString(e.struct_info()); }
std::string Error(const absl::Status& s) { return std::string(s.message()); }

// Normalizes `module { func @main(PARAMS) { y = CALL  return y } REST` (REST ends the
// module: its PrimFuncs and the closing brace), read as the file c.kir.
absl::Status NormalizeMainCall(const std::string& params, const std::string& call, const std::string& rest) {
  std::string text =
      absl::StrCat("module {\n  func @main(", params, ") {\n    y = ", call, "\n    return y\n  }\n", rest);
  absl::StatusOr<ParsedModule> parsed = ParseModule(text, "c.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? NormalizeModule(parsed->module, &parsed->locations).status() : parsed.status();
}

Expr Add(Expr a, Expr b) { return Call(Op("add"), {std::move(a), std::move(b)}); }
Expr Matmul(Expr a, Expr b) { return Call(Op("matmul"), {std::move(a), std::move(b)}); }

// --- struct info relations ---

TEST(StructInfoFunctionsTest, BaseOfAndJoin) {
  tir::Analyzer analyzer;
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  StructInfo exact = TensorSInfo({n, 4}, f32);
  EXPECT_EQ(CheckBaseOf(TensorSInfoOfNdim(2, f32), exact, analyzer), BaseCheck::kYes);
  EXPECT_EQ(CheckBaseOf(exact, TensorSInfoOfNdim(2, f32), analyzer), BaseCheck::kMaybe);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n, 5}, f32), exact, analyzer), BaseCheck::kNo);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({m, 4}, f32), exact, analyzer), BaseCheck::kMaybe);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n, 4}, DataType::Int32()), exact, analyzer), BaseCheck::kNo);
  EXPECT_EQ(CheckBaseOf(ObjectSInfo(), exact, analyzer), BaseCheck::kYes);
  EXPECT_EQ(CheckBaseOf(TupleSInfo({exact}), TupleSInfo({exact, exact}), analyzer), BaseCheck::kNo);

  EXPECT_EQ(ToString(Join(exact, TensorSInfo({n, 4}, f32), analyzer)), "Tensor((n, 4), float32)");
  EXPECT_EQ(ToString(Join(exact, TensorSInfo({m, 4}, f32), analyzer)), "Tensor(ndim=2, float32)");
  EXPECT_EQ(ToString(Join(exact, TensorSInfo({n}, DataType::Int32()), analyzer)), "Tensor");
  EXPECT_EQ(ToString(Join(exact, ShapeSInfo({n}), analyzer)), "Object");
  EXPECT_EQ(ToString(Join(TupleSInfo({exact, PrimSInfo(f32)}), TupleSInfo({exact, PrimSInfo(f32)}),
                          analyzer)),
            "Tuple(Tensor((n, 4), float32), Prim(float32))");
}

TEST(StructInfoFunctionsTest, VariablesAndErasure) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  tir::Var t("t");
  std::vector<tir::Var> vars;
  CollectVars(tir::Let(t, n, t + m), &vars);  // t is bound, not free
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_TRUE(vars[0].same_as(n));
  EXPECT_TRUE(vars[1].same_as(m));
  StructInfo sinfo = TupleSInfo({TensorSInfo({n, m + 1}, f32), PrimSInfo(DataType::Int64(), m)});
  EXPECT_EQ(DefinableVars(sinfo).size(), 2u);  // n (a bare dim) and m (a bare Prim value)
  EXPECT_EQ(CollectVars(TensorSInfo({m + 1}, f32)).size(), 1u);
  EXPECT_TRUE(DefinableVars(TensorSInfo({m + 1}, f32)).empty());
  EXPECT_EQ(ToString(EraseUndefinedVars(sinfo, {n.get()})), "Tuple(Tensor(ndim=2, float32), Prim(int64))");
  EXPECT_EQ(ToString(EraseUndefinedVars(sinfo, {n.get(), m.get()})), ToString(sinfo));
  tir::Analyzer analyzer;
  EXPECT_EQ(ToString(Substitute(sinfo, {{n.get(), PrimExpr(3)}, {m.get(), PrimExpr(4)}}, analyzer)),
            "Tuple(Tensor((3, 5), float32), Prim(int64, value=4))");
}

// --- builder ---

TEST(BlockBuilderTest, NestedCallsBecomeBindings) {
  tir::Var n = tir::Var::Shape("n");
  Var x("x", TensorSInfo({n, 4}, f32));
  Var y("y", TensorSInfo({n, 4}, f32));
  BlockBuilder bb;
  ASSERT_TRUE(bb.BeginFunction({x, y}).ok());
  bb.BeginDataflowBlock();
  absl::StatusOr<Var> out = bb.Emit(Add(Add(x, y), y), "out");
  ASSERT_TRUE(out.ok()) << out.status();
  BindingBlock block = bb.EndBlock();
  ASSERT_EQ(block.bindings.size(), 2u);
  const Binding& inner = block.bindings[0];
  EXPECT_TRUE(inner.var.is_dataflow());
  EXPECT_EQ(SInfo(inner.var), "Tensor((n, 4), float32)");
  EXPECT_EQ(SInfo(inner.value), "Tensor((n, 4), float32)");
  const auto* outer = block.bindings[1].value.as<CallNode>();
  ASSERT_NE(outer, nullptr);
  EXPECT_TRUE(outer->args[0].same_as(inner.var));  // the nested call became a binding
  EXPECT_TRUE(outer->args[1].same_as(y));
  EXPECT_TRUE(block.bindings[1].var.same_as(*out));
  EXPECT_EQ(SInfo(*out), "Tensor((n, 4), float32)");
  absl::StatusOr<Expr> func = bb.EndFunction({block}, *out);
  ASSERT_TRUE(func.ok()) << func.status();
  EXPECT_EQ(SInfo(*func), "Func([Tensor((n, 4), float32), Tensor((n, 4), float32)] -> Tensor((n, 4), float32))");
}

TEST(BlockBuilderTest, EmitOutputIsNotDataflow) {
  Var x("x", TensorSInfo({2, 3}, f32));
  BlockBuilder bb;
  bb.BeginDataflowBlock();
  absl::StatusOr<Var> a = bb.Emit(Add(x, x));
  absl::StatusOr<Var> b = bb.EmitOutput(Add(*a, x), "gv");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->is_dataflow());
  EXPECT_FALSE(b->is_dataflow());
  EXPECT_EQ(a->name_hint(), "lv0");
  EXPECT_EQ(b->name_hint(), "gv");
  EXPECT_EQ(bb.EndBlock().bindings.size(), 2u);
}

TEST(BlockBuilderTest, EmitNeedsABlock) {
  Var x("x", TensorSInfo({2}, f32));
  BlockBuilder bb;
  EXPECT_FALSE(bb.Emit(Add(x, x)).ok());
}

// f(x: Tensor((n, 4), float32)) -> Tensor((n + 1,), float32), via call_tir.
IRModule ModuleWithF() {
  IRModule mod;
  tir::Var n = tir::Var::Shape("n");
  Var x("x", TensorSInfo({n, 4}, f32));
  Var lv("lv", TensorSInfo({n + 1}, f32));
  Expr call = Call(Op("call_tir"), {GlobalVar("f_prim"), Tuple({x})}, {}, {TensorSInfo({n + 1}, f32)});
  BlockBuilder bb;
  EXPECT_TRUE(bb.BeginFunction({x}).ok());
  bb.BeginBindingBlock();
  absl::StatusOr<Var> out = bb.Emit(call, "lv");
  EXPECT_TRUE(out.ok()) << out.status();
  absl::StatusOr<Expr> f = bb.EndFunction({bb.EndBlock()}, *out, TensorSInfo({n + 1}, f32));
  EXPECT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(mod.Add("f", *f).ok());
  tir::Buffer a("A", f32, {n, 4});
  tir::Buffer b("B", f32, {n + 1});
  EXPECT_TRUE(mod.Add("f_prim", tir::PrimFunc({{a, {}}, {b, {}}}, tir::Evaluate(0))).ok());
  return mod;
}

TEST(BlockBuilderTest, GlobalVarCallSubstitutesSymbolicShape) {
  IRModule mod = ModuleWithF();
  BlockBuilder bb(&mod);
  bb.BeginBindingBlock();
  Var concrete("a", TensorSInfo({7, 4}, f32));
  absl::StatusOr<Var> r = bb.Emit(Call(GlobalVar("f"), {concrete}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(SInfo(*r), "Tensor((8,), float32)");

  tir::Var m = tir::Var::Shape("m");
  Var symbolic("b", TensorSInfo({m, 4}, f32));
  r = bb.Emit(Call(GlobalVar("f"), {symbolic}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(SInfo(*r), "Tensor((m + 1,), float32)");

  // Only the rank is known: n stays unknown, so does the result's shape.
  r = bb.Emit(Call(GlobalVar("f"), {Var("c", TensorSInfoOfNdim(2, f32))}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(SInfo(*r), "Tensor(ndim=1, float32)");
}

TEST(BlockBuilderTest, GlobalVarCallChecksArguments) {
  IRModule mod = ModuleWithF();
  BlockBuilder bb(&mod);
  bb.BeginBindingBlock();
  Var a("a", TensorSInfo({7, 4}, f32));
  EXPECT_EQ(Error(bb.Emit(Call(GlobalVar("f"), {a, a})).status()),
            "function 'f' takes 1 arguments but 2 were given");
  EXPECT_EQ(Error(bb.Emit(Call(GlobalVar("f"), {Var("b", TensorSInfo({7, 5}, f32))})).status()),
            "argument 0 of function 'f': expected Tensor((7, 4), float32) but got Tensor((7, 5), float32)");
  EXPECT_EQ(Error(bb.Emit(Call(GlobalVar("g"), {a})).status()), "unknown function 'g'");
  EXPECT_EQ(Error(bb.Emit(Call(GlobalVar("f_prim"), {a})).status()),
            "'f_prim' is a PrimFunc and cannot be called directly: use call_tir");
}

TEST(BlockBuilderTest, MatchCastDefinesNewSymbolicVars) {
  Var x("x", TensorSInfoOfNdim(2, f32));
  tir::Var m = tir::Var::Shape("m");
  tir::Var k = tir::Var::Shape("k");
  BlockBuilder bb;
  ASSERT_TRUE(bb.BeginFunction({x}).ok());
  bb.BeginBindingBlock();
  absl::StatusOr<Var> cast = bb.EmitMatchCast(x, TensorSInfo({m, k}, f32), "y");
  ASSERT_TRUE(cast.ok()) << cast.status();
  EXPECT_EQ(SInfo(*cast), "Tensor((m, k), float32)");
  absl::StatusOr<Var> sum = bb.Emit(Add(*cast, *cast), "z");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(SInfo(*sum), "Tensor((m, k), float32)");
  // A cast that can never succeed.
  EXPECT_EQ(Error(bb.EmitMatchCast(x, TensorSInfo({m}, f32)).status()),
            "match_cast can never succeed: value is Tensor(ndim=2, float32), cast to Tensor((m,), float32)");
  // A dimension that mentions an undefined variable without defining it.
  tir::Var q = tir::Var::Shape("q");
  EXPECT_EQ(Error(bb.EmitMatchCast(x, TensorSInfo({q + 1, k}, f32)).status()),
            "match_cast to Tensor((q + 1, k), float32) uses symbolic variable 'q' before it is "
            "defined (by a parameter's struct info or a match_cast)");
  // A failed cast defines nothing: p is still unknown afterwards.
  tir::Var p = tir::Var::Shape("p");
  EXPECT_FALSE(bb.EmitMatchCast(x, TensorSInfo({p}, f32)).ok());
  EXPECT_EQ(Error(bb.EmitMatchCast(x, TensorSInfo({p + 1, k}, f32)).status()),
            "match_cast to Tensor((p + 1, k), float32) uses symbolic variable 'p' before it is "
            "defined (by a parameter's struct info or a match_cast)");
  BindingBlock block = bb.EndBlock();
  ASSERT_EQ(block.bindings.size(), 2u);
  EXPECT_TRUE(block.bindings[0].is_match_cast());
  // m and k are defined inside the body only: the return type forgets them.
  absl::StatusOr<Expr> func = bb.EndFunction({block}, *sum);
  ASSERT_TRUE(func.ok()) << func.status();
  EXPECT_EQ(ToString(func->as<FunctionNode>()->ret_struct_info), "Tensor(ndim=2, float32)");
}

TEST(BlockBuilderTest, IfJoinsBranches) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  Var c("c", PrimSInfo(DataType::Bool()));
  Var x("x", TensorSInfo({n, 4}, f32));
  Var y("y", TensorSInfo({m, 4}, f32));
  BlockBuilder bb;
  ASSERT_TRUE(bb.BeginFunction({c, x, y}).ok());
  bb.BeginBindingBlock();
  // Same shape in both branches: kept. The branch's nested call is bound inside the branch.
  absl::StatusOr<Var> same = bb.Emit(If(c, SeqExpr({}, Add(x, x)), SeqExpr({}, x)), "same");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(SInfo(*same), "Tensor((n, 4), float32)");
  // n vs m: only the rank survives.
  absl::StatusOr<Var> joined = bb.Emit(If(c, SeqExpr({}, x), SeqExpr({}, y)), "joined");
  ASSERT_TRUE(joined.ok());
  EXPECT_EQ(SInfo(*joined), "Tensor(ndim=2, float32)");
  // Different kinds: Object.
  absl::StatusOr<Var> object = bb.Emit(If(c, SeqExpr({}, x), SeqExpr({}, c)), "object");
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(SInfo(*object), "Object");
  EXPECT_EQ(Error(bb.Emit(If(x, SeqExpr({}, x), SeqExpr({}, y))).status()),
            "If condition must be a bool Prim, got Tensor((n, 4), float32)");
  BindingBlock block = bb.EndBlock();
  ASSERT_EQ(block.bindings.size(), 3u);
  const auto* branch = block.bindings[0].value.as<IfNode>()->true_branch.as<SeqExprNode>();
  ASSERT_EQ(branch->blocks.size(), 1u);
  EXPECT_EQ(branch->blocks[0].bindings.size(), 1u);
  EXPECT_EQ(branch->body.kind(), ExprKind::kVar);
}

TEST(BlockBuilderTest, TuplesAndTupleGetItem) {
  Var x("x", TensorSInfo({2}, f32));
  BlockBuilder bb;
  bb.BeginBindingBlock();
  absl::StatusOr<Var> t = bb.Emit(Tuple({x, Add(x, x), PrimValue(tir::IntImm(DataType::Int64(), 3))}), "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(SInfo(*t), "Tuple(Tensor((2,), float32), Tensor((2,), float32), Prim(int64, value=3))");
  absl::StatusOr<Var> item = bb.Emit(TupleGetItem(*t, 1));
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(SInfo(*item), "Tensor((2,), float32)");
  EXPECT_EQ(Error(bb.Emit(TupleGetItem(*t, 3)).status()), "tuple index 3 is out of range for a tuple of 3 fields");
  EXPECT_EQ(Error(bb.Emit(TupleGetItem(x, 0)).status()),
            "tuple index [0] applied to a non-tuple Tensor((2,), float32)");
  // `h = R.ig[1]` (text_fuzz_test, seed 23) crashed reading the operator's struct info.
  EXPECT_EQ(Error(bb.Emit(TupleGetItem(Op("exp"), 0)).status()),
            "tuple index [0] applied to an operator, not to a tuple");
}

TEST(BlockBuilderTest, NormalizeLeavesAndOpErrors) {
  BlockBuilder bb;
  absl::StatusOr<Expr> shape = bb.Normalize(ShapeExpr({3, 4}));
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(SInfo(*shape), "Shape((3, 4))");
  Var a("a", TensorSInfo({2, 3}, f32));
  Var b("b", TensorSInfo({4, 5}, f32));
  absl::Status s = bb.Normalize(Matmul(a, b)).status();
  EXPECT_THAT(Error(s), HasSubstr("matmul"));
  EXPECT_THAT(Error(s), HasSubstr("inner dimensions differ"));
  EXPECT_EQ(Error(bb.Normalize(Add(Var("u", StructInfo()), a)).status()),
            "variable 'u' has no struct info (is it used before its definition?)");
}

// --- NormalizeModule ---

struct MainParts {
  tir::Var n = tir::Var::Shape("n");
  Var x{"x", TensorSInfo({n, 4}, f32)};
  Var w{"w", TensorSInfo({4, 8}, f32)};
};

// main(x, w) { dataflow { lv0 = matmul(add(x, x), w); gv = lv0 (output) } return gv },
// with `lv0_sinfo` as lv0's annotation (undefined: none).
IRModule MainModule(const MainParts& p, StructInfo lv0_sinfo, Expr rhs = Expr()) {
  Var lv0("lv0", lv0_sinfo, /*dataflow=*/true);
  Var gv("gv", StructInfo());
  BindingBlock block{{{lv0, Matmul(Add(p.x, p.x), rhs.defined() ? rhs : Expr(p.w)), {}}, {gv, lv0, {}}}, true};
  IRModule mod;
  EXPECT_TRUE(mod.Add("main", Function({p.x, p.w}, SeqExpr({block}, gv), StructInfo(), true)).ok());
  return mod;
}

TEST(NormalizeModuleTest, InfersAndRewritesUses) {
  MainParts p;
  IRModule mod = MainModule(p, StructInfo());
  absl::StatusOr<IRModule> out = NormalizeModule(mod);
  ASSERT_TRUE(out.ok()) << out.status();
  const FunctionNode* main = out->Find("main")->relax_function();
  EXPECT_EQ(ToString(main->ret_struct_info), "Tensor((n, 8), float32)");
  const auto* seq = main->body.as<SeqExprNode>();
  ASSERT_EQ(seq->blocks.size(), 1u);
  const std::vector<Binding>& bindings = seq->blocks[0].bindings;
  ASSERT_EQ(bindings.size(), 3u);  // the nested add became its own binding
  EXPECT_EQ(bindings[0].var.name_hint(), "lv1");  // lv0 is taken by the source
  EXPECT_TRUE(bindings[0].var.is_dataflow());
  EXPECT_EQ(SInfo(bindings[0].var), "Tensor((n, 4), float32)");
  EXPECT_EQ(bindings[1].var.name_hint(), "lv0");
  EXPECT_EQ(SInfo(bindings[1].var), "Tensor((n, 8), float32)");
  EXPECT_TRUE(bindings[2].value.same_as(bindings[1].var));  // the use follows the new lv0
  EXPECT_FALSE(bindings[2].var.is_dataflow());
  EXPECT_TRUE(seq->body.same_as(bindings[2].var));
  // Independent check of the result.
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
  // The input, with its unannotated Vars, is not well formed.
  EXPECT_FALSE(CheckWellFormed(mod).ok());
}

TEST(NormalizeModuleTest, KeepsLessPreciseAnnotation) {
  MainParts p;
  IRModule mod = MainModule(p, TensorSInfoOfNdim(2, f32));
  absl::StatusOr<IRModule> out = NormalizeModule(mod);
  ASSERT_TRUE(out.ok()) << out.status();
  const auto* in_seq = mod.Find("main")->relax_function()->body.as<SeqExprNode>();
  const auto* seq = out->Find("main")->relax_function()->body.as<SeqExprNode>();
  EXPECT_TRUE(seq->blocks[0].bindings[1].var.same_as(in_seq->blocks[0].bindings[0].var));
  EXPECT_EQ(SInfo(seq->blocks[0].bindings[1].var), "Tensor(ndim=2, float32)");
  EXPECT_EQ(ToString(out->Find("main")->relax_function()->ret_struct_info), "Tensor(ndim=2, float32)");
}

TEST(NormalizeModuleTest, ContradictingAnnotationNamesTheBinding) {
  MainParts p;
  EXPECT_EQ(Error(NormalizeModule(MainModule(p, TensorSInfo({p.n, 5}, f32))).status()),
            "function 'main', binding 'lv0': annotation Tensor((n, 5), float32) contradicts the "
            "inferred Tensor((n, 8), float32)");
  tir::Var k = tir::Var::Shape("k");
  EXPECT_EQ(Error(NormalizeModule(MainModule(p, TensorSInfoOfNdim(3, f32))).status()),
            "function 'main', binding 'lv0': annotation Tensor(ndim=3, float32) contradicts the "
            "inferred Tensor((n, 8), float32)");
  (void)k;
}

TEST(NormalizeModuleTest, OperatorErrorNamesFunctionAndBinding) {
  MainParts p;
  Var bad("bad", TensorSInfo({5, 8}, f32));
  IRModule mod = MainModule(p, StructInfo(), bad);
  // bad is not a parameter, but the error comes first from inference.
  absl::Status s = NormalizeModule(mod).status();
  EXPECT_THAT(Error(s), ::testing::StartsWith("function 'main', binding 'lv0': matmul"));
  EXPECT_THAT(Error(s), HasSubstr("inner dimensions differ"));
}

TEST(NormalizeModuleTest, CalleeWithoutReturnAnnotationIsNormalizedFirst) {
  // main calls helper, which comes later and has no return annotation.
  tir::Var n = tir::Var::Shape("n");
  Var x("x", TensorSInfo({n}, f32));
  Var r("r", StructInfo());
  IRModule mod;
  ASSERT_TRUE(mod.Add("main", Function({x}, SeqExpr({BindingBlock{{{r, Call(GlobalVar("helper"), {x}), {}}}, false}}, r),
                                       StructInfo(), true))
                  .ok());
  tir::Var m = tir::Var::Shape("m");
  Var y("y", TensorSInfo({m}, f32));
  ASSERT_TRUE(mod.Add("helper", Function({y}, SeqExpr({}, Add(y, y)), StructInfo(), true)).ok());
  absl::StatusOr<IRModule> out = NormalizeModule(mod);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToString(out->Find("main")->relax_function()->ret_struct_info), "Tensor((n,), float32)");
  EXPECT_EQ(ToString(out->Find("helper")->relax_function()->ret_struct_info), "Tensor((m,), float32)");
  EXPECT_EQ(out->entries()[0].name, "main");  // order kept
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
}

TEST(NormalizeModuleTest, ClosuresAreNormalizedAndCalled) {
  // main(x) { g = fn(y: Tensor((n, 4))) { add(y, x) }; r = g(x); return r }: the closure
  // captures x and its parameter's shape uses main's n.
  tir::Var n = tir::Var::Shape("n");
  Var x("x", TensorSInfo({n, 4}, f32));
  Var y("y", TensorSInfo({n, 4}, f32));
  Var g("g", StructInfo());
  Var r("r", StructInfo());
  Expr closure = Function({y}, SeqExpr({}, Add(y, x)), StructInfo(), true);
  IRModule mod;
  ASSERT_TRUE(mod.Add("main", Function({x}, SeqExpr({BindingBlock{{{g, closure, {}}, {r, Call(g, {x}), {}}}, false}}, r),
                                       StructInfo(), true))
                  .ok());
  absl::StatusOr<IRModule> out = NormalizeModule(mod);
  ASSERT_TRUE(out.ok()) << out.status();
  const auto& bindings = out->Find("main")->relax_function()->body.as<SeqExprNode>()->blocks[0].bindings;
  ASSERT_EQ(bindings.size(), 2u);
  EXPECT_EQ(SInfo(bindings[0].var), "Func([Tensor((n, 4), float32)] -> Tensor((n, 4), float32))");
  EXPECT_EQ(SInfo(bindings[1].var), "Tensor((n, 4), float32)");
  EXPECT_TRUE(bindings[1].value.as<CallNode>()->op.same_as(bindings[0].var));
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
}

TEST(NormalizeModuleTest, RecursionWithoutReturnAnnotationIsAnError) {
  Var x("x", TensorSInfo({2}, f32));
  IRModule mod;
  ASSERT_TRUE(mod.Add("f", Function({x}, SeqExpr({}, Call(GlobalVar("f"), {x})), StructInfo(), true)).ok());
  EXPECT_EQ(Error(NormalizeModule(mod).status()),
            "function 'f': calls 'f' recursively, which needs a return struct info annotation");
}

TEST(NormalizeModuleTest, PrimFuncsPassThroughAndParamsNeedAnnotations) {
  IRModule mod = ModuleWithF();
  absl::StatusOr<IRModule> out = NormalizeModule(mod);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->Find("f_prim")->prim_func()->same_as(*mod.Find("f_prim")->prim_func()));
  Var x("x", StructInfo());
  IRModule bad;
  ASSERT_TRUE(bad.Add("g", Function({x}, SeqExpr({}, x), StructInfo(), true)).ok());
  EXPECT_EQ(Error(NormalizeModule(bad).status()), "function 'g': parameter 'x' has no struct info annotation");
}

// A PrimFunc called by call_tir that stores into an input is refused where the call is
// normalized (kiln check and kiln compile alike): it wrote the caller's tensor, and into a
// constant's read-only mapping kiln run died of SIGSEGV. Writing only the outputs is fine.
TEST(NormalizeModuleTest, CallTirCalleeWritingAnInputIsRefused) {
  const std::string kernel = R"(
  prim_func @k(A: Buffer((4,), float32), B: Buffer((4,), float32), C: Buffer((4,), float32)) {
    for i in serial(0, 4) {
      WRITE = A[i] + B[i]
    }
  }
})";
  const std::string main = R"(module {
  func @main(x: Tensor((4,), float32)) {
    c = R.const(float32, [4], [1.0, 2.0, 3.0, 4.0])
    y = R.call_tir(@k, (c, x), out_sinfo=Tensor((4,), float32))
    return y
  }
)";
  for (const std::string written : {"A[i]", "B[i]", "C[i]"}) {
    std::string text = main + kernel;
    text.replace(text.find("WRITE"), 5, written);
    absl::StatusOr<ParsedModule> parsed = ParseModule(text, "w.kir");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<IRModule> out = NormalizeModule(parsed->module, &parsed->locations);
    if (written == "C[i]") {
      EXPECT_TRUE(out.ok()) << out.status();
      continue;
    }
    const std::string name = written.substr(0, 1);
    EXPECT_EQ(Error(out.status()),
              "w.kir:4:5: error: function 'main', binding 'y': call_tir: @k writes its input '" + name + "' (parameter " +
                  (name == "A" ? "0" : "1") +
                  "); a PrimFunc called by call_tir writes only its outputs, the parameters after the 2 inputs");
  }
}

// A call_tir whose tensors disagree with the PrimFunc's buffers in dtype or rank, or that
// passes a tensor for a scalar (or the wrong number of values), is refused where the call is
// normalized, naming the call, the argument, the parameter and what differs; before, the
// kernel refused it when it ran. Unknown dtypes and ranks are left to that run-time check.
TEST(NormalizeModuleTest, CallTirArgumentsMustMatchTheCalleesBuffers) {
  const std::string kernels = R"(
  prim_func @k(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        B[i, j] = A[i, j]
      }
    }
  }
  prim_func @scaled(A: Buffer((n, 4), float32), s: float32, B: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        B[i, j] = A[i, j] * s
      }
    }
  }
})";
  auto normalize = [&](const std::string& param, const std::string& call) {
    return NormalizeMainCall("x: " + param, call, kernels);
  };
  const std::string at = "c.kir:3:5: error: function 'main', binding 'y': call_tir @k: ";
  EXPECT_EQ(Error(normalize("Tensor((m, 4), float16)", "R.call_tir(@k, (x,), out_sinfo=Tensor((m, 4), float32))")),
            at + "input 0 'x' is Tensor((m, 4), float16), but parameter 0 'A' of @k is Buffer((n, 4), float32): "
                 "dtype float16, not float32");
  EXPECT_EQ(Error(normalize("Tensor((m, 4), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((4 * m,), int32))")),
            at + "output 0 is Tensor((4 * m,), int32), but parameter 1 'B' of @k is Buffer((n, 4), float32): "
                 "rank 1, not 2; dtype int32, not float32");
  EXPECT_EQ(Error(normalize("Tensor((m, 4), float32)", "R.call_tir(@k, (x, x), out_sinfo=Tensor((m, 4), float32))")),
            at + "the PrimFunc takes 2 parameters, the call passes 3 (2 inputs, 1 output, 0 tir_vars)");
  EXPECT_EQ(Error(normalize("Tensor((m, 4), float32)",
                            "R.call_tir(@scaled, (x, x), out_sinfo=Tensor((m, 4), float32))")),
            "c.kir:3:5: error: function 'main', binding 'y': call_tir @scaled: input 1 'x' is Tensor((m, 4), float32), "
            "but parameter 1 's' of @scaled is a scalar float32");
  EXPECT_EQ(Error(normalize("Tensor((m, 4), float32)",
                            "R.call_tir(@k, (x,), R.shape([m]), out_sinfo=Tensor((m, 4), float32))")),
            at + "the PrimFunc takes 2 parameters, the call passes 3 (1 input, 1 output, 1 tir_var)");
  // What matches, or is not known until run time, normalizes.
  EXPECT_TRUE(normalize("Tensor((m, 4), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((m, 4), float32))").ok());
  EXPECT_TRUE(normalize("Tensor(ndim=2)", "R.call_tir(@k, (x,), out_sinfo=Tensor((3, 4), float32))").ok());
  EXPECT_TRUE(normalize("Tensor", "R.call_tir(@k, (x,), out_sinfo=Tensor((3, 4), float32))").ok());
  EXPECT_TRUE(normalize("Tensor((m, 4), float32)",
                        "R.call_tir(@scaled, (x, R.prim(float32(2.0))), out_sinfo=Tensor((m, 4), float32))")
                  .ok());
}

// A tensor dim that certainly differs from its buffer's dim was refused only by the kernel
// when it ran ("argument 1 (B) dimension 1: expected 16, got 8"); now where the call is
// normalized: a constant, a variable two arguments give different values, and an expression
// over the values the call gives. A variable bound consistently, to a constant or to the
// caller's variable, normalizes; what only run time knows (m against 4) is the kernel's.
TEST(NormalizeModuleTest, CallTirDimsMustMatchTheCalleesBuffers) {
  const std::string kernels = R"(
  prim_func @fixed(A: Buffer((3, 6), float32), B: Buffer((4, 16), float32)) {
    B[0, 0] = A[0, 0]
  }
  prim_func @k(A: Buffer((n, 8), float32), B: Buffer((n, 8), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 8) {
        B[i, j] = A[i, j]
      }
    }
  }
  prim_func @twice(A: Buffer((n, 8), float32), B: Buffer((2 * n, 8), float32)) {
    for i in serial(0, 2 * n) {
      for j in serial(0, 8) {
        B[i, j] = A[floordiv(i, 2), j]
      }
    }
  }
  prim_func @scale(A: Buffer((4, 8), float32), s: float32, B: Buffer((4, 8), float32)) where s <= 1 {
    for i in serial(0, 4) {
      for j in serial(0, 8) {
        B[i, j] = A[i, j] * s
      }
    }
  }
  func @helper(a: Tensor((4, 8), float32)) -> Tensor((4, 8), float32) {
    return a
  }
  prim_func @small(A: Buffer((n,), float32), B: Buffer((n,), float32)) where n <= 4 {
    for i in serial(0, n) {
      B[i] = A[i]
    }
  }
  prim_func @rows(A: Buffer((4, 8), float32), B: Buffer((2 * r, 8), float32), r: int64) {
    for i in serial(0, 2 * r) {
      for j in serial(0, 8) {
        B[i, j] = A[0, j]
      }
    }
  }
})";
  auto normalize = [&](const std::string& params, const std::string& call) {
    return NormalizeMainCall(params, call, kernels);
  };
  const std::string at = "c.kir:3:5: error: function 'main', binding 'y': ";
  EXPECT_EQ(Error(normalize("x: Tensor((3, 5), float32)", "R.call_tir(@fixed, (x,), out_sinfo=Tensor((4, 16), float32))")),
            at + "call_tir @fixed: input 0 'x' is Tensor((3, 5), float32), but parameter 0 'A' of @fixed is "
                 "Buffer((3, 6), float32): dim 1 is 5, not 6");
  EXPECT_EQ(Error(normalize("x: Tensor((3, 6), float32)", "R.call_tir(@fixed, (x,), out_sinfo=Tensor((4, 8), float32))")),
            at + "call_tir @fixed: output 0 is Tensor((4, 8), float32), but parameter 1 'B' of @fixed is "
                 "Buffer((4, 16), float32): dim 1 is 8, not 16");
  EXPECT_EQ(Error(normalize("x: Tensor((4, 8), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((5, 8), float32))")),
            at + "call_tir @k: output 0 is Tensor((5, 8), float32), but parameter 1 'B' of @k is "
                 "Buffer((n, 8), float32): dim 0 is 5, but 'n' is 4 (from input 0 'x' dim 0)");
  EXPECT_EQ(Error(normalize("x: Tensor((m, 8), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((m + 1, 8), float32))")),
            at + "call_tir @k: output 0 is Tensor((m + 1, 8), float32), but parameter 1 'B' of @k is "
                 "Buffer((n, 8), float32): dim 0 is m + 1, but 'n' is m (from input 0 'x' dim 0)");
  EXPECT_EQ(Error(normalize("x: Tensor((4, 8), float32)", "R.call_tir(@twice, (x,), out_sinfo=Tensor((7, 8), float32))")),
            at + "call_tir @twice: output 0 is Tensor((7, 8), float32), but parameter 1 'B' of @twice is "
                 "Buffer((2 * n, 8), float32): dim 0 is 7, not 2 * n = 8");
  EXPECT_EQ(Error(normalize("x: Tensor((4, 8), float32)",
                            "R.call_tir(@rows, (x,), R.shape([5]), out_sinfo=Tensor((8, 8), float32))")),
            at + "call_tir @rows: output 0 is Tensor((8, 8), float32), but parameter 1 'B' of @rows is "
                 "Buffer((2 * r, 8), float32): dim 0 is 8, not 2 * r = 10");
  EXPECT_EQ(Error(normalize("x: Tensor((4, 8), float32)", "R.call_tir(@helper, (x,), out_sinfo=Tensor((4, 8), float32))")),
            at + "call_tir @helper: 'helper' is a Relax function, not a PrimFunc: call it as @helper(...)");
  EXPECT_EQ(Error(normalize("x: Tensor((6,), float32)", "R.call_tir(@small, (x,), out_sinfo=Tensor((6,), float32))")),
            at + "call_tir @small: input 0 'x' is Tensor((6,), float32), but parameter 0 'A' of @small is "
                 "Buffer((n,), float32): dim 0 is 6, but 'n' is declared at most 4");
  // Consistent, or left to run time.
  EXPECT_TRUE(normalize("x: Tensor((m,), float32)", "R.call_tir(@small, (x,), out_sinfo=Tensor((m,), float32))").ok());
  // A float scalar with a bound is no dim (comparing it aborted on an IntImm of float32).
  EXPECT_TRUE(normalize("x: Tensor((4, 8), float32)",
                        "R.call_tir(@scale, (x, R.prim(float32(2.0))), out_sinfo=Tensor((4, 8), float32))")
                  .ok());
  EXPECT_TRUE(normalize("x: Tensor((4, 8), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((4, 8), float32))").ok());
  EXPECT_TRUE(normalize("x: Tensor((m, 8), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((m, 8), float32))").ok());
  EXPECT_TRUE(normalize("x: Tensor((m, 8), float32)", "R.call_tir(@k, (x,), out_sinfo=Tensor((4, 8), float32))").ok());
  EXPECT_TRUE(normalize("x: Tensor((m, 8), float32)", "R.call_tir(@twice, (x,), out_sinfo=Tensor((2 * m, 8), float32))").ok());
  EXPECT_TRUE(normalize("x: Tensor((4, 8), float32)",
                        "R.call_tir(@rows, (x,), R.shape([4]), out_sinfo=Tensor((8, 8), float32))")
                  .ok());
  EXPECT_TRUE(normalize("x: Tensor((4, 8), float32), t: Tensor((k, 8), float32)",
                        "R.call_tir(@twice, (x,), out_sinfo=Tensor((2 * k, 8), float32))")
                  .ok());
}

// A bool or float Prim passed for a Prim(int64, value=k) parameter aborted kiln check
// ("Prim value type differs from dtype": k was bound to the bool); found by text_fuzz_test
// with KILN_FUZZ_SEED=7 run for 90 seconds.
TEST(NormalizeModuleTest, APrimArgumentOfAnotherTypeIsAnError) {
  const std::string callee = R"(  func @f(i: Prim(int64, value=k), x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    return x
  }
})";
  EXPECT_EQ(Error(NormalizeMainCall("x: Tensor((4,), float32)", "@f(R.prim(true), x)", callee)),
            "c.kir:3:5: error: function 'main', binding 'y': argument 0 of function 'f': expected Prim(int64, "
            "value=k) but got Prim(bool, value=true)");
  EXPECT_EQ(Error(NormalizeMainCall("x: Tensor((4,), float32)", "@f(R.prim(1.5), x)", callee)),
            "c.kir:3:5: error: function 'main', binding 'y': argument 0 of function 'f': expected Prim(int64, "
            "value=k) but got Prim(float32, value=1.5)");
  EXPECT_TRUE(NormalizeMainCall("x: Tensor((4,), float32)", "@f(R.prim(3), x)", callee).ok());
}

// Only the call forms read out_sinfo. On an operator it was ignored: `R.sum(x,
// out_sinfo=Tensor((6,), float32))` became a Tensor((), float32) without a word.
TEST(NormalizeModuleTest, AnOperatorTakesNoOutSinfo) {
  EXPECT_EQ(Error(NormalizeMainCall("x: Tensor((4, 6), float32)", "R.sum(x, out_sinfo=Tensor((6,), float32))", "}")),
            "c.kir:3:5: error: function 'main', binding 'y': sum: takes no out_sinfo: its result's struct info is "
            "inferred (annotate the binding with Tensor((6,), float32) to check it)");
  EXPECT_TRUE(NormalizeMainCall("x: Tensor((4, 6), float32)", "R.sum(x, axis=[0])", "}").ok());
}

}  // namespace
}  // namespace kiln::relax
