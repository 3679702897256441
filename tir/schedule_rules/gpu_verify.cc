// VerifyGpuFunction: what a scheduled GPU function must satisfy before code generation
// (tir/schedule_rules/gpu_schedule.h). Checked here rather than left to the driver, whose
// errors at launch ("too many resources requested") name neither the kernel nor the loop.
#include <map>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule_rules/gpu_schedule.h"
#include "tir/stmt_functor.h"
#include "tir/transform/lower_cross_thread_reduction.h"

namespace kiln::tir {

namespace {

class GpuChecker : public StmtExprVisitor {
 public:
  explicit GpuChecker(const Target& target) : target_(target) {}

  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    blocks_.push_back(op->name);
    for (const Buffer& b : op->alloc_buffers) CheckAllocation(b);
    StmtExprVisitor::VisitStmt_(op, self);
    blocks_.pop_back();
  }
  void VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) {
      StmtExprVisitor::VisitStmt_(op, self);
      return;
    }
    const bool outermost = bound_.empty();
    if (op->thread_tag.rfind("threadIdx.", 0) == 0) {
      std::optional<int64_t> extent = op->extent.as_int();
      if (!extent) {
        Fail(absl::StrCat("loop '", op->loop_var.name(), "' bound to ", op->thread_tag, " has the symbolic extent ",
                          ToString(op->extent), "; threads per block must be a constant (split it first)"));
      } else {
        int64_t& slot = threads_[op->thread_tag];
        slot = std::max(slot, *extent);
      }
    }
    bound_.push_back(op);
    StmtExprVisitor::VisitStmt_(op, self);
    bound_.pop_back();
    if (outermost) FinishKernel(op);
  }
  void VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    CheckAllocation(op->buffer);
    StmtExprVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (bound_.empty()) {
      Fail(absl::StrCat("the store to '", op->buffer->name, "'",
                        blocks_.empty() ? std::string() : absl::StrCat(" in block '", blocks_.back(), "'"),
                        " is not inside a loop bound to GPU threads (no GPU schedule rule applied to it)"));
    }
    StmtExprVisitor::VisitStmt_(op, self);
  }

  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    if (bound_.empty()) {
      // Outside the thread nests is the host function: it cannot dereference device memory
      // (a data-dependent check before the kernels, say).
      Fail(absl::StrCat("the load of '", op->buffer->name, "'",
                        blocks_.empty() ? std::string() : absl::StrCat(" in block '", blocks_.back(), "'"),
                        " is outside the loops bound to GPU threads: host code cannot read device memory "
                        "(not supported yet)"));
    }
    StmtExprVisitor::VisitExpr_(op, self);
  }

  absl::Status status;

 private:
  void Fail(const std::string& message) {
    if (status.ok()) status = absl::InvalidArgumentError(absl::StrCat("gpu verify: ", message));
  }
  void CheckAllocation(const Buffer& b) {
    if (b->scope == "shared") {
      int64_t bytes = b->dtype.bytes();
      for (const PrimExpr& d : b->shape) {
        std::optional<int64_t> v = d.as_int();
        if (!v) {
          Fail(absl::StrCat("shared buffer '", b->name, "' has a symbolic size"));
          return;
        }
        bytes *= *v;
      }
      shared_bytes_ += bytes;
    }
    // Outside the thread nests, a "global" buffer is an intermediate the host function
    // allocates on the device for its kernels (split_host_device: device workspace). Shared
    // or per-thread memory exists only inside a kernel.
    if (bound_.empty() && b->scope != "global") {
      Fail(absl::StrCat("the ", b->scope, " buffer '", b->name,
                        "' is allocated outside the loops bound to GPU threads; only device (\"global\") memory ",
                        "can be shared by the kernels of a function"));
    }
  }
  // One kernel (an outermost thread-bound nest) ends: its totals against the limits.
  void FinishKernel(const ForNode* op) {
    int64_t threads = 1;
    for (const auto& [tag, extent] : threads_) threads *= extent;
    if (threads > target_.max_threads_per_block) {
      Fail(absl::StrCat("the kernel at loop '", op->loop_var.name(), "' runs ", threads,
                        " threads per block; the target allows ", target_.max_threads_per_block));
    }
    if (shared_bytes_ > target_.max_shared_memory_per_block) {
      Fail(absl::StrCat("the kernel at loop '", op->loop_var.name(), "' uses ", shared_bytes_,
                        " bytes of shared memory per block; the target allows ", target_.max_shared_memory_per_block));
    }
    threads_.clear();
    shared_bytes_ = 0;
  }

  const Target& target_;
  std::vector<std::string> blocks_;
  std::vector<const ForNode*> bound_;
  std::map<std::string, int64_t> threads_;
  int64_t shared_bytes_ = 0;
};

}  // namespace

absl::Status VerifyGpuFunction(const PrimFunc& func, const Target& target) {
  if (!target.is_gpu()) {
    return absl::InvalidArgumentError(absl::StrCat("gpu verify: target ", target.ToString(), " is not a GPU"));
  }
  // The shared buffers of cross-thread reductions count against the target's limit, and a
  // thread-bound reduction loop that cannot be combined is an error here, before codegen.
  KILN_ASSIGN_OR_RETURN(PrimFunc lowered, transform::LowerCrossThreadReductions(func));
  GpuChecker checker(target);
  checker.VisitStmt(lowered->body);
  return checker.status;
}

}  // namespace kiln::tir
