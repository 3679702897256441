// What the CPU rules share: finding a block's plain loop nest, and the loop moves every rule
// makes (vectorize the innermost loop, run the outer ones in parallel).
#include <algorithm>

#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::cpu_rules {

using namespace schedule_internal;  // NOLINT

std::optional<PlainNest> FindPlainNest(const PrimFunc& func, const std::string& name) {
  absl::StatusOr<Stmt> b = FindBlock(func, name, "");
  if (!b.ok()) return std::nullopt;
  PlainNest nest;
  nest.block = b->as<BlockNode>();
  if (nest.block->predicate.defined()) return std::nullopt;
  std::vector<Stmt> loops = LoopsAbove(func->body, nest.block);
  for (size_t i = 0; i < loops.size(); ++i) {
    const auto* l = loops[i].as<ForNode>();
    const StmtNode* inner = i + 1 < loops.size() ? loops[i + 1].get() : nest.block;
    if (l->body.get() != inner || l->for_kind != ForKind::kSerial || l->min.as_int() != 0) return std::nullopt;
    int bound = -1;
    for (size_t k = 0; k < nest.block->iter_vars.size(); ++k) {
      const IterVar& iv = nest.block->iter_vars[k];
      if (iv.value.get() == l->loop_var.get()) {
        if (bound >= 0) return std::nullopt;
        bound = static_cast<int>(k);
      } else if (UsesVar(iv.value, l->loop_var.get())) {
        return std::nullopt;
      }
    }
    if (bound < 0) return std::nullopt;
    nest.loops.push_back(l);
    nest.iter_of_loop.push_back(bound);
  }
  return nest;
}

bool WritesFollowSpatialVars(const PlainNest& nest) {
  std::vector<const VarNode*> spatial;
  for (int k : nest.iter_of_loop) {
    const IterVar& iv = nest.block->iter_vars[k];
    // A variable of one value cannot tell iterations apart: a store need not index with it.
    const std::optional<int64_t> extent = iv.extent.as_int();
    if (iv.type == IterType::kSpatial && !(extent && *extent == 1)) spatial.push_back(iv.var.get());
  }
  class Stores : public StmtExprVisitor {
   public:
    explicit Stores(std::vector<const VarNode*> spatial) : spatial_(std::move(spatial)) {}
    void VisitStmt_(const BlockNode* op, const Stmt& self) override {
      for (const Buffer& b : op->alloc_buffers) local_.push_back(b.get());
      StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const AllocateNode* op, const Stmt& self) override {
      local_.push_back(op->buffer.get());
      StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
      if (std::find(local_.begin(), local_.end(), op->buffer.get()) == local_.end()) {
        for (const VarNode* v : spatial_) {
          bool used = false;
          for (const PrimExpr& i : op->indices) used |= UsesVar(i, v);
          ok &= used;
        }
      }
      StmtExprVisitor::VisitStmt_(op, self);
    }
    bool ok = true;

   private:
    std::vector<const VarNode*> spatial_;
    std::vector<const BufferNode*> local_;
  } stores(spatial);
  stores.VisitStmt_(nest.block, Stmt());  // its own allocations count as local
  return stores.ok;
}

bool IsReductionLoop(const PlainNest& nest, size_t i) {
  return nest.block->iter_vars[nest.iter_of_loop[i]].type == IterType::kReduction;
}

absl::StatusOr<std::string> VectorizeInner(Schedule* s, const std::string& loop, int64_t extent_or_zero, int lanes) {
  if (lanes < 2 || extent_or_zero == 1) return std::string();
  if (extent_or_zero >= 2 && extent_or_zero <= lanes) {
    KILN_RETURN_IF_ERROR(s->Vectorize(loop));
    return std::string();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(loop, {-1, lanes}));
  KILN_RETURN_IF_ERROR(s->Vectorize(parts[1]));
  return parts[0];
}

absl::Status ParallelOver(Schedule* s, const std::vector<std::string>& loops, const CpuScheduleOptions& options,
                          std::string* innermost) {
  if (innermost) *innermost = loops.empty() ? std::string() : loops.back();
  if (loops.empty() || options.num_threads <= 1) return absl::OkStatus();
  std::string loop = loops[0];
  if (loops.size() > 1) {
    KILN_ASSIGN_OR_RETURN(loop, s->Fuse(loops));
  }
  if (innermost) *innermost = loop;
  return s->Parallel(loop);
}

std::vector<std::string> ReadersOf(const PrimFunc& func, const BufferNode* buffer) {
  std::vector<std::string> names;
  ForEachStmt(func->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    if (b && OutermostBlocks(b->body).empty() && AccessesOf(b->body).reads.count(buffer)) names.push_back(b->name);
  });
  return names;
}

const BufferNode* StoredBuffer(const PrimFunc& func, const std::string& block) {
  absl::StatusOr<Stmt> b = FindBlock(func, block, "");
  if (!b.ok()) return nullptr;
  const auto* store = b->as<BlockNode>()->body.as<BufferStoreNode>();
  return store ? store->buffer.get() : nullptr;
}

}  // namespace kiln::tir::cpu_rules
