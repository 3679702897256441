#include "tir/stmt_functor.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tir/sample_prim_func.h"
#include "tir/structural_equal.h"

namespace kiln::tir {
namespace {

using test_ir::SamplePrimFunc;

// Records every kind met and every definition.
class KindRecorder : public StmtExprVisitor {
 public:
  void VisitExpr(const PrimExpr& expr) override {
    if (expr.defined()) exprs.insert(expr.kind());
    StmtExprVisitor::VisitExpr(expr);
  }
  void VisitStmt(const Stmt& stmt) override {
    if (stmt.defined()) stmts.insert(stmt.kind());
    StmtExprVisitor::VisitStmt(stmt);
  }
  void VisitVarDef(const Var& var) override { var_defs.push_back(var.name()); }
  void VisitBufferDef(const Buffer& buffer) override {
    buffer_defs.push_back(buffer->name);
    StmtExprVisitor::VisitBufferDef(buffer);
  }
  void VisitBufferUse(const Buffer& buffer) override { buffer_uses.insert(buffer->name); }

  std::set<ExprKind> exprs;
  std::set<StmtKind> stmts;
  std::vector<std::string> var_defs;
  std::vector<std::string> buffer_defs;
  std::set<std::string> buffer_uses;
};

// The variables used (not defined) in an expression or statement, by node.
class VarUses : public StmtExprVisitor {
 public:
  void VisitExpr_(const VarNode* op, const PrimExpr&) override { uses.insert(op); }
  std::set<const VarNode*> uses;
};

TEST(StmtExprVisitor, ReachesEveryNodeKind) {
  KindRecorder recorder;
  recorder.VisitPrimFunc(SamplePrimFunc(""));
  for (int k = 0; k <= static_cast<int>(ExprKind::kLet); ++k) {
    EXPECT_TRUE(recorder.exprs.count(static_cast<ExprKind>(k))) << KindName(static_cast<ExprKind>(k));
  }
  for (int k = 0; k <= static_cast<int>(StmtKind::kAssert); ++k) {
    EXPECT_TRUE(recorder.stmts.count(static_cast<StmtKind>(k))) << "statement kind " << k;
  }
  // Lowered TIR's decl_buffer: its data, then the buffer's definition, then the body.
  KindRecorder lowered;
  Buffer view("view", DataType::Float32(), {Var::Shape("m")});
  lowered.VisitStmt(DeclBuffer(view, Var("data", DataType::Handle()), BufferStore(view, FloatImm(DataType::Float32(), 1), {0})));
  EXPECT_TRUE(lowered.stmts.count(StmtKind::kDeclBuffer));
  EXPECT_EQ(lowered.buffer_defs, (std::vector<std::string>{"view"}));
  EXPECT_EQ(lowered.buffer_uses, (std::set<std::string>{"view"}));
  // Definitions in order: scalar parameter, loops and block iteration variables, let
  // variables (the let expression's inside the LetStmt's value comes first).
  EXPECT_EQ(recorder.var_defs,
            (std::vector<std::string>{"alpha", "i", "j", "vi", "vj", "tx", "l", "t"}));
  EXPECT_EQ(recorder.buffer_defs, (std::vector<std::string>{"A", "B", "acc", "tmp"}));
  EXPECT_EQ(recorder.buffer_uses, (std::set<std::string>{"A", "B", "tmp"}));
}

TEST(StmtExprVisitor, VisitsParameterBufferShapes) {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n * 2});
  PrimFunc f({{a, Var()}}, Evaluate(0));
  VarUses uses;
  uses.VisitPrimFunc(f);
  EXPECT_EQ(uses.uses, (std::set<const VarNode*>{n.get()}));
}

TEST(StmtExprMutator, IdentityReturnsTheSameNodes) {
  PrimFunc f = SamplePrimFunc("");
  StmtExprMutator identity;
  EXPECT_TRUE(identity.VisitPrimFunc(f).same_as(f));
  EXPECT_TRUE(identity.VisitStmt(f->body).same_as(f->body));
  PrimExpr e = Let(Var("x"), 1, Var("y") + 2);
  EXPECT_TRUE(identity.VisitExpr(e).same_as(e));
}

// Replaces the integer literal 3 by 30.
class BumpThree : public StmtExprMutator {
 public:
  PrimExpr VisitExpr_(const IntImmNode* op, const PrimExpr& self) override {
    if (op->value == 3 && op->dtype() == DataType::Int64()) return PrimExpr(30);
    return self;
  }
};

TEST(StmtExprMutator, RebuildsOnlyThePathToAChange) {
  Var x("x");
  PrimExpr left = x * 7;
  PrimExpr right = x + 3;
  PrimExpr e = left - right;
  PrimExpr out = BumpThree().VisitExpr(e);
  ASSERT_FALSE(out.same_as(e));
  const auto* sub = out.as<BinaryNode>();
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->kind(), ExprKind::kSub);
  EXPECT_TRUE(sub->a.same_as(left));  // untouched sibling is shared
  EXPECT_EQ(ToString(out), "x * 7 - (x + 30)");

  Stmt first = Evaluate(x * 5);
  Stmt second = Evaluate(x + 3);
  Stmt seq = SeqStmt({first, second});
  Stmt mutated = BumpThree().VisitStmt(seq);
  const auto* node = mutated.as<SeqStmtNode>();
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->seq[0].same_as(first));
  EXPECT_FALSE(node->seq[1].same_as(second));
}

// Gives every defined variable a fresh node (same name and type).
class FreshDefinitions : public StmtExprMutator {
 public:
  Var VisitVarDef(const Var& var) override {
    return Var(var.name(), var.dtype(), var->lower_bound, var->upper_bound);
  }
};

TEST(StmtExprMutator, RenamedDefinitionsFollowIntoUses) {
  PrimFunc f = SamplePrimFunc("");
  PrimFunc g = FreshDefinitions().VisitPrimFunc(f);
  EXPECT_FALSE(g.same_as(f));
  // Structurally the same function: every use follows its new definition.
  EXPECT_EQ(StructuralDiff(f, g), "");
  EXPECT_TRUE(StructuralEqual(f, g));
  // No use of an old definition remains.
  VarUses uses_in_g;
  uses_in_g.VisitPrimFunc(g);
  const auto* loop = f->body.as<SeqStmtNode>()->seq[0].as<ForNode>();
  EXPECT_EQ(uses_in_g.uses.count(loop->loop_var.get()), 0u);
  EXPECT_EQ(uses_in_g.uses.count(f->params[2].var.get()), 0u);
}

TEST(Substitute, ReplacesUsesAndSharesTheRest) {
  Var n("n"), m("m"), k("k");
  PrimExpr untouched = k * 2;
  PrimExpr e = n + untouched;
  PrimExpr out = Substitute(e, {{n.get(), m + 1}});
  EXPECT_EQ(ToString(out), "m + 1 + k * 2");
  EXPECT_TRUE(out.as<BinaryNode>()->b.same_as(untouched));
  EXPECT_TRUE(Substitute(e, {{m.get(), k}}).same_as(e));
  EXPECT_TRUE(Substitute(e, {}).same_as(e));
}

TEST(Substitute, RebuildsBuffersConsistently) {
  Var n = Var::Shape("n"), m = Var::Shape("m"), i("i");
  Buffer a("A", DataType::Float32(), {n});
  Stmt body = For(i, 0, n, ForKind::kSerial, BufferStore(a, a.Load({i}) * FloatImm(DataType::Float32(), 2.0), {i}));
  Stmt out = Substitute(body, {{n.get(), m}});
  const auto* loop = out.as<ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_TRUE(loop->extent.same_as(m));
  const auto* store = loop->body.as<BufferStoreNode>();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->buffer.same_as(a));
  EXPECT_TRUE(store->buffer->shape[0].same_as(m));
  // The load reads the very buffer the store writes.
  const auto* load = store->value.as<BinaryNode>()->a.as<BufferLoadNode>();
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->buffer, store->buffer.node());
  EXPECT_TRUE(loop->loop_var.same_as(i));
}

}  // namespace
}  // namespace kiln::tir
