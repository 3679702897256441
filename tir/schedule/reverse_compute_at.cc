// ReverseComputeAt: an elementwise consumer moves under a loop of its producer, computing
// exactly the region of the producer's output that one iteration of the loop wrote.
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

// The stores to one buffer below a loop, each with its block and the loops between.
struct WriterSite {
  const BlockNode* block;
  std::vector<PrimExpr> indices;
  std::vector<const ForNode*> inner;  // loops between the outer loop and the store
  bool under_if;                      // a condition stands between them
};

class WriterCollector : public StmtExprVisitor {
 public:
  explicit WriterCollector(const BufferNode* buffer) : buffer_(buffer) {}
  void VisitStmt_(const ForNode* op, const Stmt& self) override {
    loops_.push_back(op);
    StmtExprVisitor::VisitStmt_(op, self);
    loops_.pop_back();
  }
  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    blocks_.push_back(op);
    StmtExprVisitor::VisitStmt_(op, self);
    blocks_.pop_back();
  }
  void VisitStmt_(const IfThenElseNode* op, const Stmt& self) override {
    ++ifs_;
    StmtExprVisitor::VisitStmt_(op, self);
    --ifs_;
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer.get() == buffer_) {
      sites.push_back({blocks_.empty() ? nullptr : blocks_.back(), op->indices, loops_, ifs_ > 0});
      nested |= blocks_.size() > 1;
    }
    StmtExprVisitor::VisitStmt_(op, self);
  }
  std::vector<WriterSite> sites;
  bool nested = false;

 private:
  const BufferNode* buffer_;
  std::vector<const ForNode*> loops_;
  std::vector<const BlockNode*> blocks_;
  int ifs_ = 0;
};

void Conjuncts(const PrimExpr& e, std::vector<PrimExpr>* out) {
  if (e.kind() == ExprKind::kAnd) {
    Conjuncts(e.as<BinaryNode>()->a, out);
    Conjuncts(e.as<BinaryNode>()->b, out);
  } else {
    out->push_back(e);
  }
}

}  // namespace

absl::StatusOr<PrimFunc> ReverseComputeAt(const PrimFunc& func, const std::string& name, const std::string& loop_name) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, name, "reverse_compute_at"));
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "reverse_compute_at"));
  const auto* block = block_stmt.as<BlockNode>();
  const auto* loop = loop_stmt.as<ForNode>();
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("reverse_compute_at: block '", name, "' under loop '", loop_name, "': ", why));
  };
  if (block->init.defined() || block->is_reduction()) return fail("the block is a reduction");
  if (block->predicate.defined()) return fail("the block has a predicate");
  if (!block->alloc_buffers.empty()) return fail("the block allocates buffers");
  // The consumer's own nest: plain loops, each binding one iteration variable directly.
  Stmt nest = NestRoot(func->body, block);
  std::vector<Stmt> own_loops = LoopsAbove(nest, block);
  if (own_loops.size() != block->iter_vars.size()) {
    return fail("the block's loops do not bind one iteration variable each");
  }
  for (size_t i = 0; i < own_loops.size(); ++i) {
    const auto* l = own_loops[i].as<ForNode>();
    const IterVar& iv = block->iter_vars[i];
    Analyzer analyzer;
    if (iv.value.get() != l->loop_var.get() || l->min.as_int() != 0 || !analyzer.CanProveEqual(l->extent, iv.extent) ||
        l->for_kind != ForKind::kSerial) {
      return fail("the block's loops do not bind one iteration variable each");
    }
  }
  if (!AncestorsOf(loop_stmt, block).empty()) return fail("the block is already under the loop");

  // The producer's buffer: the one the block reads that is written under the loop.
  BufferAccesses mine = AccessesOf(block->body);
  BufferAccesses under = AccessesOf(loop->body);
  std::vector<const BufferNode*> produced;
  for (const BufferNode* b : mine.reads) {
    if (under.writes.count(b)) produced.push_back(b);
  }
  if (produced.size() != 1) {
    return fail(absl::StrCat("the block must read exactly one buffer written under the loop, found ",
                             produced.size()));
  }
  const BufferNode* buffer = produced[0];
  const std::vector<PrimExpr>& buffer_shape = buffer->shape;
  for (const BufferNode* w : mine.writes) {
    if (mine.reads.count(w)) return fail("the block reads a buffer it writes");
  }
  // Each read of the producer's buffer is at the block's variables, one per dimension, so
  // the block's instance for an element is known.
  std::optional<std::vector<int>> dims = DimsOfIterVars(block, buffer);
  if (!dims) {
    return fail(absl::StrCat("the block must read '", buffer->name,
                             "' at its own iteration variables, each exactly once per dimension"));
  }
  const std::vector<int>& dim_of_iter = *dims;
  // Every write of the buffer happens under the loop, and completes within one iteration:
  // no writer reduces over a loop at or above it.
  if (CountAccesses(func->body, buffer) - CountAccesses(block_stmt, buffer) != CountAccesses(loop->body, buffer)) {
    return fail(absl::StrCat("'", buffer->name, "' is also accessed outside the loop"));
  }
  WriterCollector writers(buffer);
  writers.VisitStmt(loop->body);
  if (writers.nested) return fail(absl::StrCat("a writer of '", buffer->name, "' is nested in another block"));
  std::vector<const VarNode*> outer_vars;
  for (const Stmt& a : AncestorsOf(func->body, loop)) {
    if (const auto* l = a.as<ForNode>()) outer_vars.push_back(l->loop_var.get());
  }
  outer_vars.push_back(loop->loop_var.get());
  std::vector<IndexRange> region;
  // Dimensions in which a writer may skip part of its range (a predicate or condition on
  // the loops that walk that dimension): there the region can pass the written elements.
  std::vector<bool> guarded;
  for (const WriterSite& site : writers.sites) {
    if (guarded.empty()) guarded.assign(site.indices.size(), false);
    std::vector<PrimExpr> conditions;
    if (site.block && site.block->predicate.defined()) Conjuncts(InLoopTerms(site.block, site.block->predicate), &conditions);
    for (const PrimExpr& c : conditions) {
      std::vector<const VarNode*> inner_used;
      for (const ForNode* l : site.inner) {
        if (UsesVar(c, l->loop_var.get())) inner_used.push_back(l->loop_var.get());
      }
      for (size_t d = 0; d < site.indices.size() && d < guarded.size(); ++d) {
        if (inner_used.empty() || UsesAnyVar(InLoopTerms(site.block, site.indices[d]), inner_used)) guarded[d] = true;
      }
    }
    if (site.under_if) guarded.assign(guarded.size(), true);
    if (!site.block) return fail(absl::StrCat("a store to '", buffer->name, "' is outside any block"));
    for (const IterVar& iv : site.block->iter_vars) {
      if (iv.type == IterType::kReduction && UsesAnyVar(iv.value, outer_vars)) {
        return fail(absl::StrCat("block '", site.block->name, "' reduces over a loop at or above '", loop_name,
                                 "', so one iteration does not finish its elements"));
      }
    }
    for (size_t d = 0; d < site.indices.size(); ++d) {
      absl::StatusOr<IndexRange> r = RangeOver(InLoopTerms(site.block, site.indices[d]), site.inner);
      if (!r.ok()) {
        return fail(absl::StrCat("cannot bound the region of '", buffer->name, "' that block '", site.block->name,
                                 "' writes in dimension ", d));
      }
      if (loop->for_kind == ForKind::kParallel) {
        // Iterations run at once: each must write its whole region (no holes another
        // iteration fills), so the index walks at most one inner loop, with step 1.
        std::vector<const ForNode*> walking;
        for (const ForNode* l : site.inner) {
          if (UsesVar(InLoopTerms(site.block, site.indices[d]), l->loop_var.get())) walking.push_back(l);
        }
        Analyzer analyzer;
        if (walking.size() > 1 || (walking.size() == 1 && !analyzer.CanProveEqual(r->extent, walking[0]->extent))) {
          return fail(absl::StrCat("under a parallel loop the region of '", buffer->name, "' in dimension ", d,
                                   " must be dense (one inner loop with step 1)"));
        }
      }
      if (region.size() <= d) {
        region.push_back(*r);
      } else {
        Analyzer analyzer;
        if (!analyzer.CanProveEqual(region[d].min, r->min) || !analyzer.CanProveEqual(region[d].extent, r->extent)) {
          return fail(absl::StrCat("the writers of '", buffer->name, "' cover different regions in dimension ", d));
        }
      }
    }
  }
  // Moving the block earlier must not reorder it with conflicting accesses.
  SeqPosition pos = CommonSeq(func->body, loop, nest.get());
  if (!pos.seq || pos.first >= pos.second) {
    return fail("the block must follow the loop's nest in one sequence of statements");
  }
  for (size_t i = pos.first; i < pos.second; ++i) {
    BufferAccesses between = AccessesOf(pos.seq->seq[i]);
    for (const BufferNode* w : mine.writes) {
      if (between.Touches(w)) return fail(absl::StrCat("'", w->name, "', which the block writes, is accessed before it"));
    }
    for (const BufferNode* r : mine.reads) {
      if (r != buffer && between.writes.count(r)) {
        return fail(absl::StrCat("'", r->name, "', which the block reads, is written before it"));
      }
    }
  }

  // The new nest: one loop per dimension over the region, the block's variables bound to
  // the region's start plus the loop, guarded where the region may pass the block's domain.
  std::vector<Var> loops(block->iter_vars.size());
  std::vector<IterVar> iters = block->iter_vars;
  PrimExpr predicate;
  Analyzer analyzer;
  for (size_t i = 0; i < iters.size(); ++i) {
    const IndexRange& r = region[dim_of_iter[i]];
    const auto* old = own_loops[i].as<ForNode>();
    loops[i] = Var(old->loop_var.name(), old->loop_var.dtype());  // the old loop goes away
    iters[i].value = SimplifyExpr(r.min + loops[i]);
    // Unguarded writers write every element of the region, all inside the buffer: when the
    // block's domain is the buffer's, no predicate is needed.
    bool inside = !guarded[dim_of_iter[i]] && analyzer.CanProveEqual(iters[i].extent, buffer_shape[dim_of_iter[i]]);
    if (!inside && !analyzer.CanProveLE(r.min + r.extent, iters[i].extent)) {
      PrimExpr c = LT(iters[i].value, iters[i].extent);
      predicate = predicate.defined() ? And(predicate, c) : c;
    }
  }
  Stmt moved = Block(block->name, iters, block->body, Stmt(), predicate);
  for (size_t i = loops.size(); i-- > 0;) {
    moved = For(loops[i], IntImm(loops[i].dtype(), 0), region[dim_of_iter[i]].extent, ForKind::kSerial, moved);
  }
  Stmt new_loop = For(loop->loop_var, loop->min, loop->extent, loop->for_kind, SeqStmt({loop->body, moved}),
                      loop->thread_tag);
  Stmt body = ReplaceStmt(func->body, nest.get(), SeqStmt({}));
  body = ReplaceStmt(body, loop, new_loop);
  PrimFunc result = WithBody(func, body);
  // A local cache allocated around the loop shrinks to the tile one iteration touches.
  const AllocateNode* alloc = nullptr;
  for (const Stmt& a : AncestorsOf(result->body, new_loop.get())) {
    if (const auto* al = a.as<AllocateNode>(); al && al->buffer.get() == buffer && al->buffer->scope == "local") {
      alloc = al;
    }
  }
  if (alloc) result = CompactAllocation(result, alloc, new_loop.as<ForNode>());
  return result;
}

}  // namespace kiln::tir::schedule_primitive
