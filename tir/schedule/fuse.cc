// Fuse: directly nested loops into one whose index enumerates theirs in row-major order.
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

absl::StatusOr<FuseResult> Fuse(const PrimFunc& func, const std::vector<std::string>& names) {
  if (names.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("fuse: needs at least two loops, got ", names.size()));
  }
  std::vector<const ForNode*> loops;
  for (const std::string& name : names) {
    KILN_ASSIGN_OR_RETURN(Stmt s, FindLoop(func, name, "fuse"));
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kSerial) {
      return absl::InvalidArgumentError(
          absl::StrCat("fuse: loop '", name, "' is ", KindWord(loop->for_kind), "; fuse before changing loop kinds"));
    }
    if (loop->min.as_int() != 0) {
      return absl::InvalidArgumentError(absl::StrCat("fuse: loop '", name, "' starts at ", ToString(loop->min),
                                                     ", not 0"));
    }
    if (!loops.empty()) {
      if (!loops.back()->body.same_as(s)) {
        return absl::InvalidArgumentError(absl::StrCat("fuse: loop '", name, "' is not the whole body of loop '",
                                                       loops.back()->loop_var.name(),
                                                       "'; fuse takes directly nested loops, outermost first"));
      }
      if (loop->loop_var.dtype() != loops[0]->loop_var.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("fuse: loops '", names[0], "' and '", name,
                                                       "' have different index types"));
      }
    }
    loops.push_back(loop);
  }
  std::vector<const VarNode*> vars;
  for (const ForNode* l : loops) {
    if (UsesAnyVar(l->extent, vars)) {
      return absl::InvalidArgumentError(absl::StrCat("fuse: the extent of loop '", l->loop_var.name(),
                                                     "' depends on an outer loop being fused"));
    }
    vars.push_back(l->loop_var.get());
  }
  DataType dt = loops[0]->loop_var.dtype();
  NameSet used = UsedNames(func);
  std::string fused_name = FreshName(absl::StrCat(absl::StrJoin(names, "_"), "_fused"), &used);
  Var fused(fused_name, dt);
  Analyzer analyzer;
  VarMap vmap;
  PrimExpr inner = IntImm(dt, 1);  // product of the extents of the loops inside the current one
  for (size_t i = loops.size(); i-- > 0;) {
    PrimExpr v = analyzer.Simplify(i + 1 == loops.size() ? PrimExpr(fused) : FloorDiv(fused, inner));
    if (i > 0) v = FloorMod(v, loops[i]->extent);
    vmap[loops[i]->loop_var.get()] = analyzer.Simplify(v);
    inner = analyzer.Simplify(inner * loops[i]->extent);
  }
  Stmt body = SimplifyIndices(Substitute(loops.back()->body, vmap));
  Stmt loop = For(fused, IntImm(dt, 0), inner, ForKind::kSerial, body);
  return FuseResult{WithBody(func, ReplaceStmt(func->body, loops[0], loop)), fused_name};
}

}  // namespace kiln::tir::schedule_primitive
