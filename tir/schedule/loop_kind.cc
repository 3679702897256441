// Parallel / Vectorize / Unroll: change how a serial loop runs.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// Finds a store to memory outside the loop whose place does not depend on the loop
// variable: every iteration would write the same element, so they cannot run at once.
class SharedWriteFinder : public StmtExprVisitor {
 public:
  explicit SharedWriteFinder(const VarNode* loop_var) { dependent_.push_back(loop_var); }
  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    for (const IterVar& iv : op->iter_vars) {
      if (UsesAnyVar(iv.value, dependent_)) dependent_.push_back(iv.var.get());
    }
    for (const Buffer& b : op->alloc_buffers) local_.push_back(b.get());
    blocks_.push_back(op->name);
    StmtExprVisitor::VisitStmt_(op, self);
    blocks_.pop_back();
  }
  void VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    local_.push_back(op->buffer.get());
    StmtExprVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const LetStmtNode* op, const Stmt& self) override {
    if (UsesAnyVar(op->value, dependent_)) dependent_.push_back(op->var.get());
    StmtExprVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    bool local = std::find(local_.begin(), local_.end(), op->buffer.get()) != local_.end();
    bool depends = false;
    for (const PrimExpr& i : op->indices) depends |= UsesAnyVar(i, dependent_);
    if (!local && !depends && offender.empty()) {
      offender = absl::StrCat("'", op->buffer->name, "'");
      if (!blocks_.empty()) absl::StrAppend(&offender, " (in block '", blocks_.back(), "')");
    }
    StmtExprVisitor::VisitStmt_(op, self);
  }
  std::string offender;

 private:
  std::vector<const VarNode*> dependent_;
  std::vector<const BufferNode*> local_;
  std::vector<std::string> blocks_;
};

}  // namespace

absl::StatusOr<PrimFunc> SetLoopKind(const PrimFunc& func, const std::string& name, ForKind kind) {
  std::string primitive = kind == ForKind::kParallel     ? "parallel"
                          : kind == ForKind::kVectorized ? "vectorize"
                                                         : "unroll";
  KILN_ASSIGN_OR_RETURN(Stmt s, FindLoop(func, name, primitive));
  const auto* loop = s.as<ForNode>();
  if (loop->for_kind != ForKind::kSerial) {
    return absl::InvalidArgumentError(
        absl::StrCat(primitive, ": loop '", name, "' is already ", KindWord(loop->for_kind)));
  }
  if (kind == ForKind::kParallel || kind == ForKind::kVectorized) {
    // Iterations that accumulate into the same element would race.
    absl::Status status;
    ForEachStmt(loop->body, [&](const Stmt& st) {
      const auto* block = st.as<BlockNode>();
      if (!block || !status.ok()) return;
      for (const IterVar& iv : block->iter_vars) {
        if (iv.type == IterType::kReduction && UsesVar(iv.value, loop->loop_var.get())) {
          status = absl::InvalidArgumentError(absl::StrCat(primitive, ": loop '", name,
                                                           "' is bound to reduction variable '", iv.var.name(),
                                                           "' of block '", block->name, "'"));
          return;
        }
      }
    });
    KILN_RETURN_IF_ERROR(status);
    SharedWriteFinder writes(loop->loop_var.get());
    writes.VisitStmt(loop->body);
    if (!writes.offender.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(primitive, ": every iteration of loop '", name, "' writes ",
                                                     writes.offender, " at the same place"));
    }
  }
  // Both become full SIMD width / full unrolling, which needs a known trip count.
  if ((kind == ForKind::kVectorized || kind == ForKind::kUnrolled) && !loop->extent.as_int()) {
    return absl::InvalidArgumentError(absl::StrCat(primitive, ": loop '", name, "' has the non-constant extent ",
                                                   ToString(loop->extent), "; split it by a constant factor first"));
  }
  Stmt replaced = For(loop->loop_var, loop->min, loop->extent, kind, loop->body);
  return WithBody(func, ReplaceStmt(func->body, loop, replaced));
}

}  // namespace kiln::tir::schedule_primitive
