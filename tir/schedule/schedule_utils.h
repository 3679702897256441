// Internal helpers shared by the schedule primitives: finding loops and blocks by their
// handles (names), paths to a statement, replacing one statement of a tree, fresh names.
// Not part of the public schedule API (tir/schedule/schedule.h).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::tir::schedule_internal {

// The unique For whose loop variable is named `name`; `primitive` prefixes the error.
absl::StatusOr<Stmt> FindLoop(const PrimFunc& func, const std::string& name, std::string_view primitive);
// The unique Block named `name`.
absl::StatusOr<Stmt> FindBlock(const PrimFunc& func, const std::string& name, std::string_view primitive);

// The statements enclosing `target` (by node identity), outermost first; empty when
// `target` is the root or absent.
std::vector<Stmt> AncestorsOf(const Stmt& root, const StmtNode* target);

// The loops a block sits in, outermost first, up to the nearest enclosing block.
std::vector<Stmt> LoopsAbove(const Stmt& root, const StmtNode* block);

// `root` with the node `target` replaced by `replacement`.
Stmt ReplaceStmt(const Stmt& root, const StmtNode* target, const Stmt& replacement);

// Calls `fn` on every statement of the tree, parents before children.
void ForEachStmt(const Stmt& root, const std::function<void(const Stmt&)>& fn);

// The blocks directly below `stmt` (not those nested inside another block); `stmt` itself
// if it is a block.
std::vector<Stmt> OutermostBlocks(const Stmt& stmt);

bool UsesVar(const PrimExpr& expr, const VarNode* var);
bool UsesAnyVar(const PrimExpr& expr, const std::vector<const VarNode*>& vars);

// Names of every variable and block defined in the function (so new ones can be fresh).
std::set<std::string> UsedNames(const PrimFunc& func);
// `base` if unused, else `base_1`, `base_2`, ...; the result is added to `used`.
std::string FreshName(const std::string& base, std::set<std::string>* used);

// Simplifies block bindings, predicates and buffer indices (after a substitution).
Stmt SimplifyIndices(const Stmt& stmt);
PrimExpr SimplifyExpr(const PrimExpr& expr);

// A new PrimFunc with the same parameters and attributes and another body.
PrimFunc WithBody(const PrimFunc& func, Stmt body);

// "serial", "parallel", ... for messages.
std::string KindWord(ForKind kind);

}  // namespace kiln::tir::schedule_internal
