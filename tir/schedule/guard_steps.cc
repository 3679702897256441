// GuardSteps: each step of a serial loop inside a tile checks once whether its rows are all
// in range, so whole steps run without conditions (registers) and only the last, partial
// step keeps them; steps with no row in range run nothing.
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// `body` with the loop of variable `var` cut to its first iteration.
class CutToFirstIteration : public StmtExprMutator {
 public:
  explicit CutToFirstIteration(const VarNode* var) : var_(var) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    if (op->loop_var.get() != var_) return s;
    const auto* f = s.as<ForNode>();
    return For(f->loop_var, f->min, IntImm(f->extent.dtype(), 1), f->for_kind, f->body, f->thread_tag);
  }

 private:
  const VarNode* var_;
};

// Whether a statement outside every block stores to a buffer: such a store runs at each
// iteration whatever the blocks' conditions say.
class StoresOutsideBlocks : public StmtExprVisitor {
 public:
  void VisitStmt_(const BlockNode*, const Stmt&) override {}
  void VisitStmt_(const BufferStoreNode*, const Stmt&) override { found = true; }
  bool found = false;
};

// The loop of two iterations inside `body` that every condition the stripper dropped
// changes with, and no other inner loop: in a partial step (its conditions hold at the
// first iteration, not all at the last) only that loop's first iteration runs a block.
// nullopt otherwise, when the blocks do not all carry the same conditions, or when a store
// outside the blocks (a column tail's) lies in that loop.
std::optional<const VarNode*> OnlyFirstOfTwoRuns(const Stmt& body, const TileConditionStripper& stripper,
                                                 bool same_first) {
  if (!same_first || stripper.varying.size() != 1) return std::nullopt;
  const std::string last_text = ToString(AllOf(stripper.last_guards[0]));
  for (const std::vector<PrimExpr>& l : stripper.last_guards) {
    if (ToString(AllOf(l)) != last_text) return std::nullopt;
  }
  const VarNode* var = *stripper.varying.begin();
  bool two = false;
  ForEachStmt(body, [&](const Stmt& s) {
    const auto* f = s.as<ForNode>();
    if (!f || f->loop_var.get() != var) return;
    StoresOutsideBlocks outside;
    outside.VisitStmt(f->body);
    two = f->extent.as_int() == 2 && !outside.found;
  });
  if (!two) return std::nullopt;
  return var;
}

}  // namespace

absl::StatusOr<PrimFunc> GuardSteps(const PrimFunc& func, const std::string& loop_name) {
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "guard_steps"));
  const auto* loop = loop_stmt.as<ForNode>();
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("guard_steps: loop '", loop_name, "' ", why));
  };
  if (loop->for_kind != ForKind::kSerial) return refuse("is not serial");
  DefinedVars inner;
  inner.VisitStmt(loop->body);
  TileConditionStripper stripper(inner.vars, TileConditionStripper::Drop::kAll);
  Stmt whole = stripper.VisitStmt(loop->body);
  if (!stripper.ok) return refuse("has a condition on a vector lane that cannot be checked per step");
  bool on_step = false;
  for (const PrimExpr& g : stripper.guards) on_step |= UsesVar(g, loop->loop_var.get());
  if (!on_step) return refuse("has no block condition that changes with its steps");
  // A step whose first iteration already fails a condition runs no block (each condition's
  // left side only grows): skipped, when every block of the step carries the same
  // conditions (otherwise a block without them would be skipped too).
  const bool all_guarded = stripper.first_guards.size() == static_cast<size_t>(stripper.blocks);
  bool same = all_guarded;
  const std::string first_text = all_guarded ? ToString(AllOf(stripper.first_guards[0])) : "";
  for (const std::vector<PrimExpr>& f : stripper.first_guards) same &= ToString(AllOf(f)) == first_text;
  // Steps of two rows: the partial step is its first row, without conditions (a row kept
  // under its condition in every k iteration would hold its accumulators in memory).
  Stmt partial_body = loop->body;
  if (std::optional<const VarNode*> rows = OnlyFirstOfTwoRuns(loop->body, stripper, same)) {
    partial_body = CutToFirstIteration(*rows).VisitStmt(whole);
  }
  NameSet used = UsedNames(func);
  Stmt partial = CopyWithFreshDefinitions(partial_body, "_part", &used);
  if (same) partial = IfThenElse(AllOf(stripper.first_guards[0]), partial);
  Stmt body = IfThenElse(AllOf(stripper.guards), whole, partial);
  return WithBody(func, ReplaceStmt(func->body, loop,
                                    For(loop->loop_var, loop->min, loop->extent, loop->for_kind, body,
                                        loop->thread_tag)));
}

}  // namespace kiln::tir::schedule_primitive
