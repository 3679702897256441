// HoistIndexDivisions: which divisions of a loop index move to the top of the loop body.
// (The generated code's numbers with hoisted divisions: llvm_codegen_test.cc,
// FusedParallelLoopIndexesLikeTheTwoLoops.)
#include "codegen/hoist_index_divisions.h"

#include <gtest/gtest.h>

#include <unordered_set>

#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"
#include "tir/stmt_functor.h"
#include "tir/text_printer.h"

namespace kiln::codegen {
namespace {

using namespace kiln::tir;  // NOLINT: IR construction reads better unqualified

// The divisions left in `stmt` whose dividend is `var`.
int DivisionsOf(const Stmt& stmt, const Var& var) {
  class Count : public StmtExprVisitor {
   public:
    explicit Count(const Var& var) : var_(var) {}
    void VisitExpr_(const BinaryNode* op, const PrimExpr& self) override {
      if ((op->kind() == ExprKind::kFloorDiv || op->kind() == ExprKind::kFloorMod) && op->a.get() == var_.get()) {
        ++count;
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }
    int count = 0;

   private:
    const Var& var_;
  } count(var);
  count.VisitStmt(stmt);
  return count.count;
}

TEST(HoistIndexDivisionsTest, FusedTileIndexBecomesTwoLets) {
  // for f in parallel(0, 2 * R): if 8 * (f mod R) < n: C[f] = (f div R) + 8 * (f mod R),
  // R = floordiv(n + 7, 8) as Schedule::Fuse writes it. One let per distinct division.
  Var n = Var::Shape("n");
  Var f("f");
  Buffer c("C", DataType::Int64(), {2 * n});
  PrimExpr rows = FloorDiv(n + 7, PrimExpr(int64_t{8}));
  PrimExpr row = FloorMod(f, rows);
  PrimExpr col = FloorDiv(f, FloorDiv(n + 7, PrimExpr(int64_t{8})));  // equal, not the same node
  Stmt body = IfThenElse(LT(8 * row, n), BufferStore(c, col + 8 * FloorMod(f, rows), {f}));
  std::unordered_set<const VarNode*> outside = {n.get()};
  Stmt hoisted = HoistIndexDivisions(f, body, [&](const VarNode* v) { return outside.count(v) > 0; });
  ASSERT_EQ(hoisted.kind(), StmtKind::kLetStmt) << PrintStmt(hoisted);
  const auto* first = hoisted.as<LetStmtNode>();
  ASSERT_EQ(first->body.kind(), StmtKind::kLetStmt) << PrintStmt(hoisted);
  const auto* second = first->body.as<LetStmtNode>();
  EXPECT_NE(second->body.kind(), StmtKind::kLetStmt) << PrintStmt(hoisted);
  // The lets hold the only divisions of f; the body reads the let variables.
  EXPECT_EQ(DivisionsOf(second->body, f), 0) << PrintStmt(hoisted);
  EXPECT_EQ(DivisionsOf(hoisted, f), 2) << PrintStmt(hoisted);
  // The divisor is guarded: a zero divisor divides by 1 instead of trapping.
  EXPECT_NE(PrintStmt(hoisted).find("select"), std::string::npos) << PrintStmt(hoisted);
}

TEST(HoistIndexDivisionsTest, LeavesDivisionsThatVaryInsideTheLoop) {
  // floordiv(f, j) with j an inner loop's variable, and floordiv(f + 1, n) whose dividend is
  // not the index itself, stay where they are.
  Var n = Var::Shape("n");
  Var f("f"), j("j");
  Buffer c("C", DataType::Int64(), {n, 4});
  Stmt body = For(j, 1, 4, ForKind::kSerial,
                  BufferStore(c, FloorDiv(f, j) + FloorMod(f + 1, n), {f, j}));
  std::unordered_set<const VarNode*> outside = {n.get()};
  Stmt hoisted = HoistIndexDivisions(f, body, [&](const VarNode* v) { return outside.count(v) > 0; });
  EXPECT_TRUE(hoisted.same_as(body)) << PrintStmt(hoisted);
}

}  // namespace
}  // namespace kiln::codegen
