// CutLoopsPastLaneBounds: see edge_loop_cut.h.
#include "tir/schedule/edge_loop_cut.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_internal {

namespace {

// The first value of `loop`'s variable from which `block` runs for no iteration of the
// loops `inner` (those between the loop and the block), from one lane condition of its
// predicate; nullopt when it has none of the form edge_loop_cut.h describes.
std::optional<PrimExpr> DeadFrom(const ForNode* loop, const std::vector<const ForNode*>& inner,
                                 const BlockNode* block) {
  if (!block->predicate.defined()) return std::nullopt;
  std::vector<const VarNode*> inner_vars, lanes;
  for (const ForNode* l : inner) {
    inner_vars.push_back(l->loop_var.get());
    if (l->for_kind == ForKind::kVectorized) lanes.push_back(l->loop_var.get());
  }
  const VarNode* x = loop->loop_var.get();
  std::vector<PrimExpr> conjuncts;
  FlattenAnd(InLoopTerms(block, block->predicate), &conjuncts);
  for (const PrimExpr& c : conjuncts) {
    const auto* lt = c.as<BinaryNode>();
    if (c.kind() != ExprKind::kLT || !UsesVar(lt->a, x) || !UsesAnyVar(lt->a, lanes) || UsesVar(lt->b, x) ||
        UsesAnyVar(lt->b, inner_vars)) {
      continue;
    }
    absl::StatusOr<IndexRange> range = RangeOver(lt->a, inner);
    if (!range.ok()) continue;
    const PrimExpr& first = range->min;  // `a` at the inner loops' first iteration, in x
    const DataType t = first.dtype();
    PrimExpr at_zero = SimplifyExpr(Substitute(first, VarMap{{x, IntImm(loop->loop_var.dtype(), 0)}}));
    PrimExpr x_in_t = t == loop->loop_var.dtype() ? PrimExpr(loop->loop_var) : Cast(t, loop->loop_var);
    std::optional<int64_t> step =
        SimplifyExpr(Substitute(first, VarMap{{x, loop->loop_var + 1}}) - first).as_int();
    if (!step || *step <= 0) continue;
    // Linear in x: a = step * x + at_zero.
    if (SimplifyExpr(first - (IntImm(t, *step) * x_in_t + at_zero)).as_int() != 0) continue;
    PrimExpr b = lt->b.dtype() == t ? lt->b : Cast(t, lt->b);
    return SimplifyExpr(FloorDiv(b - at_zero + IntImm(t, *step - 1), IntImm(t, *step)));
  }
  return std::nullopt;
}

// The loops and blocks below `stmt`, each block's first dead iteration of `loop` appended to
// `dead_from`; false when a block has no lane bound or another kind of statement sits
// outside the blocks.
bool CollectDeadFrom(const ForNode* loop, const Stmt& stmt, std::vector<const ForNode*>* inner,
                     std::vector<PrimExpr>* dead_from) {
  if (const auto* f = stmt.as<ForNode>()) {
    inner->push_back(f);
    bool ok = CollectDeadFrom(loop, f->body, inner, dead_from);
    inner->pop_back();
    return ok;
  }
  if (const auto* seq = stmt.as<SeqStmtNode>()) {
    for (const Stmt& s : seq->seq) {
      if (!CollectDeadFrom(loop, s, inner, dead_from)) return false;
    }
    return true;
  }
  if (const auto* block = stmt.as<BlockNode>()) {
    std::optional<PrimExpr> from = DeadFrom(loop, *inner, block);
    if (!from) return false;
    dead_from->push_back(*from);
    return true;
  }
  return false;
}

class LoopCutter : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kSerial || !loop->extent.as_int()) return s;
    std::vector<const ForNode*> inner;
    std::vector<PrimExpr> dead_from;
    if (!CollectDeadFrom(loop, loop->body, &inner, &dead_from) || dead_from.empty()) return s;
    PrimExpr last;  // the iteration every block is dead from
    std::set<std::string> seen;
    for (const PrimExpr& d : dead_from) {
      if (!seen.insert(ToString(d)).second) continue;
      last = last.defined() ? Max(last, d) : d;
    }
    const DataType t = loop->extent.dtype();
    if (last.dtype() != t) last = Cast(t, last);
    PrimExpr extent = SimplifyExpr(Min(loop->extent, Max(IntImm(t, 0), last - loop->min)));
    if (extent.as_int() == loop->extent.as_int()) return s;
    return For(loop->loop_var, loop->min, extent, loop->for_kind, loop->body);
  }
};

}  // namespace

Stmt CutLoopsPastLaneBounds(const Stmt& body) { return LoopCutter().VisitStmt(body); }

}  // namespace kiln::tir::schedule_internal
