// BuildCpuSharedObject: the CPU backend end to end. TIR PrimFuncs -> LLVM IR (kernel ABI,
// see codegen/llvm_codegen.h) -> LLVM O3 for the target CPU -> ELF object -> shared object.
//
// The result is the bytes of a shared object exporting one function per kernel, loadable
// with vm::KernelObject::Load and carried in an executable's CPU kernel section. It
// depends only on libc and libm. Thread-safe: each call uses its own LLVM context.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/cpu_target.h"
#include "codegen/llvm_codegen.h"
#include "tir/stmt.h"

namespace kiln::codegen {

// `lowered_hosts` (functions the TIR passes already lowered: the host functions of GPU
// targets, codegen/cuda_module.h) go into the same object.
absl::StatusOr<std::string> BuildCpuSharedObject(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels,
                                                 const CpuTarget& target, const NamedPrimFuncs& lowered_hosts = {});

// The same for functions the TIR passes already lowered (tir/transform/pipeline.h,
// codegen::LowerForCpu): the host functions of GPU targets too, which launch their device
// kernels through ctx->launch.
absl::StatusOr<std::string> BuildLoweredSharedObject(const NamedPrimFuncs& lowered, const CpuTarget& target);

// The textual LLVM IR of the kernels, before (optimize = false) or after O3; for
// --dump-after style debugging and tests.
absl::StatusOr<std::string> DumpCpuLlvmIr(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels,
                                          const CpuTarget& target, bool optimize);

}  // namespace kiln::codegen
