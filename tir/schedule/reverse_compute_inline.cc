// ReverseComputeInline: an elementwise consumer is folded into the block that produces its
// input, which then stores the consumer's result directly.
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

class LoadReplacer : public StmtExprMutator {
 public:
  LoadReplacer(const BufferNode* buffer, PrimExpr value) : buffer_(buffer), value_(std::move(value)) {}
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    if (op->buffer.get() == buffer_) return value_;
    return StmtExprMutator::VisitExpr_(op, self);
  }

 private:
  const BufferNode* buffer_;
  PrimExpr value_;
};

}  // namespace

absl::StatusOr<PrimFunc> ReverseComputeInline(const PrimFunc& func, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, name, "reverse_compute_inline"));
  const auto* block = block_stmt.as<BlockNode>();
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("reverse_compute_inline: block '", name, "' ", why));
  };
  if (block->init.defined() || block->is_reduction()) return fail("is a reduction");
  if (block->predicate.defined()) return fail("has a predicate");
  if (!block->alloc_buffers.empty()) return fail("allocates buffers");
  const auto* store = block->body.as<BufferStoreNode>();
  if (!store) return fail("is not a single buffer store");
  // Its loops must walk exactly its domain, one loop per iteration variable.
  Stmt nest = NestRoot(func->body, block);
  std::vector<Stmt> own_loops = LoopsAbove(nest, block);
  bool plain = own_loops.size() == block->iter_vars.size();
  for (size_t i = 0; plain && i < own_loops.size(); ++i) {
    const auto* l = own_loops[i].as<ForNode>();
    Analyzer analyzer;
    plain = block->iter_vars[i].value.get() == l->loop_var.get() && l->min.as_int() == 0 &&
            analyzer.CanProveEqual(l->extent, block->iter_vars[i].extent);
  }
  if (!plain) return fail("is not alone in loops that each bind one of its iteration variables");

  // The producer: the only block writing a buffer this one reads.
  BufferAccesses mine = AccessesOf(block->body);
  if (mine.reads.count(store->buffer.get())) return fail(absl::StrCat("reads '", store->buffer->name, "', which it writes"));
  const BlockNode* producer = nullptr;
  const BufferStoreNode* producer_store = nullptr;
  const BufferNode* buffer = nullptr;
  int candidates = 0;
  for (const BufferNode* b : mine.reads) {
    std::vector<Stmt> writers;
    ForEachStmt(func->body, [&](const Stmt& s) {
      if (const auto* bl = s.as<BlockNode>()) {
        if (AccessesOf(bl->body).writes.count(b) || (bl->init.defined() && AccessesOf(bl->init).writes.count(b))) {
          writers.push_back(s);
        }
      }
    });
    if (writers.empty()) continue;
    ++candidates;
    // Only the innermost writing block counts (its ancestors contain the store too).
    const auto* w = writers.back().as<BlockNode>();
    producer = w;
    producer_store = w->body.as<BufferStoreNode>();
    buffer = b;
  }
  if (candidates != 1) {
    return fail(absl::StrCat("must read exactly one buffer that a block of the function writes, found ", candidates));
  }
  if (!producer_store || producer->init.defined() || producer_store->buffer.get() != buffer) {
    return fail(absl::StrCat("reads '", buffer->name, "' from block '", producer->name,
                             "', which is not a single non-reduction store"));
  }
  for (const PrimFuncParam& p : func->params) {
    if (p.is_buffer() && p.buffer.get() == buffer) {
      return fail(absl::StrCat("reads the parameter '", buffer->name, "', whose values must stay in memory"));
    }
  }
  int total = CountAccesses(func->body, buffer);
  int in_block = CountAccesses(block->body, buffer);
  if (total != in_block + 1) return fail(absl::StrCat("is not the only reader of '", buffer->name, "'"));
  // Each load of the producer's buffer names the block's variables, one per dimension, and
  // the block's domain is the buffer's whole shape.
  std::optional<std::vector<int>> dims = DimsOfIterVars(block, buffer);
  bool ok = dims.has_value();
  Analyzer analyzer;
  for (size_t k = 0; ok && k < dims->size(); ++k) {
    ok &= analyzer.CanProveEqual(block->iter_vars[k].extent, buffer->shape[(*dims)[k]]);
  }
  if (!ok) {
    return fail(absl::StrCat("must read '", buffer->name,
                             "' at its own iteration variables over the buffer's whole shape (B[vi, vj])"));
  }
  const std::vector<int>& dim_of_iter = *dims;
  // The computation moves up to the producer: nothing in between may write what the block
  // reads or touch what it writes.
  SeqPosition pos = CommonSeq(func->body, producer, nest.get());
  if (!pos.seq || pos.first >= pos.second) return fail(absl::StrCat("does not follow block '", producer->name, "'"));
  for (size_t i = pos.first; i < pos.second; ++i) {
    BufferAccesses between = AccessesOf(pos.seq->seq[i]);
    if (between.Touches(store->buffer.get())) {
      return fail(absl::StrCat("writes '", store->buffer->name, "', which is accessed before it"));
    }
    for (const BufferNode* r : mine.reads) {
      if (r != buffer && between.writes.count(r)) {
        return fail(absl::StrCat("reads '", r->name, "', which is written before it"));
      }
    }
  }

  VarMap vmap;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    vmap[block->iter_vars[i].var.get()] = producer_store->indices[dim_of_iter[i]];
  }
  PrimExpr value = LoadReplacer(buffer, producer_store->value).VisitExpr(Substitute(store->value, vmap));
  std::vector<PrimExpr> indices;
  for (const PrimExpr& i : store->indices) indices.push_back(SimplifyExpr(Substitute(i, vmap)));
  Stmt fused_store = BufferStore(store->buffer, value, indices);
  Stmt body = ReplaceStmt(func->body, nest.get(), SeqStmt({}));
  body = ReplaceStmt(body, producer_store, fused_store);
  body = DropAllocation(body, buffer);
  return WithBody(func, body);
}

}  // namespace kiln::tir::schedule_primitive
