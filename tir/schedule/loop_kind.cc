// Parallel / Vectorize / Unroll / Bind: change how a serial loop runs.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/transform/lower_cross_thread_reduction.h"

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

bool IsThreadTag(const std::string& tag) {
  for (const char* t : {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"}) {
    if (tag == t) return true;
  }
  return false;
}

absl::StatusOr<PrimFunc> SetLoopKind(const PrimFunc& func, const std::string& name, ForKind kind,
                                     const std::string& thread_tag) {
  std::string primitive = kind == ForKind::kParallel        ? "parallel"
                          : kind == ForKind::kVectorized    ? "vectorize"
                          : kind == ForKind::kThreadBinding ? "bind"
                                                            : "unroll";
  KILN_ASSIGN_OR_RETURN(Stmt s, FindLoop(func, name, primitive));
  const auto* loop = s.as<ForNode>();
  if (loop->for_kind != ForKind::kSerial) {
    return absl::InvalidArgumentError(
        absl::StrCat(primitive, ": loop '", name, "' is already ", KindWord(loop->for_kind)));
  }
  if (kind == ForKind::kThreadBinding) {
    if (!IsThreadTag(thread_tag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bind: '", thread_tag, "' is not a thread index (blockIdx.x/y/z or threadIdx.x/y/z) for loop '", name, "'"));
    }
    // Each GPU index can stand for one loop of a nest only: an inner loop bound to the same
    // index as an outer one would reuse its value.
    std::string clash;
    auto same_tag = [&](const Stmt& st) {
      const auto* f = st.as<ForNode>();
      if (f && f != loop && f->for_kind == ForKind::kThreadBinding && f->thread_tag == thread_tag) {
        clash = f->loop_var.name();
      }
    };
    for (const Stmt& a : schedule_internal::AncestorsOf(func->body, loop)) same_tag(a);
    ForEachStmt(loop->body, same_tag);
    if (!clash.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("bind: loop '", clash, "' of the same nest is already bound to ",
                                                     thread_tag, "; loop '", name, "' cannot be too"));
    }
  }
  // A loop of one iteration runs nothing at once, so it may carry a reduction (the single
  // block of a full reduction to a scalar is bound this way).
  const bool single = loop->extent.as_int() && *loop->extent.as_int() == 1;
  // Threads of one block striding a reduction whose partials lower_cross_thread_reduction
  // combines in shared memory do not race either.
  const bool combined = kind == ForKind::kThreadBinding && thread_tag.rfind("threadIdx.", 0) == 0 &&
                        transform::CombinesAcrossThreads(loop);
  if ((kind == ForKind::kParallel || kind == ForKind::kVectorized || kind == ForKind::kThreadBinding) && !single &&
      !combined) {
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
  Stmt replaced = For(loop->loop_var, loop->min, loop->extent, kind, loop->body,
                      kind == ForKind::kThreadBinding ? thread_tag : "");
  return WithBody(func, ReplaceStmt(func->body, loop, replaced));
}

}  // namespace kiln::tir::schedule_primitive
