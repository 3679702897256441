#include "tir/schedule/tile_conditions.h"

#include <set>
#include <string>

#include "tir/schedule/schedule_utils.h"

namespace kiln::tir::schedule_internal {

void FlattenAnd(const PrimExpr& e, std::vector<PrimExpr>* out) {
  if (e.kind() == ExprKind::kAnd) {
    const auto* b = e.as<BinaryNode>();
    FlattenAnd(b->a, out);
    FlattenAnd(b->b, out);
  } else {
    out->push_back(e);
  }
}

PrimExpr AllOf(const std::vector<PrimExpr>& conditions) {
  PrimExpr condition = conditions[0];
  std::set<std::string> seen = {ToString(condition)};
  for (size_t i = 1; i < conditions.size(); ++i) {
    if (seen.insert(ToString(conditions[i])).second) condition = And(condition, conditions[i]);
  }
  return condition;
}

Stmt TileConditionStripper::VisitStmt_(const ForNode* op, const Stmt& self) {
  loops_.push_back(op);
  Stmt s = StmtExprMutator::VisitStmt_(op, self);
  loops_.pop_back();
  return s;
}

Stmt TileConditionStripper::VisitStmt_(const BlockNode* op, const Stmt& self) {
  Stmt s = StmtExprMutator::VisitStmt_(op, self);
  const auto* block = s.as<BlockNode>();
  ++blocks;
  if (!block->predicate.defined()) return s;
  std::vector<PrimExpr> conjuncts, keep, first, last;
  FlattenAnd(block->predicate, &conjuncts);
  for (const PrimExpr& c : conjuncts) {
    bool on_lane = false;
    for (const ForNode* l : loops_) on_lane |= l->for_kind == ForKind::kVectorized && UsesVar(c, l->loop_var.get());
    const bool droppable = drop_ == Drop::kAll || (drop_ == Drop::kLanes) == on_lane;
    std::optional<PrimExpr> guard = droppable ? AtIteration(c, /*last=*/true) : std::nullopt;
    if (guard) {
      guards.push_back(*guard);
      last.push_back(*guard);
      first.push_back(*AtIteration(c, /*last=*/false));
      for (const ForNode* l : loops_) {
        if (UsesVar(c, l->loop_var.get())) varying.insert(l->loop_var.get());
      }
      continue;
    }
    keep.push_back(c);
    ok &= !on_lane || drop_ == Drop::kOthers;
  }
  if (!first.empty()) {
    first_guards.push_back(first);
    last_guards.push_back(last);
  }
  PrimExpr predicate;
  for (const PrimExpr& c : keep) predicate = predicate.defined() ? And(predicate, c) : c;
  return Block(block->name, block->iter_vars, block->body, block->init, predicate, block->alloc_buffers);
}

std::optional<PrimExpr> TileConditionStripper::AtIteration(const PrimExpr& c, bool last) const {
  if (c.kind() != ExprKind::kLT) return std::nullopt;
  const auto* lt = c.as<BinaryNode>();
  if (UsesAnyVar(lt->b, inner_)) return std::nullopt;
  PrimExpr a = lt->a;
  for (const ForNode* l : loops_) {
    const VarNode* v = l->loop_var.get();
    if (!UsesVar(a, v)) continue;
    std::optional<int64_t> extent = l->extent.as_int();
    std::optional<int64_t> step = SimplifyExpr(Substitute(a, VarMap{{v, l->loop_var + 1}}) - a).as_int();
    if (!extent || !step || *step < 0) return std::nullopt;
    a = SimplifyExpr(Substitute(a, VarMap{{v, last ? l->min + (*extent - 1) : l->min}}));
  }
  if (UsesAnyVar(a, inner_)) return std::nullopt;
  return SimplifyExpr(LT(a, lt->b));
}

}  // namespace kiln::tir::schedule_internal
