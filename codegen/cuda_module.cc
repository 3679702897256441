#include "codegen/cuda_module.h"

#include "absl/strings/str_cat.h"
#include "codegen/cuda_codegen.h"
#include "codegen/nvrtc_compiler.h"
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

std::vector<std::string> CudaArchitectures(const tir::Target& target) {
  if (!target.arch.empty()) return {target.arch};
  return {"sm_80", "sm_90"};
}

absl::StatusOr<CudaModule> BuildCudaModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                           bool compile) {
  CudaModule module;
  module.code.kind = "cuda";
  std::vector<std::pair<std::string, tir::PrimFunc>> device_kernels;
  std::vector<std::string> archs;
  for (const auto& [symbol, func] : funcs) {
    absl::StatusOr<std::optional<tir::Target>> target = tir::TargetOf(func);
    if (!target.ok()) return absl::InvalidArgumentError(absl::StrCat("kernel ", symbol, ": ", target.status().message()));
    if (!target->has_value() || (*target)->kind != tir::TargetKind::kCuda) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", symbol, " is not compiled for a cuda target"));
    }
    for (const std::string& a : CudaArchitectures(**target)) {
      if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
    }
    absl::StatusOr<tir::transform::LoweredFunc> lowered = tir::transform::LowerPrimFunc(func, **target);
    if (!lowered.ok()) {
      return absl::Status(lowered.status().code(), absl::StrCat("kernel ", symbol, ": ", lowered.status().message()));
    }
    RenumberLaunches renumber(static_cast<int64_t>(device_kernels.size()));
    tir::Stmt body = renumber.VisitStmt(lowered->host->body);
    KILN_RETURN_IF_ERROR(renumber.status);
    module.hosts.emplace_back(symbol, tir::PrimFunc(lowered->host->params, body, lowered->host->attrs));
    for (size_t k = 0; k < lowered->device_kernels.size(); ++k) {
      device_kernels.emplace_back(absl::StrCat(symbol, "_device", k), lowered->device_kernels[k]);
    }
  }
  KILN_ASSIGN_OR_RETURN(CudaSource source, EmitCudaSource(device_kernels));
  module.code.source = source.code;
  for (const CudaKernelSource& k : source.kernels) module.code.kernels.push_back({k.name, k.param_types});
  if (compile && !device_kernels.empty()) {
    KILN_ASSIGN_OR_RETURN(std::vector<CudaBinary> binaries, CompileCuda(source.code, archs));
    for (CudaBinary& b : binaries) module.code.binaries.push_back({b.format, b.arch, std::move(b.bytes)});
  }
  return module;
}

}  // namespace kiln::codegen
