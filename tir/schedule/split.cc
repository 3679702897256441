// Split: one loop into nested loops whose combined index walks the original range.
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

namespace {

using namespace schedule_internal;  // NOLINT

// Adds `condition` to the predicate of every block directly below `stmt`; with no block
// below, guards the whole statement with an `if`.
Stmt Guard(const Stmt& stmt, const PrimExpr& condition) {
  std::vector<Stmt> blocks = OutermostBlocks(stmt);
  if (blocks.empty()) return IfThenElse(condition, stmt);
  Stmt out = stmt;
  for (const Stmt& b : blocks) {
    const auto* block = b.as<BlockNode>();
    PrimExpr predicate = block->predicate.defined() ? And(condition, block->predicate) : condition;
    out = ReplaceStmt(out, b.get(),
                      Block(block->name, block->iter_vars, block->body, block->init, predicate, block->alloc_buffers));
  }
  return out;
}

}  // namespace

absl::StatusOr<SplitResult> Split(const PrimFunc& func, const std::string& loop_name,
                                  const std::vector<int64_t>& factors) {
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "split"));
  const auto* loop = loop_stmt.as<ForNode>();
  if (factors.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("split: loop '", loop_name, "' needs at least two factors, got ",
                                                   factors.size()));
  }
  if (loop->for_kind != ForKind::kSerial && loop->for_kind != ForKind::kUnrolled) {
    return absl::InvalidArgumentError(absl::StrCat("split: loop '", loop_name, "' is ", KindWord(loop->for_kind),
                                                   "; split it before changing its kind"));
  }
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < factors.size(); ++i) {
    if (factors[i] == -1) {
      if (inferred >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("split: loop '", loop_name, "': at most one factor may be -1 (inferred)"));
      }
      inferred = static_cast<int>(i);
    } else if (factors[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("split: loop '", loop_name, "': factor ", factors[i], " is not positive (or -1)"));
    } else {
      known *= factors[i];
    }
  }
  DataType dt = loop->loop_var.dtype();
  Analyzer analyzer;
  PrimExpr extent = loop->extent;
  std::vector<PrimExpr> extents;
  for (int64_t f : factors) extents.push_back(IntImm(dt, f));
  bool exact;
  if (inferred >= 0) {
    extents[inferred] = analyzer.Simplify(FloorDiv(extent + IntImm(dt, known - 1), IntImm(dt, known)));
    exact = analyzer.CanProveEqual(FloorMod(extent, IntImm(dt, known)), IntImm(dt, 0));
  } else {
    if (!analyzer.CanProveLE(extent, IntImm(dt, known))) {
      return absl::InvalidArgumentError(
          absl::StrCat("split: factors of loop '", loop_name, "' cover ", known, " iterations but its extent is ",
                       ToString(extent), "; write -1 for one factor to infer it"));
    }
    exact = analyzer.CanProveEqual(extent, IntImm(dt, known));
  }

  NameSet used = UsedNames(func);
  std::vector<Var> vars;
  std::vector<std::string> names;
  for (size_t i = 0; i < factors.size(); ++i) {
    names.push_back(FreshName(absl::StrCat(loop_name, "_", i), &used));
    vars.emplace_back(names.back(), dt);
  }
  // index = ((v0 * e1 + v1) * e2 + v2) ...
  PrimExpr index = vars[0];
  for (size_t i = 1; i < vars.size(); ++i) index = index * extents[i] + vars[i];
  index = analyzer.Simplify(index);
  PrimExpr value = loop->min.as_int() == 0 ? index : index + loop->min;

  Stmt body = SimplifyIndices(Substitute(loop->body, VarMap{{loop->loop_var.get(), value}}));
  if (!exact) body = Guard(body, LT(index, extent));
  for (size_t i = vars.size(); i-- > 0;) body = For(vars[i], IntImm(dt, 0), extents[i], ForKind::kSerial, body);
  return SplitResult{WithBody(func, ReplaceStmt(func->body, loop, body)), names};
}

}  // namespace kiln::tir::schedule_primitive
