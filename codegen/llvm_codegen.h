// LowerToLlvm: TIR PrimFuncs -> one LLVM module of kernels with the kernel ABI.
//
// Each (name, PrimFunc) goes through the TIR lowering passes (tir/transform/pipeline.h, for
// the function's own target or, without one, a CPU named after the target machine) and
// becomes an exported function
//     int32_t name(const KilnArg* args, int32_t num_args, KilnCallContext* ctx)
// (vm/kernel_abi.h). The passes write its prologue (make_kernel_abi: every argument checked
// before the body touches memory, a mismatch reported through ctx->set_error with a message
// naming the kernel, the argument and the dimension, e.g.
//     kernel add: argument 1 (B) dimension 0: expected 7 (n), got 8
// and a nonzero return), lower blocks, flatten buffers, vectorize what they can and choose
// each math intrinsic's implementation; EmitLlvmModule then emits the lowered TIR:
// serial loops stay loops; parallel loops become closures run through ctx->parallel_for in
// about num_threads contiguous chunks; vectorized loops that vectorize_loops left carry
// LLVM's vectorize hint (the loop vectorizer does the SIMD work, tails included), unrolled
// loops the full-unroll hint; small constant-size allocations live on the stack, others come
// from ctx->workspace_alloc; asserts report "kernel NAME: message"; launch_kernel calls
// ctx->launch. Integer floordiv / floormod round toward negative infinity; `round` rounds
// half to even.
//
// IR that cannot be lowered (an undefined variable, a GPU binding on a CPU target,
// bfloat16, a math intrinsic on integers, a kernel name that is not a symbol or clashes with
// the C library) is an InvalidArgument error naming the kernel; the module is never
// partially returned.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::codegen {

// The kernels to compile, each under the symbol name the VM will look up.
using NamedPrimFuncs = std::vector<std::pair<std::string, tir::PrimFunc>>;

absl::StatusOr<std::unique_ptr<llvm::Module>> LowerToLlvm(const NamedPrimFuncs& kernels,
                                                          llvm::LLVMContext& context,
                                                          const llvm::TargetMachine& machine);

// The TIR half of LowerToLlvm: each function lowered for a CPU (its own target, or one named
// after `machine`); another kind of target is an error. `after_pass` (may be empty) sees each
// kernel after each pass (kernel name, pass name, function).
absl::StatusOr<NamedPrimFuncs> LowerForCpu(
    const NamedPrimFuncs& kernels, const llvm::TargetMachine& machine,
    const std::function<void(const std::string&, const std::string&, const tir::PrimFunc&)>& after_pass = {});

// The LLVM half: emits functions the TIR passes already lowered (calling_conv =
// "kernel_abi"), the host functions of GPU targets included.
absl::StatusOr<std::unique_ptr<llvm::Module>> EmitLlvmModule(const NamedPrimFuncs& lowered,
                                                             llvm::LLVMContext& context,
                                                             const llvm::TargetMachine& machine);

}  // namespace kiln::codegen
