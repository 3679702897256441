#include "codegen/cuda_module.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codegen/cuda_codegen.h"
#include "codegen/gpu_lowering.h"
#include "codegen/nvrtc_compiler.h"
#include "support/status_macros.h"

namespace kiln::codegen {

std::vector<std::string> CudaArchitectures(const tir::Target& target) {
  if (!target.arch.empty()) return {target.arch};
  return {"sm_80", "sm_90"};
}

absl::StatusOr<CudaModule> BuildCudaModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                           bool compile) {
  CudaModule module;
  module.code.kind = "cuda";
  KILN_ASSIGN_OR_RETURN(GpuLowering lowering, LowerGpuFunctions(funcs, tir::TargetKind::kCuda));
  std::vector<std::string> archs;
  for (const tir::Target& target : lowering.targets) {
    for (const std::string& a : CudaArchitectures(target)) {
      if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
    }
  }
  module.hosts = std::move(lowering.hosts);
  const std::vector<std::pair<std::string, tir::PrimFunc>>& device_kernels = lowering.device_kernels;
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
