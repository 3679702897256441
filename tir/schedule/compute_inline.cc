// ComputeInline: an elementwise producer block is folded into the expressions that read it.
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

class StoreCounter : public StmtExprVisitor {
 public:
  explicit StoreCounter(const BufferNode* buffer) : buffer_(buffer) {}
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    stores += op->buffer.get() == buffer_;
    StmtExprVisitor::VisitStmt_(op, self);
  }
  int stores = 0;

 private:
  const BufferNode* buffer_;
};

// Replaces loads of the inlined buffer by the producer's value at those indices.
class Inliner : public StmtExprMutator {
 public:
  Inliner(const BufferNode* buffer, std::vector<const VarNode*> index_vars, PrimExpr value)
      : buffer_(buffer), index_vars_(std::move(index_vars)), value_(std::move(value)) {}
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = e.as<BufferLoadNode>();
    if (load->buffer.get() != buffer_) return e;
    VarMap vmap;
    for (size_t i = 0; i < index_vars_.size(); ++i) vmap[index_vars_[i]] = load->indices[i];
    return Substitute(value_, vmap);
  }

 private:
  const BufferNode* buffer_;
  std::vector<const VarNode*> index_vars_;
  PrimExpr value_;
};

}  // namespace

absl::StatusOr<PrimFunc> ComputeInline(const PrimFunc& func, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, name, "compute_inline"));
  const auto* block = block_stmt.as<BlockNode>();
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("compute_inline: block '", name, "' ", why));
  };
  if (block->is_reduction() || block->init.defined()) return fail("is a reduction");
  if (block->predicate.defined()) return fail("has a predicate");
  if (!block->alloc_buffers.empty()) return fail("allocates buffers");
  const auto* store = block->body.as<BufferStoreNode>();
  if (!store) return fail("is not a single buffer store");
  for (const PrimFuncParam& p : func->params) {
    if (p.is_buffer() && p.buffer.same_as(store->buffer)) {
      return fail(absl::StrCat("writes the parameter '", store->buffer->name, "', which must stay in memory"));
    }
  }
  // Each index must be a distinct iteration variable, so every element is one expression.
  std::vector<const VarNode*> index_vars;
  for (const PrimExpr& idx : store->indices) {
    const auto* v = idx.as<VarNode>();
    bool is_iter = false;
    for (const IterVar& iv : block->iter_vars) is_iter |= iv.var.get() == v;
    for (const VarNode* seen : index_vars) is_iter &= seen != v;
    if (!is_iter) return fail("does not store at its own iteration variables (A[vi, vj] = ...)");
    index_vars.push_back(v);
  }
  if (index_vars.size() != block->iter_vars.size()) return fail("has iteration variables its store does not index");
  StoreCounter counter(store->buffer.get());
  counter.VisitStmt(func->body);
  if (counter.stores != 1) return fail(absl::StrCat("is not the only writer of '", store->buffer->name, "'"));
  class ReadsSelf : public StmtExprVisitor {
   public:
    explicit ReadsSelf(const BufferNode* b) : b_(b) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      found |= op->buffer.get() == b_;
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool found = false;

   private:
    const BufferNode* b_;
  } reads(store->buffer.get());
  reads.VisitExpr(store->value);
  if (reads.found) return fail("reads the buffer it writes");

  // Remove the block with the loops that hold nothing else.
  std::vector<Stmt> ancestors = AncestorsOf(func->body, block);
  // The value moves to the readers, where only its iteration variables are rebound.
  std::vector<const VarNode*> loop_vars;
  for (const Stmt& a : ancestors) {
    if (const auto* l = a.as<ForNode>()) loop_vars.push_back(l->loop_var.get());
  }
  if (UsesAnyVar(store->value, loop_vars)) return fail("reads loop variables directly, not through its bindings");
  const StmtNode* remove = block;
  for (size_t i = ancestors.size(); i-- > 0;) {
    const auto* l = ancestors[i].as<ForNode>();
    if (!l || l->body.get() != remove) break;
    remove = ancestors[i].get();
  }
  Stmt body = ReplaceStmt(func->body, remove, SeqStmt({}));
  body = Inliner(store->buffer.get(), index_vars, store->value).VisitStmt(body);
  body = DropAllocation(body, store->buffer.get());
  return WithBody(func, SimplifyIndices(body));
}

}  // namespace kiln::tir::schedule_primitive
