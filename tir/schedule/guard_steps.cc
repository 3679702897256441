// GuardSteps: each step of a serial loop inside a tile checks once whether its rows are all
// in range, so whole steps run without conditions (registers) and only the last, partial
// step keeps them; steps with no row in range run nothing.
#include <string>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

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
  NameSet used = UsedNames(func);
  Stmt partial = CopyWithFreshDefinitions(loop->body, "_part", &used);
  // A step whose first iteration already fails a condition runs no block (each condition's
  // left side only grows): skipped, when every block of the step carries the same
  // conditions (otherwise a block without them would be skipped too).
  const bool all_guarded = stripper.first_guards.size() == static_cast<size_t>(stripper.blocks);
  bool same = all_guarded;
  const std::string first_text = all_guarded ? ToString(AllOf(stripper.first_guards[0])) : "";
  for (const std::vector<PrimExpr>& f : stripper.first_guards) same &= ToString(AllOf(f)) == first_text;
  if (same) partial = IfThenElse(AllOf(stripper.first_guards[0]), partial);
  Stmt body = IfThenElse(AllOf(stripper.guards), whole, partial);
  return WithBody(func, ReplaceStmt(func->body, loop,
                                    For(loop->loop_var, loop->min, loop->extent, loop->for_kind, body,
                                        loop->thread_tag)));
}

}  // namespace kiln::tir::schedule_primitive
