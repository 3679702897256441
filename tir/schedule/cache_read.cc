// CacheRead: the part of an input a block reads during one iteration of a loop is copied
// into a compact local buffer at the start of that iteration, and the block reads the copy
// (a packed panel: contiguous, reused by every inner iteration). In "shared" scope the copy
// is a GPU thread block's tile (lower_cooperative_copies spreads it over the threads).
#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

class LoadCollector : public StmtExprVisitor {
 public:
  explicit LoadCollector(const std::string& name) : name_(name) {}
  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    if (op->buffer->name == name_) {
      loads.push_back(op);
      if (!buffer.defined()) buffer = Buffer(op->buffer);
      distinct |= op->buffer.get() != buffer.get();
    }
    StmtExprVisitor::VisitExpr_(op, self);
  }
  std::vector<const BufferLoadNode*> loads;
  Buffer buffer;
  bool distinct = false;

 private:
  std::string name_;
};

class Redirect : public StmtExprMutator {
 public:
  Redirect(const BlockNode* block, const BufferNode* from, Buffer to, std::vector<PrimExpr> base)
      : block_(block), from_(from), to_(std::move(to)), base_(std::move(base)) {}
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = e.as<BufferLoadNode>();
    if (load->buffer.get() != from_) return e;
    std::vector<PrimExpr> indices;
    for (size_t d = 0; d < load->indices.size(); ++d) {
      indices.push_back(SimplifyExpr(InLoopTerms(block_, load->indices[d]) - base_[d]));
    }
    return to_.Load(std::move(indices));
  }

 private:
  const BlockNode* block_;
  const BufferNode* from_;
  Buffer to_;
  std::vector<PrimExpr> base_;
};

}  // namespace

absl::StatusOr<CacheReadResult> CacheRead(const PrimFunc& func, const std::string& name, const std::string& buffer_name,
                                          const std::string& loop_name, const std::string& scope) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, name, "cache_read"));
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "cache_read"));
  const auto* block = block_stmt.as<BlockNode>();
  const auto* loop = loop_stmt.as<ForNode>();
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache_read: '", buffer_name, "' of block '", name, "' at loop '", loop_name, "': ", why));
  };
  LoadCollector collector(buffer_name);
  collector.VisitStmt(block->body);
  if (collector.loads.empty()) return fail("the block does not read it");
  if (collector.distinct) return fail("the name is ambiguous");
  const Buffer& buffer = collector.buffer;
  // The loop encloses the block with no other block between (the loops between are the
  // ones the region walks; conditions there only narrow what is read).
  std::vector<Stmt> ancestors = AncestorsOf(func->body, block);
  auto at = std::find_if(ancestors.begin(), ancestors.end(), [&](const Stmt& a) { return a.same_as(loop_stmt); });
  if (at == ancestors.end()) return fail("the loop does not enclose the block");
  std::vector<const ForNode*> inner;
  for (auto it = at + 1; it != ancestors.end(); ++it) {
    if (it->kind() == StmtKind::kBlock) return fail("another block stands between the loop and the block");
    if (const auto* l = it->as<ForNode>()) inner.push_back(l);
  }
  // A shared copy serves every thread of the block: its region also spans the thread-bound
  // loops above `loop` (up to the block's loops), and it lives in the innermost of them,
  // where each thread (run serially) makes the whole copy itself before reading it.
  const ForNode* thread_loop = nullptr;
  if (scope == "shared") {
    for (auto it = ancestors.begin(); it != at; ++it) {
      const auto* l = it->as<ForNode>();
      if (l && l->for_kind == ForKind::kThreadBinding && l->thread_tag.rfind("threadIdx.", 0) == 0) {
        inner.push_back(l);
        thread_loop = l;
      }
    }
    if (!thread_loop) return fail("no loop bound to threadIdx encloses the loop (a shared copy serves a thread block)");
    if (AccessesOf(thread_loop->body).writes.count(buffer.get())) return fail("it is written inside the thread nest");
  } else if (scope != "local") {
    return fail(absl::StrCat("unknown scope '", scope, "' (local or shared)"));
  }
  if (AccessesOf(loop->body).writes.count(buffer.get())) return fail("it is written inside the loop");
  if (block->init.defined() && AccessesOf(block->init).reads.count(buffer.get())) return fail("the block's init reads it");

  // The region one iteration reads: per dimension a base and a constant offset range.
  size_t rank = buffer->shape.size();
  std::vector<PrimExpr> base(rank);
  std::vector<int64_t> lo(rank, 0);
  std::vector<std::optional<int64_t>> hi(rank);
  std::vector<PrimExpr> extent(rank);
  for (const BufferLoadNode* load : collector.loads) {
    for (size_t d = 0; d < rank; ++d) {
      absl::StatusOr<IndexRange> r = RangeOver(InLoopTerms(block, load->indices[d]), inner);
      if (!r.ok()) return fail(absl::StrCat("cannot bound the region read in dimension ", d));
      if (!base[d].defined()) {
        base[d] = r->min;
        extent[d] = r->extent;
        hi[d] = r->extent.as_int();
        continue;
      }
      std::optional<int64_t> offset = SimplifyExpr(r->min - base[d]).as_int();
      Analyzer analyzer;
      if (!offset || (!hi[d] && !(*offset == 0 && analyzer.CanProveEqual(r->extent, extent[d])))) {
        return fail(absl::StrCat("its reads cover regions of different shapes in dimension ", d));
      }
      if (hi[d]) {
        std::optional<int64_t> e = r->extent.as_int();
        if (!e) return fail(absl::StrCat("its reads cover regions of different shapes in dimension ", d));
        lo[d] = std::min(lo[d], *offset);
        hi[d] = std::max(*hi[d], *offset + *e);
      }
    }
  }
  std::vector<PrimExpr> shape;
  for (size_t d = 0; d < rank; ++d) {
    DataType dt = base[d].dtype();
    if (hi[d]) {
      base[d] = SimplifyExpr(base[d] + IntImm(dt, lo[d]));
      extent[d] = IntImm(dt, *hi[d] - lo[d]);
    }
    shape.push_back(extent[d]);
    if (scope == "shared" && !hi[d]) {
      return fail(absl::StrCat("the region read in dimension ", d, " has no constant size (shared memory is sized ",
                               "at compile time)"));
    }
  }

  // Where the block runs its whole region unconditionally (no condition of its predicate
  // names a loop that walks this dimension, no `if` in between) and reads it at exactly the
  // region's bounds, every element of the region is read by the program already, so it is
  // inside the buffer and the copy needs no bounds check.
  std::vector<bool> unguarded(rank, true);
  bool under_if = false;
  for (auto it = at + 1; it != ancestors.end(); ++it) under_if |= it->kind() == StmtKind::kIfThenElse;
  std::vector<PrimExpr> conditions;
  if (block->predicate.defined()) conditions.push_back(InLoopTerms(block, block->predicate));
  for (size_t d = 0; d < rank; ++d) {
    unguarded[d] = !under_if && collector.loads.size() == 1;
    for (const PrimExpr& c : conditions) {
      for (const ForNode* l : inner) {
        if (UsesVar(c, l->loop_var.get()) && UsesVar(InLoopTerms(block, collector.loads[0]->indices[d]), l->loop_var.get())) {
          unguarded[d] = false;
        }
      }
      bool names_inner = false;
      for (const ForNode* l : inner) names_inner |= UsesVar(c, l->loop_var.get());
      if (!names_inner) unguarded[d] = false;
    }
  }

  NameSet used = UsedNames(func);
  Buffer cache(absl::StrCat(buffer->name, "_", scope), buffer->dtype, shape, {}, scope);
  std::vector<Var> loops;
  std::vector<IterVar> iters;
  std::vector<PrimExpr> cache_at, source_at;
  PrimExpr predicate;
  Analyzer analyzer;
  for (size_t d = 0; d < rank; ++d) {
    DataType dt = base[d].dtype();
    loops.emplace_back(FreshName(absl::StrCat("ax", d), &used), dt);
    Var v(FreshName(absl::StrCat("v", d, "_cache"), &used), dt);
    iters.push_back(IterVar{v, buffer->shape[d], IterType::kSpatial, SimplifyExpr(base[d] + loops.back())});
    cache_at.push_back(loops.back());  // in loop terms, like the block's re-indexed reads
    source_at.push_back(v);
    if (!unguarded[d] && !analyzer.CanProveLE(base[d] + extent[d], buffer->shape[d])) {
      PrimExpr c = LT(iters.back().value, buffer->shape[d]);
      predicate = predicate.defined() ? And(predicate, c) : c;
    }
  }
  std::string copy_name = FreshName(absl::StrCat(buffer->name, "_cache"), &used);
  Stmt copy = Block(copy_name, iters, BufferStore(cache, buffer.Load(source_at), cache_at), Stmt(), predicate);
  for (size_t d = rank; d-- > 0;) copy = For(loops[d], IntImm(loops[d].dtype(), 0), extent[d], ForKind::kSerial, copy);

  Stmt new_block = Redirect(block, buffer.get(), cache, base).VisitStmt(block_stmt);
  Stmt body = ReplaceStmt(loop->body, block, new_block);
  if (!thread_loop) {
    Stmt new_loop = For(loop->loop_var, loop->min, loop->extent, loop->for_kind, Allocate(cache, SeqStmt({copy, body})),
                        loop->thread_tag);
    return CacheReadResult{WithBody(func, ReplaceStmt(func->body, loop, new_loop)), copy_name};
  }
  Stmt new_loop = For(loop->loop_var, loop->min, loop->extent, loop->for_kind, SeqStmt({copy, body}), loop->thread_tag);
  Stmt new_threads = For(thread_loop->loop_var, thread_loop->min, thread_loop->extent, thread_loop->for_kind,
                         Allocate(cache, ReplaceStmt(thread_loop->body, loop, new_loop)), thread_loop->thread_tag);
  return CacheReadResult{WithBody(func, ReplaceStmt(func->body, thread_loop, new_threads)), copy_name};
}

}  // namespace kiln::tir::schedule_primitive
