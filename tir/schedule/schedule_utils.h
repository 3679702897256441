// Internal helpers shared by the schedule primitives: finding loops and blocks by their
// handles (names), paths to a statement, replacing one statement of a tree, fresh names.
// Not part of the public schedule API (tir/schedule/schedule.h).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "support/name_set.h"
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
// The same, with the statements enclosing each one (outermost first).
void ForEachStmtWithPath(const Stmt& root,
                         const std::function<void(const Stmt&, const std::vector<Stmt>& ancestors)>& fn);

// The blocks directly below `stmt` (not those nested inside another block); `stmt` itself
// if it is a block.
std::vector<Stmt> OutermostBlocks(const Stmt& stmt);

bool UsesVar(const PrimExpr& expr, const VarNode* var);
bool UsesAnyVar(const PrimExpr& expr, const std::vector<const VarNode*>& vars);
// Whether `expr` loads from `buffer`.
bool ReadsBuffer(const PrimExpr& expr, const BufferNode* buffer);

using support::NameSet;

// Names of every variable and block defined in the function (so new ones can be fresh).
NameSet UsedNames(const PrimFunc& func);
// used->Fresh(base).
std::string FreshName(const std::string& base, NameSet* used);

// A copy of `stmt` that defines its own variables, buffers and blocks (new nodes), so the
// copy can sit in the same function as the original (IR defines each once). The copy's
// loops and blocks, the schedule's handles, are named `<name><suffix>`, made unique against
// `used` (which receives the new names); other variables and buffers keep their names.
// Deterministic: the same statement and `used` give the same names.
Stmt CopyWithFreshDefinitions(const Stmt& stmt, const std::string& suffix, NameSet* used);

// The variables a PrimFunc's body may use without defining them: its scalar parameters and
// the symbolic sizes in its buffer parameters' shapes and strides, in parameter order,
// each once.
std::vector<Var> FunctionVars(const PrimFunc& func);

// Simplifies block bindings, predicates and buffer indices (after a substitution).
Stmt SimplifyIndices(const Stmt& stmt);
PrimExpr SimplifyExpr(const PrimExpr& expr);

// A new PrimFunc with the same parameters and attributes and another body.
PrimFunc WithBody(const PrimFunc& func, Stmt body);

// The buffers a statement loads from and stores to (allocated inside it or not).
struct BufferAccesses {
  std::set<const BufferNode*> reads;
  std::set<const BufferNode*> writes;
  bool Touches(const BufferNode* b) const { return reads.count(b) || writes.count(b); }
};
BufferAccesses AccessesOf(const Stmt& stmt);
// Number of loads plus stores of `buffer` in `stmt`.
int CountAccesses(const Stmt& stmt, const BufferNode* buffer);
// When `block` loads `buffer` at least once and every load indexes it by the block's own
// iteration variables alone, each dimension by one variable and each variable always in the
// same dimension (B[vi, vj], B[vj, vi]), the dimension each iteration variable indexes;
// nullopt otherwise. Tells which instance of the block reads a given element.
std::optional<std::vector<int>> DimsOfIterVars(const BlockNode* block, const BufferNode* buffer);

// The top of the chain of For loops directly enclosing `block` (each the only statement
// of its parent loop), or the block itself when its parent is not such a loop.
Stmt NestRoot(const Stmt& root, const StmtNode* block);

// Where two statements sit in their lowest common SeqStmt: `seq` and the indices of the
// children holding each. Unset `seq` when they share no SeqStmt.
struct SeqPosition {
  const SeqStmtNode* seq = nullptr;
  size_t first = 0, second = 0;
};
SeqPosition CommonSeq(const Stmt& root, const StmtNode* a, const StmtNode* b);

// The block's bindings substituted into `expr`: its iteration variables replaced by the
// loop expressions they are bound to.
PrimExpr InLoopTerms(const BlockNode* block, const PrimExpr& expr);

// The range [min, min + extent) an index expression (in loop terms) covers while the
// `inner` loops run and the other variables stay fixed. Fails (an empty message) unless the
// expression grows by a constant >= 0 with each inner loop variable.
struct IndexRange {
  PrimExpr min;
  PrimExpr extent;
};
absl::StatusOr<IndexRange> RangeOver(const PrimExpr& index, const std::vector<const ForNode*>& inner);

// Shrinks the buffer of the Allocate `alloc` (whose accesses must all lie inside `loop`, a
// descendant) to the region one iteration of `loop` touches, when that region has a
// constant size, and moves the allocation to wrap the loop's body. Accesses are re-indexed
// relative to the region, in loop terms. Returns the function unchanged when the region
// cannot be bounded.
PrimFunc CompactAllocation(const PrimFunc& func, const AllocateNode* alloc, const ForNode* loop);

// `stmt` without the allocation of `buffer`, when nothing in it accesses the buffer.
Stmt DropAllocation(const Stmt& stmt, const BufferNode* buffer);
// `stmt` without the allocations (Allocate, a block's alloc_buffers) of `buffers`, which the
// caller knows nothing accesses any more.
Stmt DropAllocations(const Stmt& stmt, const std::unordered_set<const BufferNode*>& buffers);

// "serial", "parallel", ... for messages.
std::string KindWord(ForKind kind);

// Elements of `element` (whole scalar bytes) in one 64-byte cache line, the span one
// prefetch brings in (PrefetchNext, PrefetchAhead).
int64_t ElementsPerCacheLine(DataType element);

}  // namespace kiln::tir::schedule_internal
