#include "codegen/gpu_lowering.h"

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/stmt_functor.h"
#include "tir/transform/pipeline.h"

namespace kiln::codegen {

namespace {

// launch_kernel(k, ...) of one host function -> launch_kernel(k + offset, ...): the
// module-wide index of its device kernel.
class RenumberLaunches : public tir::StmtExprMutator {
 public:
  explicit RenumberLaunches(int64_t offset) : offset_(offset) {}
  tir::PrimExpr VisitExpr_(const tir::CallNode* op, const tir::PrimExpr& self) override {
    if (op->op != "launch_kernel" || op->args.empty()) return tir::StmtExprMutator::VisitExpr_(op, self);
    std::vector<tir::PrimExpr> args = op->args;
    std::optional<int64_t> k = args[0].as_int();
    if (!k) {
      status = absl::InternalError("launch_kernel with a non-constant kernel index");
      return self;
    }
    args[0] = tir::IntImm(args[0].dtype(), *k + offset_);
    for (size_t i = 1; i < args.size(); ++i) args[i] = VisitExpr(args[i]);
    return tir::Call(op->op, std::move(args));
  }
  absl::Status status;

 private:
  int64_t offset_;
};

}  // namespace

absl::StatusOr<GpuLowering> LowerGpuFunctions(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                              tir::TargetKind kind) {
  GpuLowering out;
  for (const auto& [symbol, func] : funcs) {
    absl::StatusOr<std::optional<tir::Target>> target = tir::TargetOf(func);
    if (!target.ok()) return absl::InvalidArgumentError(absl::StrCat("kernel ", symbol, ": ", target.status().message()));
    if (!target->has_value() || (*target)->kind != kind) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", symbol, " is not compiled for a ", tir::TargetKindName(kind), " target"));
    }
    out.targets.push_back(**target);
    absl::StatusOr<tir::transform::LoweredFunc> lowered = tir::transform::LowerPrimFunc(func, **target);
    if (!lowered.ok()) {
      return absl::Status(lowered.status().code(), absl::StrCat("kernel ", symbol, ": ", lowered.status().message()));
    }
    RenumberLaunches renumber(static_cast<int64_t>(out.device_kernels.size()));
    tir::Stmt body = renumber.VisitStmt(lowered->host->body);
    KILN_RETURN_IF_ERROR(renumber.status);
    out.hosts.emplace_back(symbol, tir::PrimFunc(lowered->host->params, body, lowered->host->attrs));
    for (size_t k = 0; k < lowered->device_kernels.size(); ++k) {
      out.device_kernels.emplace_back(absl::StrCat(symbol, "_device", k), lowered->device_kernels[k]);
    }
  }
  return out;
}

}  // namespace kiln::codegen
