// BuildCudaModule: the PrimFuncs of a cuda target -> host functions for the CPU object and
// the device code (vm/device_code.h) carried in the executable.
//
// Each (symbol, PrimFunc) goes through the TIR passes (tir/transform/pipeline.h) for its
// cuda target: the host function (argument checks, launch dimensions, ctx->launch) keeps
// the symbol and is compiled by the CPU backend with the other kernels; its device kernels
// are named `<symbol>_device<k>` and numbered across the whole module (launch_kernel's
// index is rewritten accordingly), emitted as one CUDA C unit (codegen/cuda_codegen.h) and
// compiled by NVRTC (codegen/nvrtc_compiler.h) to a PTX and a cubin per architecture: the
// target's `-arch` when it names one, else sm_80 and sm_90.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"
#include "tir/target.h"
#include "vm/device_code.h"

namespace kiln::codegen {

struct CudaModule {
  std::vector<std::pair<std::string, tir::PrimFunc>> hosts;  // lowered, calling_conv kernel_abi
  vm::DeviceCode code;
};

// The architectures a target compiles for.
std::vector<std::string> CudaArchitectures(const tir::Target& target);

// `compile` false stops after the CUDA C (code.source filled, no binaries): for
// --dump-after style inspection and for machines without NVRTC.
absl::StatusOr<CudaModule> BuildCudaModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                           bool compile = true);

}  // namespace kiln::codegen
