#include "relax/well_formed.h"

#include <gtest/gtest.h>

#include "relax/block_builder.h"

namespace kiln::relax {
namespace {

const DataType f32 = DataType::Float32();

Expr Add(Expr a, Expr b) { return Call(Op("add"), {std::move(a), std::move(b)}); }
Expr Print(Expr a) { return Call(Op("print"), {std::move(a)}); }

Binding Bind(Var var, Expr value) { return Binding{std::move(var), std::move(value), StructInfo()}; }

// The checker's message; "OK" when the module is well formed.
std::string Check(const IRModule& mod) {
  absl::Status s = CheckWellFormed(mod);
  if (s.ok()) return "OK";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

// Parameters and a few correctly annotated variables shared by the tests.
struct Fixture {
  tir::Var n = tir::Var::Shape("n");
  Var x{"x", TensorSInfo({n, 4}, f32)};
  StructInfo t = TensorSInfo({n, 4}, f32);

  // A module with one function `main(x)` of the given blocks and body.
  IRModule Main(std::vector<BindingBlock> blocks, Expr body, bool pure = true,
                StructInfo ret = StructInfo()) {
    IRModule mod;
    if (!ret.defined()) ret = body.struct_info();
    EXPECT_TRUE(mod.Add("main", Function({x}, SeqExpr(std::move(blocks), body), ret, pure)).ok());
    return mod;
  }
};

TEST(WellFormedTest, NormalizedModuleIsWellFormed) {
  Fixture f;
  tir::Var m = tir::Var::Shape("m");
  Var a("a", StructInfo(), true);
  Var cast("c", StructInfo());
  Var out("out", StructInfo());
  Var cond("cond", PrimSInfo(DataType::Bool()));
  Var b("b", StructInfo());
  IRModule mod;
  BindingBlock dataflow{{Bind(a, Add(Add(f.x, f.x), f.x)), Bind(out, a)}, true};
  BindingBlock rest{{Binding{cast, out, TensorSInfo({m, 4}, f32)},
                     Bind(b, If(cond, SeqExpr({}, Add(cast, cast)), SeqExpr({}, cast)))}, false};
  ASSERT_TRUE(mod.Add("main", Function({f.x, cond}, SeqExpr({dataflow, rest}, b), StructInfo(), true)).ok());
  tir::Var len = tir::Var::Shape("len");
  tir::Buffer A("A", f32, {len});
  tir::Var i("i");
  ASSERT_TRUE(mod.Add("prim", tir::PrimFunc({{A, {}}}, tir::For(i, 0, len, tir::ForKind::kSerial,
                                                                 tir::BufferStore(A, A.Load({i}), {i}))))
                  .ok());
  absl::StatusOr<IRModule> normalized = NormalizeModule(mod);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  EXPECT_EQ(Check(*normalized), "OK");
}

TEST(WellFormedTest, VarDefinedTwice) {
  Fixture f;
  Var a("a", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(a, Add(f.x, f.x)), Bind(a, Add(f.x, f.x))}, false}}, a)),
            "function 'main': variable 'a' is defined more than once");
}

TEST(WellFormedTest, VarDefinedInTwoFunctions) {
  Fixture f;
  IRModule mod = f.Main({}, f.x);
  ASSERT_TRUE(mod.Add("other", Function({f.x}, SeqExpr({}, f.x), f.t, true)).ok());
  EXPECT_EQ(Check(mod), "function 'other': variable 'x' is defined more than once");
}

TEST(WellFormedTest, UseBeforeDefinition) {
  Fixture f;
  Var a("a", f.t);
  Var b("b", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(b, Add(a, f.x)), Bind(a, Add(f.x, f.x))}, false}}, b)),
            "function 'main': variable 'a' is used before its definition");
}

TEST(WellFormedTest, UseOutsideScope) {
  Fixture f;
  // `t` is bound inside an If branch and used after the If.
  Var cond("cond", PrimSInfo(DataType::Bool()));
  Var t("t", f.t);
  Var r("r", f.t);
  Var s("s", f.t);
  Expr branch = SeqExpr({{{Bind(t, Add(f.x, f.x))}, false}}, t);
  IRModule mod;
  ASSERT_TRUE(mod.Add("main", Function({f.x, cond},
                                       SeqExpr({{{Bind(r, If(cond, branch, SeqExpr({}, f.x), f.t)), Bind(s, Add(t, r))}, false}}, s),
                                       f.t, true))
                  .ok());
  EXPECT_EQ(Check(mod), "function 'main': variable 't' is used outside its scope");
  // A parameter of one function used in another.
  IRModule two = f.Main({}, f.x);
  Var y("y", f.t);
  ASSERT_TRUE(two.Add("g", Function({y}, SeqExpr({}, f.x), f.t, true)).ok());
  EXPECT_EQ(Check(two), "function 'g': variable 'x' is used outside its scope");
}

TEST(WellFormedTest, DataflowVarUsedOutsideItsBlock) {
  Fixture f;
  Var lv("lv", f.t, /*dataflow=*/true);
  EXPECT_EQ(Check(f.Main({{{Bind(lv, Add(f.x, f.x))}, true}}, lv)),
            "function 'main': DataflowVar 'lv' is used outside its dataflow block");
}

TEST(WellFormedTest, DataflowVarBoundOutsideDataflowBlock) {
  Fixture f;
  Var lv("lv", f.t, /*dataflow=*/true);
  Var gv("gv", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(lv, Add(f.x, f.x)), Bind(gv, lv)}, false}}, gv)),
            "function 'main': DataflowVar 'lv' is defined outside a dataflow block (binding)");
}

TEST(WellFormedTest, UnknownGlobalVar) {
  Fixture f;
  Var a("a", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(a, Call(GlobalVar("nope", FuncSInfo({f.t}, f.t, true)), {f.x}))}, false}}, a)),
            "function 'main': GlobalVar 'nope' does not name a function of the module");
}

TEST(WellFormedTest, SymbolicVarUsedBeforeDefinition) {
  Fixture f;
  tir::Var m = tir::Var::Shape("m");
  Var s("s", ShapeSInfo({m}));
  EXPECT_EQ(Check(f.Main({{{Bind(s, ShapeExpr({m}))}, false}}, f.x)),
            "function 'main': shape expression uses symbolic variable 'm' before its definition\n"
            "function 'main': struct info of 's' uses symbolic variable 'm' before its definition");
  // Defined by a match_cast first: fine.
  Var c("c", TensorSInfo({m, 4}, f32));
  Var s2("s2", ShapeSInfo({m}));
  EXPECT_EQ(Check(f.Main({{{Binding{c, f.x, TensorSInfo({m, 4}, f32)}, Bind(s2, ShapeExpr({m}))}, false}}, f.x)), "OK");
}

TEST(WellFormedTest, VarWithoutStructInfo) {
  Fixture f;
  Var a("a", StructInfo());
  EXPECT_EQ(Check(f.Main({{{Bind(a, Add(f.x, f.x))}, false}}, f.x)),
            "function 'main': variable 'a' has no struct info");
}

TEST(WellFormedTest, StructInfoInconsistentWithValue) {
  Fixture f;
  Var a("a", TensorSInfo({f.n, 5}, f32));
  EXPECT_EQ(Check(f.Main({{{Bind(a, Add(f.x, f.x))}, false}}, f.x)),
            "function 'main': binding 'a': struct info Tensor((n, 5), float32) does not follow from "
            "the value's Tensor((n, 4), float32)");
  // More precise than the value (needs a run-time check): also rejected.
  Var b("b", f.t);
  Var any("any", TensorSInfoOfNdim(2, f32));
  IRModule mod;
  ASSERT_TRUE(mod.Add("main", Function({any}, SeqExpr({{{Bind(b, Add(any, any))}, false}}, any),
                                       TensorSInfoOfNdim(2, f32), true))
                  .ok());
  EXPECT_EQ(Check(mod),
            "function 'main': struct info of 'b' uses symbolic variable 'n' before its definition\n"
            "function 'main': binding 'b': struct info Tensor((n, 4), float32) does not follow from "
            "the value's Tensor(ndim=2, float32)");
}

TEST(WellFormedTest, ReturnStructInfoInconsistentWithBody) {
  Fixture f;
  EXPECT_EQ(Check(f.Main({}, f.x, true, TensorSInfo({f.n, 5}, f32))),
            "function 'main': return struct info Tensor((n, 5), float32) does not follow from the "
            "body's Tensor((n, 4), float32)");
}

TEST(WellFormedTest, NotInANormalForm) {
  Fixture f;
  Var a("a", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(a, Add(Add(f.x, f.x), f.x))}, false}}, a)),
            "function 'main': binding 'a': argument 0 is not a leaf (not in A-normal form)");
}

TEST(WellFormedTest, ImpureCallInDataflowBlock) {
  Fixture f;
  Var p("p", ObjectSInfo(), true);
  EXPECT_EQ(Check(f.Main({{{Bind(p, Print(f.x))}, true}}, f.x, /*pure=*/false)),
            "function 'main': impure call to operator 'print' inside a dataflow block");
}

TEST(WellFormedTest, PureFunctionCallsImpure) {
  Fixture f;
  Var p("p", ObjectSInfo());
  EXPECT_EQ(Check(f.Main({{{Bind(p, Print(f.x))}, false}}, f.x, /*pure=*/true)),
            "function 'main': function is declared pure but calls impure operator 'print'");
  // Declared impure: fine.
  Var q("q", ObjectSInfo());
  EXPECT_EQ(Check(f.Main({{{Bind(q, Print(f.x))}, false}}, f.x, /*pure=*/false)), "OK");
  // Through a call to an impure function of the module.
  Fixture g;
  Var r("r", ObjectSInfo());
  IRModule mod = g.Main({{{Bind(r, Call(GlobalVar("log"), {g.x}))}, false}}, g.x, /*pure=*/true);
  Var y("y", g.t);
  Var z("z", ObjectSInfo());
  ASSERT_TRUE(mod.Add("log", Function({y}, SeqExpr({{{Bind(z, Print(y))}, false}}, z), ObjectSInfo(), false)).ok());
  EXPECT_EQ(Check(mod), "function 'main': function is declared pure but calls impure function 'log'");
}

TEST(WellFormedTest, IfConditionMustBeBoolPrim) {
  Fixture f;
  Var r("r", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(r, If(f.x, SeqExpr({}, f.x), SeqExpr({}, f.x), f.t))}, false}}, r)),
            "function 'main': If condition must be a bool Prim, got Tensor((n, 4), float32)");
}

TEST(WellFormedTest, UnknownOperator) {
  Fixture f;
  Var a("a", ObjectSInfo());
  EXPECT_EQ(Check(f.Main({{{Bind(a, Call(Op("frobnicate"), {f.x}, {}, {}, ObjectSInfo()))}, false}}, f.x)),
            "function 'main': unknown operator 'frobnicate'");
}

TEST(WellFormedTest, StaleCallStructInfoIsCaught) {
  Fixture f;
  // The call claims (n, 5); the variable agrees with the call but not with inference.
  Var a("a", TensorSInfo({f.n, 5}, f32));
  Expr call = Call(Op("add"), {f.x, f.x}, {}, {}, TensorSInfo({f.n, 5}, f32));
  EXPECT_EQ(Check(f.Main({{{Bind(a, call)}, false}}, f.x)),
            "function 'main': binding 'a': struct info Tensor((n, 5), float32) does not follow from "
            "the value's Tensor((n, 4), float32)");
}

TEST(WellFormedTest, AllProblemsAreReported) {
  Fixture f;
  Var a("a", StructInfo());
  Var lv("lv", f.t, true);
  EXPECT_EQ(Check(f.Main({{{Bind(a, Add(f.x, f.x)), Bind(lv, Add(f.x, f.x))}, false}}, f.x)),
            "function 'main': variable 'a' has no struct info\n"
            "function 'main': DataflowVar 'lv' is defined outside a dataflow block (binding)");
}

TEST(WellFormedTest, MatchCastThatCanNeverSucceed) {
  Fixture f;
  tir::Var m = tir::Var::Shape("m");
  Var c("c", TensorSInfo({m}, f32));
  EXPECT_EQ(Check(f.Main({{{Binding{c, f.x, TensorSInfo({m}, f32)}}, false}}, f.x)),
            "function 'main': binding 'c': match_cast to Tensor((m,), float32) can never succeed on a "
            "value of Tensor((n, 4), float32)");
}

TEST(WellFormedTest, ImpossibleShapesAndBounds) {
  tir::Var empty("k", DataType::Int64(), 5, 2);  // k >= 5 and k <= 2
  Var x("x", TensorSInfo({empty, -3}, f32));
  IRModule mod;
  ASSERT_TRUE(mod.Add("main", Function({x}, SeqExpr({}, x), StructInfo(), true)).ok());
  EXPECT_EQ(Check(mod),
            "function 'main': struct info of parameter 'x' has the negative dimension -3\n"
            "function 'main': struct info of parameter 'x': the bounds of 'k' can never hold (k >= 5 and k <= 2)");
  Fixture f;
  tir::Var m = tir::Var::Shape("m", -1);  // m >= 0 and m <= -1
  Var c("c", TensorSInfo({m, 4}, f32));
  EXPECT_EQ(Check(f.Main({{{Binding{c, f.x, TensorSInfo({m, 4}, f32)}}, false}}, f.x)),
            "function 'main': match_cast of 'c': the bounds of 'm' can never hold (m >= 0 and m <= -1)");
}

TEST(WellFormedTest, TupleGetItemOutOfRange) {
  Fixture f;
  Var tup("tup", TupleSInfo({f.t}));
  Var item("item", f.t);
  EXPECT_EQ(Check(f.Main({{{Bind(tup, Tuple({f.x}, TupleSInfo({f.t}))), Bind(item, TupleGetItem(tup, 1, f.t))}, false}}, item)),
            "function 'main': binding 'item': tuple index 1 is out of range for a tuple of 1 fields");
}

// --- TIR ---

IRModule WithPrim(tir::PrimFunc func) {
  IRModule mod;
  EXPECT_TRUE(mod.Add("prim", std::move(func)).ok());
  return mod;
}

TEST(WellFormedTest, TirLoopVarDefinedTwice) {
  tir::Buffer A("A", f32, {8});
  tir::Var i("i");
  tir::Stmt loop = tir::For(i, 0, 8, tir::ForKind::kSerial, tir::BufferStore(A, A.Load({i}), {i}));
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, tir::SeqStmt({loop, loop})))),
            "function 'prim': variable 'i' is defined more than once");
}

TEST(WellFormedTest, TirVarUsedOutsideScope) {
  tir::Buffer A("A", f32, {8});
  tir::Var i("i");
  tir::Var j("j");
  tir::Stmt loop = tir::For(i, 0, 8, tir::ForKind::kSerial, tir::BufferStore(A, A.Load({i}), {i}));
  tir::Stmt after = tir::BufferStore(A, A.Load({j}), {i});
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, tir::SeqStmt({loop, after})))),
            "function 'prim': variable 'j' is used but never defined\n"
            "function 'prim': variable 'i' is used outside its scope");
}

TEST(WellFormedTest, TirBlockAndLetVarsAreScoped) {
  tir::Buffer A("A", f32, {8});
  tir::Var i("i");
  tir::Var vi("vi");
  tir::Var t("t", f32);
  tir::Stmt block = tir::Block("b", {{vi, 8, tir::IterType::kSpatial, i}},
                               tir::LetStmt(t, A.Load({vi}), tir::BufferStore(A, t, {vi})));
  tir::Stmt loop = tir::For(i, 0, 8, tir::ForKind::kSerial, block);
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, loop))), "OK");
  // vi and t used after the block that defines them.
  tir::Stmt after = tir::BufferStore(A, t, {vi});
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, tir::SeqStmt({loop, after})))),
            "function 'prim': variable 't' is used outside its scope\n"
            "function 'prim': variable 'vi' is used outside its scope");
}

TEST(WellFormedTest, TirBufferNotInScope) {
  tir::Buffer A("A", f32, {8});
  tir::Buffer C("C", f32, {8});
  tir::Var i("i");
  tir::Stmt loop = tir::For(i, 0, 8, tir::ForKind::kSerial, tir::BufferStore(C, A.Load({i}), {i}));
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, loop))),
            "function 'prim': buffer 'C' is used but is neither a parameter nor allocated in scope");
  // Allocated around the store: fine.
  tir::Var k("k");
  tir::Stmt alloc = tir::Allocate(C, tir::For(k, 0, 8, tir::ForKind::kSerial, tir::BufferStore(C, A.Load({k}), {k})));
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, alloc))), "OK");
}

TEST(WellFormedTest, TirIndexCountMustMatchNdim) {
  tir::Buffer A("A", f32, {8, 8});
  tir::Var i("i");
  // Built without the checked constructors, as a buggy pass might.
  PrimExpr load(std::make_shared<tir::BufferLoadNode>(f32, A.node(), std::vector<PrimExpr>{i, i, i}));
  tir::Stmt store(std::make_shared<tir::BufferStoreNode>(A, load, std::vector<PrimExpr>{i}));
  EXPECT_EQ(Check(WithPrim(tir::PrimFunc({{A, {}}}, tir::For(i, 0, 8, tir::ForKind::kSerial, store)))),
            "function 'prim': BufferStore to 'A' has 1 indices but the buffer has 2 dimensions\n"
            "function 'prim': BufferLoad from 'A' has 3 indices but the buffer has 2 dimensions");
}

}  // namespace
}  // namespace kiln::relax
