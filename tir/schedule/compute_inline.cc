// ComputeInline: elementwise producer blocks are folded into the expressions that read them.
//
// Several blocks are inlined in one rewrite of the function (a fused chain of a thousand
// elementwise kernels inlines in time linear in its length): one walk indexes the blocks and
// counts the stores, one mutation removes the producers and expands every load of their
// buffers, recursively, with the producer's iteration variables bound to the load's indices.
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// A block to inline: what replaces a load of its buffer, and what to remove.
struct Producer {
  const BufferNode* buffer = nullptr;
  std::vector<const VarNode*> index_vars;  // the store's indices, one iteration variable each
  PrimExpr value;
  const StmtNode* remove = nullptr;  // the block with the loops that hold nothing else
};

// The blocks of a function by name, the loop variables and the stores per buffer, from one
// walk (nothing per block depends on the depth of the tree: a fused chain nests one
// allocation per intermediate).
class FunctionIndex {
 public:
  explicit FunctionIndex(const PrimFunc& func) : func_(func) {
    ForEachStmtWithPath(func->body, [&](const Stmt& s, const std::vector<Stmt>& ancestors) {
      if (const auto* l = s.as<ForNode>()) loop_vars_.insert(l->loop_var.get());
      const auto* b = s.as<BlockNode>();
      if (!b) return;
      // The block with the loops that hold nothing else.
      const StmtNode* remove = b;
      for (size_t i = ancestors.size(); i-- > 0;) {
        const auto* l = ancestors[i].as<ForNode>();
        if (!l || l->body.get() != remove) break;
        remove = l;
      }
      blocks_[b->name].push_back({s, remove});
    });
    class StoreCounter : public StmtExprVisitor {
     public:
      void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
        ++stores[op->buffer.get()];
        StmtExprVisitor::VisitStmt_(op, self);
      }
      std::unordered_map<const BufferNode*, int> stores;
    } counter;
    counter.VisitStmt(func->body);
    stores_ = std::move(counter.stores);
  }

  // Whether block `name` can be inlined, and how.
  absl::StatusOr<Producer> Check(const std::string& name) const {
    auto it = blocks_.find(name);
    if (it == blocks_.end()) return absl::NotFoundError(absl::StrCat("compute_inline: no block named '", name, "'"));
    if (it->second.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("compute_inline: block name '", name, "' is ambiguous (",
                                                     it->second.size(), " blocks)"));
    }
    const auto* block = it->second[0].block.as<BlockNode>();
    auto fail = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("compute_inline: block '", name, "' ", why));
    };
    if (block->is_reduction() || block->init.defined()) return fail("is a reduction");
    if (block->predicate.defined()) return fail("has a predicate");
    if (!block->alloc_buffers.empty()) return fail("allocates buffers");
    const auto* store = block->body.as<BufferStoreNode>();
    if (!store) return fail("is not a single buffer store");
    for (const PrimFuncParam& p : func_->params) {
      if (p.is_buffer() && p.buffer.same_as(store->buffer)) {
        return fail(absl::StrCat("writes the parameter '", store->buffer->name, "', which must stay in memory"));
      }
    }
    // Each index must be a distinct iteration variable, so every element is one expression.
    Producer p;
    p.buffer = store->buffer.get();
    p.value = store->value;
    for (const PrimExpr& idx : store->indices) {
      const auto* v = idx.as<VarNode>();
      bool is_iter = false;
      for (const IterVar& iv : block->iter_vars) is_iter |= iv.var.get() == v;
      for (const VarNode* seen : p.index_vars) is_iter &= seen != v;
      if (!is_iter) return fail("does not store at its own iteration variables (A[vi, vj] = ...)");
      p.index_vars.push_back(v);
    }
    if (p.index_vars.size() != block->iter_vars.size()) return fail("has iteration variables its store does not index");
    auto stores = stores_.find(p.buffer);
    if (stores == stores_.end() || stores->second != 1) {
      return fail(absl::StrCat("is not the only writer of '", store->buffer->name, "'"));
    }
    if (ReadsBuffer(store->value, p.buffer)) return fail("reads the buffer it writes");
    // The value moves to the readers, where only its iteration variables are rebound (a
    // value can only name the loops around it, so any loop variable is one of those).
    class LoopVarUse : public StmtExprVisitor {
     public:
      explicit LoopVarUse(const std::unordered_set<const VarNode*>& loop_vars) : loop_vars_(loop_vars) {}
      void VisitExpr_(const VarNode* op, const PrimExpr&) override { found |= loop_vars_.count(op) > 0; }
      bool found = false;

     private:
      const std::unordered_set<const VarNode*>& loop_vars_;
    } loop_var_use(loop_vars_);
    loop_var_use.VisitExpr(store->value);
    if (loop_var_use.found) return fail("reads loop variables directly, not through its bindings");
    p.remove = it->second[0].remove;
    return p;
  }

 private:
  struct Site {
    Stmt block;
    const StmtNode* remove;  // the block with the loops that hold nothing else
  };
  PrimFunc func_;
  std::unordered_map<std::string, std::vector<Site>> blocks_;
  std::unordered_set<const VarNode*> loop_vars_;
  std::unordered_map<const BufferNode*, int> stores_;
};

// Removes the producers (with their own loops) and replaces each load
// of a producer's buffer by its value at the load's indices. A value that reads another
// producer's buffer is expanded in turn, so each node of the result is built once.
class Inliner : public StmtExprMutator {
 public:
  explicit Inliner(const std::vector<Producer>& producers) {
    for (const Producer& p : producers) {
      by_buffer_[p.buffer] = &p;
      removed_.insert(p.remove);
    }
  }
  Stmt VisitStmt(const Stmt& stmt) override {
    if (removed_.count(stmt.get())) return SeqStmt({});
    return StmtExprMutator::VisitStmt(stmt);
  }
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = e.as<BufferLoadNode>();
    auto it = by_buffer_.find(load->buffer.get());
    if (it == by_buffer_.end()) return e;
    const Producer* p = it->second;
    if (!expanding_.insert(p).second) {  // producers reading each other: the checks exclude it
      cycle = true;
      return e;
    }
    std::unordered_map<const VarNode*, PrimExpr> outer = std::move(var_remap_);
    var_remap_.clear();
    for (size_t i = 0; i < p->index_vars.size(); ++i) var_remap_[p->index_vars[i]] = load->indices[i];
    PrimExpr value = VisitExpr(p->value);
    var_remap_ = std::move(outer);
    expanding_.erase(p);
    return value;
  }
  bool cycle = false;

 private:
  std::unordered_map<const BufferNode*, const Producer*> by_buffer_;
  std::unordered_set<const StmtNode*> removed_;
  std::unordered_set<const Producer*> expanding_;
};

// Inlining moves the producers' loads into their consumers. A producer may read an
// intermediate whose allocation is a nested scope ending before a consumer: fused
// matmul + add + astype in float16 allocates the matmul's float32 accumulator around the
// matmul and its cast only, and inlining the cast and the add into the astype moves the
// accumulator's load past that scope. Such allocations (of buffers the inlined values read,
// outside every loop and block, so one buffer for the whole call either way) are hoisted to
// enclose the whole body.
Stmt HoistEscapedAllocations(const Stmt& body, const std::vector<Producer>& producers) {
  class LoadCollector : public StmtExprVisitor {
   public:
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      read.insert(op->buffer.get());
      StmtExprVisitor::VisitExpr_(op, self);
    }
    std::unordered_set<const BufferNode*> read;
  } loads;
  for (const Producer& p : producers) loads.VisitExpr(p.value);
  std::vector<Buffer> escaped;
  std::unordered_set<const BufferNode*> hoisted;
  ForEachStmtWithPath(body, [&](const Stmt& s, const std::vector<Stmt>& ancestors) {
    const auto* a = s.as<AllocateNode>();
    if (!a || !loads.read.count(a->buffer.get())) return;
    for (const Stmt& outer : ancestors) {
      if (!outer.as<AllocateNode>() && !outer.as<SeqStmtNode>()) return;
    }
    if (CountAccesses(a->body, a->buffer.get()) < CountAccesses(body, a->buffer.get())) {
      escaped.push_back(a->buffer);
      hoisted.insert(a->buffer.get());
    }
  });
  if (escaped.empty()) return body;
  Stmt out = DropAllocations(body, hoisted);
  for (const Buffer& buffer : escaped) out = Allocate(buffer, out);
  return out;
}

}  // namespace

absl::StatusOr<PrimFunc> ComputeInline(const PrimFunc& func, const std::vector<std::string>& blocks) {
  if (blocks.empty()) return absl::InvalidArgumentError("compute_inline: no blocks given");
  FunctionIndex index(func);
  std::vector<Producer> producers;
  std::set<std::string> seen;
  for (const std::string& name : blocks) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("compute_inline: block '", name, "' is given twice"));
    }
    KILN_ASSIGN_OR_RETURN(Producer p, index.Check(name));
    producers.push_back(std::move(p));
  }
  Inliner inliner(producers);
  Stmt body = inliner.VisitStmt(func->body);
  if (inliner.cycle) return absl::InvalidArgumentError("compute_inline: the blocks read each other's buffers");
  BufferAccesses left = AccessesOf(body);
  std::unordered_set<const BufferNode*> inlined;
  for (const Producer& p : producers) {
    if (left.Touches(p.buffer)) {
      return absl::InternalError(absl::StrCat("compute_inline: '", p.buffer->name, "' is still accessed"));
    }
    inlined.insert(p.buffer);
  }
  body = HoistEscapedAllocations(DropAllocations(body, inlined), producers);
  return WithBody(func, SimplifyIndices(body));
}

std::vector<std::string> InlinableBlocks(const PrimFunc& func, const std::vector<std::string>& candidates) {
  FunctionIndex index(func);
  std::vector<std::string> out;
  for (const std::string& name : candidates) {
    if (index.Check(name).ok()) out.push_back(name);
  }
  return out;
}

}  // namespace kiln::tir::schedule_primitive
