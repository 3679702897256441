// Block predicates of a tile, split into the conditions that hold for a whole iteration of
// an enclosing loop when they hold at its last inner iteration (checked once, above it) and
// the conditions that must stay on the blocks. Shared by GuardVectorizedTails (guards above
// a tile's allocation) and GuardSteps (guards at each step of a loop inside a tile).
// Internal to the schedule primitives.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "tir/expr.h"
#include "tir/stmt.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_internal {

// The conjuncts of `e` (`a && b && ...`), in order.
void FlattenAnd(const PrimExpr& e, std::vector<PrimExpr>* out);

// The conjunction of `conditions` (at least one), each distinct condition once.
PrimExpr AllOf(const std::vector<PrimExpr>& conditions);

// Drops from the predicates of the blocks it visits every condition `a < b` that holds for
// every iteration of the visited loops when it holds at their last iteration (`a` growing
// by a constant step with each, `b` independent of `inner`, the variables defined inside
// the visited statement), collecting those last-iteration conditions as `guards`. `drop`
// picks which conditions may go: those on a vectorized loop's lane, those on no lane, or
// both. `ok` turns false when a condition on a vector lane must stay (unless only the
// others were to be dropped).
//
// Each block's dropped conditions are also evaluated at the visited loops' first iteration
// (`first_guards`, one list per block that had any): `a` only grows, so when one of them
// fails there, the block runs for no iteration at all. `last_guards` are the same lists at
// the last iteration, and `varying` the visited loops (by variable) the dropped conditions
// change with.
class TileConditionStripper : public StmtExprMutator {
 public:
  enum class Drop { kLanes, kOthers, kAll };
  TileConditionStripper(std::vector<const VarNode*> inner, Drop drop) : inner_(std::move(inner)), drop_(drop) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override;
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override;

  bool ok = true;
  std::vector<PrimExpr> guards;
  std::vector<std::vector<PrimExpr>> first_guards;
  std::vector<std::vector<PrimExpr>> last_guards;
  std::set<const VarNode*> varying;
  int blocks = 0;  // blocks visited, with or without conditions

 private:
  // The condition at the visited loops' last (or first) iteration; nullopt when it is not
  // `a < b` with `a` nondecreasing in each of them and `b` free of the inner variables.
  std::optional<PrimExpr> AtIteration(const PrimExpr& c, bool last) const;

  std::vector<const VarNode*> inner_;
  Drop drop_;
  std::vector<const ForNode*> loops_;
};

// The variables a statement defines (loop variables, block iteration variables, ...).
class DefinedVars : public StmtExprVisitor {
 public:
  void VisitVarDef(const Var& var) override { vars.push_back(var.get()); }
  std::vector<const VarNode*> vars;
};

}  // namespace kiln::tir::schedule_internal
