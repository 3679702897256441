// CacheWrite: a block computes into a new local buffer; a write-back block copies it out.
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// Every load and store of `buffer` in a statement, with its indices.
class IndexCollector : public StmtExprVisitor {
 public:
  explicit IndexCollector(const BufferNode* buffer) : buffer_(buffer) {}
  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    if (op->buffer.get() == buffer_) loads.push_back(op->indices);
    StmtExprVisitor::VisitExpr_(op, self);
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer.get() == buffer_) stores.push_back(op->indices);
    StmtExprVisitor::VisitStmt_(op, self);
  }
  std::vector<std::vector<PrimExpr>> loads, stores;

 private:
  const BufferNode* buffer_;
};

class BufferRedirect : public StmtExprMutator {
 public:
  BufferRedirect(const BufferNode* from, Buffer to) { buffer_remap_[from] = std::move(to); }
};

}  // namespace

absl::StatusOr<CacheWriteResult> CacheWrite(const PrimFunc& func, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, name, "cache_write"));
  const auto* block = block_stmt.as<BlockNode>();
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("cache_write: block '", name, "' ", why));
  };
  if (block->predicate.defined()) return fail("has a predicate; cache writes before splitting its loops");
  std::set<const BufferNode*> written = AccessesOf(block->body).writes;
  if (block->init.defined()) {
    for (const BufferNode* b : AccessesOf(block->init).writes) written.insert(b);
  }
  for (const Buffer& b : block->alloc_buffers) written.erase(b.get());
  if (written.size() != 1) {
    return fail(absl::StrCat("stores to ", written.size(), " buffers outside itself; cache_write needs exactly one"));
  }
  const BufferNode* target = *written.begin();
  Buffer buffer;
  ForEachStmt(block_stmt, [&](const Stmt& s) {
    if (const auto* st = s.as<BufferStoreNode>(); st && st->buffer.get() == target) buffer = st->buffer;
  });
  // Every access must be at the block's own spatial variables, one per dimension, so the
  // block's iteration domain is exactly the region the write-back copies.
  IndexCollector collector(target);
  collector.VisitStmt(block_stmt);
  const std::vector<PrimExpr>& indices = collector.stores[0];
  std::vector<const IterVar*> dims;
  for (const PrimExpr& index : indices) {
    const IterVar* found = nullptr;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.type == IterType::kSpatial && index.get() == iv.var.get()) found = &iv;
    }
    for (const IterVar* seen : dims) {
      if (seen == found) found = nullptr;
    }
    if (!found) {
      return fail(absl::StrCat("stores to '", buffer->name,
                               "' at indices that are not distinct spatial iteration variables"));
    }
    dims.push_back(found);
  }
  auto same_indices = [&](const std::vector<PrimExpr>& other) {
    if (other.size() != indices.size()) return false;
    for (size_t i = 0; i < other.size(); ++i) {
      if (other[i].get() != indices[i].get()) return false;
    }
    return true;
  };
  for (const auto& list : {collector.stores, collector.loads}) {
    for (const std::vector<PrimExpr>& other : list) {
      if (!same_indices(other)) return fail(absl::StrCat("accesses '", buffer->name, "' at different indices"));
    }
  }
  if (!collector.loads.empty() && !block->init.defined()) {
    return fail(absl::StrCat("reads '", buffer->name, "' without an init; the cache would start undefined"));
  }
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type != IterType::kSpatial) continue;
    bool indexed = false;
    for (const IterVar* d : dims) indexed |= d == &iv;
    if (!indexed) return fail(absl::StrCat("has spatial variable '", iv.var.name(), "' that its store does not index"));
  }
  Stmt nest = NestRoot(func->body, block);
  // The write-back follows the nest, so the nest must hold every loop the block's
  // variables are bound to: then the block's whole domain is written when it ends.
  std::vector<Stmt> nest_loops = LoopsAbove(nest, block);
  for (const Stmt& l : LoopsAbove(func->body, block)) {
    bool inside = false;
    for (const Stmt& n : nest_loops) inside |= n.same_as(l);
    bool bound = false;
    for (const IterVar& iv : block->iter_vars) bound |= UsesVar(iv.value, l.as<ForNode>()->loop_var.get());
    if (bound && !inside) {
      return fail(absl::StrCat("is bound to loop '", l.as<ForNode>()->loop_var.name(),
                               "', which is not part of the chain of loops directly around it"));
    }
  }
  if (CountAccesses(nest, target) != CountAccesses(block_stmt, target)) {
    return fail(absl::StrCat("shares its loop nest with other accesses to '", buffer->name, "'"));
  }

  NameSet used = UsedNames(func);
  Buffer local(absl::StrCat(buffer->name, "_local"), buffer->dtype, buffer->shape, {}, "local");
  // The write-back walks the block's spatial domain in the buffer's dimension order.
  std::vector<Var> loops;
  std::vector<IterVar> iters;
  std::vector<PrimExpr> at;
  for (size_t d = 0; d < dims.size(); ++d) {
    DataType dt = dims[d]->var.dtype();
    loops.emplace_back(FreshName(absl::StrCat("ax", d), &used), dt);
    Var v(FreshName(absl::StrCat(dims[d]->var.name(), "_wb"), &used), dt);
    iters.push_back(IterVar{v, dims[d]->extent, IterType::kSpatial, loops.back()});
    at.push_back(v);
  }
  std::string wb_name = FreshName(absl::StrCat(name, "_write_back"), &used);
  Stmt wb = Block(wb_name, iters, BufferStore(buffer, local.Load(at), at));
  for (size_t d = dims.size(); d-- > 0;) wb = For(loops[d], IntImm(loops[d].dtype(), 0), dims[d]->extent, ForKind::kSerial, wb);
  Stmt cached = BufferRedirect(target, local).VisitStmt(nest);
  Stmt replacement = Allocate(local, SeqStmt({cached, wb}));
  return CacheWriteResult{WithBody(func, ReplaceStmt(func->body, nest.get(), replacement)), wb_name};
}

}  // namespace kiln::tir::schedule_primitive
