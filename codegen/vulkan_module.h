// BuildVulkanModule: the PrimFuncs of a vulkan target -> host functions for the CPU object and
// the device code (vm/device_code.h) carried in the executable.
//
// Each (symbol, PrimFunc) goes through the TIR passes for its vulkan target
// (codegen/gpu_lowering.h): the host function (argument checks, launch dimensions,
// ctx->launch) keeps the symbol and is compiled by the CPU backend with the other kernels;
// the device kernels `<symbol>_device<k>` become the entry points of one SPIR-V module
// (codegen/spirv_codegen.h). The device code is, per the Vulkan kernel contract
// (docs/codegen.md, "Vulkan"): kind "vulkan", kernels[k] = {name, param_types}, one binary
// {format "spirv", arch "", the module's bytes}, source "".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"
#include "vm/device_code.h"

namespace kiln::codegen {

struct VulkanModule {
  std::vector<std::pair<std::string, tir::PrimFunc>> hosts;  // lowered, calling_conv kernel_abi
  vm::DeviceCode code;
};

absl::StatusOr<VulkanModule> BuildVulkanModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs);

}  // namespace kiln::codegen
