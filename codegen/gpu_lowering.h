// LowerGpuFunctions: the PrimFuncs of one GPU target kind through the TIR passes, split into
// host functions (for the CPU object) and device kernels (for the target's emitter). Shared
// by the CUDA and Vulkan modules (codegen/cuda_module.h, codegen/vulkan_module.h).
//
// Each (symbol, PrimFunc) must carry a target of `kind`; it is lowered for that target
// (tir/transform/pipeline.h). The host function keeps the symbol; its device kernels are
// named `<symbol>_device<k>` and numbered across all functions, and each host's
// launch_kernel(k, ...) is rewritten to that module-wide index.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"
#include "tir/target.h"

namespace kiln::codegen {

struct GpuLowering {
  std::vector<std::pair<std::string, tir::PrimFunc>> hosts;           // lowered, calling_conv kernel_abi
  std::vector<std::pair<std::string, tir::PrimFunc>> device_kernels;  // calling_conv device_kernel
  std::vector<tir::Target> targets;                                   // each function's, in order
};

absl::StatusOr<GpuLowering> LowerGpuFunctions(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                              tir::TargetKind kind);

}  // namespace kiln::codegen
