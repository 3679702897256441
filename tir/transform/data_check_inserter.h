// DataCheckInserter: what the passes that assert a condition on data-dependent values share
// (insert_division_checks.h, insert_index_checks.h).
//
// A value depends on the data when it contains a buffer load, a scalar parameter that is not
// a buffer dimension, or a let variable bound to such a value (Depends). A subclass visits the
// operations it guards and calls AddCheck; the assert lands just before the statement that
// holds the operation. Inside a select's branch (guarded()), the check applies only when that
// branch is taken — the condition becomes `!(guard) || ok` — and the subclass must also make
// the operation itself harmless, because the emitter evaluates both branches. Let-bound values
// a check refers to are re-bound (to fresh variables) inside it.
#pragma once

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tir/stmt_functor.h"

namespace kiln::tir::transform {

class DataCheckInserter : public StmtExprMutator {
 public:
  explicit DataCheckInserter(const PrimFunc& func);

  Stmt VisitStmt(const Stmt& stmt) override;
  Stmt VisitStmt_(const LetStmtNode* op, const Stmt& self) override;
  PrimExpr VisitExpr_(const LetNode* op, const PrimExpr& self) override;
  PrimExpr VisitExpr_(const SelectNode* op, const PrimExpr& self) override;

 protected:
  bool Depends(const PrimExpr& e) const;
  bool guarded() const { return !guards_.empty(); }
  // Asserts `ok` before the current statement; `values` fill the message's `{}`s.
  void AddCheck(PrimExpr ok, const std::string& message, std::vector<PrimExpr> values = {});

 private:
  std::unordered_set<const VarNode*> tainted_;
  std::vector<Stmt> pending_;                        // checks for the statement being visited
  std::vector<PrimExpr> guards_;                     // conditions of the enclosing select branches
  std::vector<std::pair<Var, PrimExpr>> lets_;       // enclosing let expressions
};

}  // namespace kiln::tir::transform
