// BranchOn: loop versioning — the body (or one loop of it) becomes `if (condition) { body }
// else { copy }`, so each version can be scheduled for the sizes it will run at.
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/structural_equal.h"
#include "tir/text_parser.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

absl::StatusOr<BranchResult> BranchOn(const PrimFunc& func, const PrimExpr& condition, const std::string& loop) {
  if (!condition.defined() || !condition.dtype().is_bool()) {
    return absl::InvalidArgumentError("branch_on: the condition must be a bool expression");
  }
  // A trace stores the condition as text: it must read back, against the function's own
  // variables, as the same expression.
  const std::string text = ToString(condition);
  absl::StatusOr<PrimExpr> reread = ParsePrimExpr(text, FunctionVars(func), "branch_on");
  if (!reread.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("branch_on: condition '", text, "': ", reread.status().message()));
  }
  if (!StructuralEqual(*reread, condition)) {
    return absl::InvalidArgumentError(
        absl::StrCat("branch_on: condition '", text, "' does not read back as itself from a trace"));
  }
  // The whole body, or the one loop named (a version of one part of the function only).
  Stmt versioned = func->body;
  if (!loop.empty()) {
    KILN_ASSIGN_OR_RETURN(versioned, FindLoop(func, loop, "branch_on"));
  }
  NameSet used = UsedNames(func);
  Stmt copy = CopyWithFreshDefinitions(versioned, "_else", &used);
  BranchResult result;
  ForEachStmt(copy, [&](const Stmt& s) {
    if (const auto* b = s.as<BlockNode>()) result.else_blocks.push_back(b->name);
  });
  result.func = WithBody(func, ReplaceStmt(func->body, versioned.get(), IfThenElse(condition, versioned, copy)));
  return result;
}

}  // namespace kiln::tir::schedule_primitive
