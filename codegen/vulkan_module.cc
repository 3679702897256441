#include "codegen/vulkan_module.h"

#include "codegen/gpu_lowering.h"
#include "codegen/spirv_codegen.h"
#include "support/status_macros.h"

namespace kiln::codegen {

absl::StatusOr<VulkanModule> BuildVulkanModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs) {
  KILN_ASSIGN_OR_RETURN(GpuLowering lowering, LowerGpuFunctions(funcs, tir::TargetKind::kVulkan));
  VulkanModule module;
  module.code.kind = "vulkan";
  module.hosts = std::move(lowering.hosts);
  if (lowering.device_kernels.empty()) return module;
  KILN_ASSIGN_OR_RETURN(SpirvModule spirv, EmitSpirvModule(lowering.device_kernels));
  for (SpirvKernelInfo& k : spirv.kernels) module.code.kernels.push_back({std::move(k.name), std::move(k.param_types)});
  module.code.binaries.push_back({"spirv", "", std::move(spirv.bytes)});
  return module;
}

}  // namespace kiln::codegen
