// CompactAllocation: an allocation shrunk to the tile one loop iteration touches, so a cache
// created for a whole output becomes a small constant-size buffer the code generator keeps
// on the stack (and LLVM in registers).
#include <algorithm>
#include <optional>

#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_internal {

namespace {

// An index expression in loop terms: the enclosing blocks' bindings substituted, innermost
// first (an inner block's bindings may name an outer block's variables).
PrimExpr ThroughBlocks(const std::vector<const BlockNode*>& blocks, PrimExpr index) {
  for (size_t i = blocks.size(); i-- > 0;) index = InLoopTerms(blocks[i], index);
  return index;
}

// Visits the accesses of one buffer with the loops and blocks enclosing each.
class AccessWalker : public StmtExprVisitor {
 public:
  explicit AccessWalker(const BufferNode* buffer) : buffer_(buffer) {}
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
  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    if (op->buffer.get() == buffer_) Access(op->indices);
    StmtExprVisitor::VisitExpr_(op, self);
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer.get() == buffer_) Access(op->indices);
    StmtExprVisitor::VisitStmt_(op, self);
  }

  bool ok = true;
  std::vector<PrimExpr> base;    // per dimension, from the first access
  std::vector<int64_t> lo, hi;  // the union, relative to base: [lo, hi)

 private:
  void Access(const std::vector<PrimExpr>& indices) {
    if (!ok) return;
    if (base.empty()) {
      base.resize(indices.size());
      lo.assign(indices.size(), 0);
      hi.assign(indices.size(), 0);
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      absl::StatusOr<IndexRange> r = RangeOver(ThroughBlocks(blocks_, indices[d]), loops_);
      std::optional<int64_t> extent = r.ok() ? r->extent.as_int() : std::nullopt;
      if (!extent) {
        ok = false;
        return;
      }
      if (!base[d].defined()) base[d] = r->min;
      std::optional<int64_t> offset = SimplifyExpr(r->min - base[d]).as_int();
      if (!offset) {
        ok = false;
        return;
      }
      lo[d] = std::min(lo[d], *offset);
      hi[d] = std::max(hi[d], *offset + *extent);
    }
  }

  const BufferNode* buffer_;
  std::vector<const ForNode*> loops_;
  std::vector<const BlockNode*> blocks_;
};

class Reindex : public StmtExprMutator {
 public:
  Reindex(const BufferNode* from, Buffer to, std::vector<PrimExpr> base)
      : from_(from), to_(std::move(to)), base_(std::move(base)) {}
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    blocks_.push_back(op);
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    blocks_.pop_back();
    return s;
  }
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = e.as<BufferLoadNode>();
    if (load->buffer.get() != from_) return e;
    return to_.Load(Shift(load->indices));
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* store = s.as<BufferStoreNode>();
    if (store->buffer.get() != from_) return s;
    return BufferStore(to_, store->value, Shift(store->indices));
  }

 private:
  std::vector<PrimExpr> Shift(const std::vector<PrimExpr>& indices) {
    std::vector<PrimExpr> out;
    for (size_t d = 0; d < indices.size(); ++d) {
      out.push_back(SimplifyExpr(ThroughBlocks(blocks_, indices[d]) - base_[d]));
    }
    return out;
  }
  const BufferNode* from_;
  Buffer to_;
  std::vector<PrimExpr> base_;
  std::vector<const BlockNode*> blocks_;
};

}  // namespace

PrimFunc CompactAllocation(const PrimFunc& func, const AllocateNode* alloc, const ForNode* loop) {
  const Buffer& buffer = alloc->buffer;
  if (CountAccesses(func->body, buffer.get()) != CountAccesses(loop->body, buffer.get())) return func;
  AccessWalker walker(buffer.get());
  walker.VisitStmt(loop->body);
  if (!walker.ok || walker.base.empty()) return func;
  std::vector<PrimExpr> shape, base;
  for (size_t d = 0; d < walker.base.size(); ++d) {
    DataType dt = walker.base[d].dtype();
    shape.push_back(IntImm(dt, walker.hi[d] - walker.lo[d]));
    base.push_back(SimplifyExpr(walker.base[d] + IntImm(dt, walker.lo[d])));
  }
  Buffer compact(buffer->name, buffer->dtype, shape, {}, buffer->scope);
  Stmt body = Reindex(buffer.get(), compact, base).VisitStmt(loop->body);
  Stmt new_loop = For(loop->loop_var, loop->min, loop->extent, loop->for_kind, Allocate(compact, body),
                      loop->thread_tag);
  Stmt root = ReplaceStmt(func->body, loop, new_loop);
  // The old allocation's node survives the loop's replacement only if the loop was not
  // inside it; find it again by its buffer.
  Stmt old_alloc;
  ForEachStmt(root, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocateNode>(); a && a->buffer.same_as(buffer)) old_alloc = s;
  });
  if (old_alloc.defined()) root = ReplaceStmt(root, old_alloc.get(), old_alloc.as<AllocateNode>()->body);
  return WithBody(func, root);
}

}  // namespace kiln::tir::schedule_internal
