// Reorder: permutes loops within one chain of directly nested loops.
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

absl::StatusOr<PrimFunc> Reorder(const PrimFunc& func, const std::vector<std::string>& names) {
  if (names.size() < 2) return absl::InvalidArgumentError("reorder: needs at least two loops");
  std::set<const StmtNode*> wanted;
  std::vector<Stmt> given;
  for (const std::string& name : names) {
    KILN_ASSIGN_OR_RETURN(Stmt s, FindLoop(func, name, "reorder"));
    if (!wanted.insert(s.get()).second) {
      return absl::InvalidArgumentError(absl::StrCat("reorder: loop '", name, "' is given twice"));
    }
    given.push_back(s);
  }
  // The outermost given loop is the one with the fewest ancestors.
  Stmt outer;
  size_t depth = SIZE_MAX;
  for (const Stmt& s : given) {
    size_t d = AncestorsOf(func->body, s.get()).size();
    if (d < depth) depth = d, outer = s;
  }
  // Follow the chain of directly nested loops down from it until every given loop is met.
  std::vector<Stmt> chain;
  size_t met = 0;
  for (Stmt cur = outer;; cur = cur.as<ForNode>()->body) {
    if (cur.kind() != StmtKind::kFor) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reorder: the loops are not one chain of directly nested loops below '", outer.as<ForNode>()->loop_var.name(),
          "' (the chain ends before reaching all of them)"));
    }
    chain.push_back(cur);
    if (wanted.count(cur.get()) && ++met == wanted.size()) break;
  }
  // Positions of the given loops in the chain receive them in the requested order.
  std::vector<Stmt> order = chain;
  size_t next = 0;
  for (Stmt& s : order) {
    if (wanted.count(s.get())) s = given[next++];
  }
  // A loop's range may use the variables of the chain's loops that stay above it (a column
  // edge's pairs, cut at its last column, under its sub-tiles), no other.
  std::vector<const VarNode*> below;
  for (const Stmt& s : order) below.push_back(s.as<ForNode>()->loop_var.get());
  for (const Stmt& s : order) {
    const auto* l = s.as<ForNode>();
    below.erase(below.begin());
    if (UsesAnyVar(l->min, below) || UsesAnyVar(l->extent, below)) {
      return absl::InvalidArgumentError(absl::StrCat("reorder: the range of loop '", l->loop_var.name(),
                                                     "' depends on a loop of the nest that would be inside it"));
    }
  }
  Stmt body = chain.back().as<ForNode>()->body;
  for (size_t i = order.size(); i-- > 0;) {
    const auto* l = order[i].as<ForNode>();
    body = For(l->loop_var, l->min, l->extent, l->for_kind, body, l->thread_tag);
  }
  return WithBody(func, ReplaceStmt(func->body, outer.get(), body));
}

}  // namespace kiln::tir::schedule_primitive
