#include "relax/expr_functor.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "relax/structural_equal.h"
#include "tests/relax/sample_function.h"
#include "tir/stmt_functor.h"

namespace kiln::relax {
namespace {

using test_ir::SampleFunction;

// The symbolic variables used in a PrimExpr.
class SymbolicVars : public tir::StmtExprVisitor {
 public:
  void VisitExpr_(const tir::VarNode* op, const PrimExpr&) override { names.insert(op->name); }
  std::set<std::string> names;
};

class Recorder : public ExprVisitor {
 public:
  void VisitExpr(const Expr& expr) override {
    if (expr.defined()) kinds.insert(expr.kind());
    ExprVisitor::VisitExpr(expr);
  }
  void VisitVarDef(const Var& var) override {
    defs.push_back(var.name_hint());
    ExprVisitor::VisitVarDef(var);
  }
  void VisitPrimExpr(const PrimExpr& expr) override { symbolic.VisitExpr(expr); }

  std::set<ExprKind> kinds;
  std::vector<std::string> defs;
  SymbolicVars symbolic;
};

TEST(ExprVisitor, ReachesEveryNodeKind) {
  Recorder recorder;
  recorder.VisitExpr(SampleFunction(""));
  for (int k = 0; k <= static_cast<int>(ExprKind::kExternFunc); ++k) {
    EXPECT_TRUE(recorder.kinds.count(static_cast<ExprKind>(k))) << "expression kind " << k;
  }
  // Parameters, then bindings in order (a closure's parameter inside its binding's value).
  EXPECT_EQ(recorder.defs, (std::vector<std::string>{"x", "y", "lv0", "lv1", "lv2", "gv", "z", "param", "f", "c",
                                                     "printed", "r"}));
  EXPECT_EQ(recorder.symbolic.names, (std::set<std::string>{"n", "m", "k"}));
}

TEST(ExprMutator, IdentityReturnsTheSameNodes) {
  Expr f = SampleFunction("");
  ExprMutator identity;
  EXPECT_TRUE(identity.VisitExpr(f).same_as(f));
}

// Replaces one symbolic variable by a constant everywhere it appears.
class FixDimension : public ExprMutator {
 public:
  FixDimension(const tir::Var& var, int64_t value) { map_[var.get()] = PrimExpr(value); }
  PrimExpr VisitPrimExpr(const PrimExpr& expr) override { return tir::Substitute(expr, map_); }

 private:
  tir::VarMap map_;
};

TEST(ExprMutator, RewritesStructInfoAndFollowsNewDefinitions) {
  tir::Var n = tir::Var::Shape("n"), m = tir::Var::Shape("m");
  Var x("x", TensorSInfo({n, m}, DataType::Float32()));
  Var y("y", TensorSInfo({m}, DataType::Float32()));
  Expr add = Call(Op("add"), {x, y}, {}, {}, TensorSInfo({n, m}, DataType::Float32()));
  Expr tag = StringImm("kept");
  Var lv("lv", TensorSInfo({n, m}, DataType::Float32()));
  Expr body = SeqExpr({{{{lv, add, StructInfo()}}, false}}, Tuple({lv, tag, y}), StructInfo());
  Expr f = Function({x, y}, body, ObjectSInfo(), true);

  Expr g = FixDimension(n, 8).VisitExpr(f);
  const auto* func = g.as<FunctionNode>();
  ASSERT_NE(func, nullptr);
  EXPECT_FALSE(func->params[0].same_as(x));  // its struct info mentioned n
  EXPECT_TRUE(func->params[1].same_as(y));   // it did not
  EXPECT_EQ(ToString(func->params[0].struct_info()), "Tensor((8, m), float32)");
  EXPECT_EQ(ToString(func->struct_info()), "Func([Tensor((8, m), float32), Tensor((m,), float32)] -> Object)");
  const auto* seq = func->body.as<SeqExprNode>();
  const Binding& binding = seq->blocks[0].bindings[0];
  EXPECT_TRUE(binding.value.as<CallNode>()->args[0].same_as(func->params[0]));
  EXPECT_EQ(ToString(binding.value.struct_info()), "Tensor((8, m), float32)");
  EXPECT_FALSE(binding.var.same_as(lv));
  const auto* tuple = seq->body.as<TupleNode>();
  EXPECT_TRUE(tuple->fields[0].same_as(binding.var));
  EXPECT_TRUE(tuple->fields[1].same_as(tag));
  EXPECT_TRUE(tuple->fields[2].same_as(y));

  // Fixing a variable that does not occur changes nothing.
  tir::Var unused = tir::Var::Shape("unused");
  EXPECT_TRUE(FixDimension(unused, 8).VisitExpr(f).same_as(f));
}

}  // namespace
}  // namespace kiln::relax
