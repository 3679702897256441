// LowerToLlvm: TIR PrimFuncs -> one LLVM module of kernels with the kernel ABI.
//
// Each (name, PrimFunc) becomes an exported function
//     int32_t name(const KilnArg* args, int32_t num_args, KilnCallContext* ctx)
// (vm/kernel_abi.h). Its prologue checks everything a caller can get wrong before the body
// touches memory: the argument count, each argument's kind, a tensor's device, rank and
// dtype, constant dimensions, and symbolic dimensions (bound from the first tensor that
// shows them, checked against every later occurrence, and against declared upper bounds),
// and that tensors without declared strides are compact row-major. A mismatch calls
// ctx->set_error with a message naming the kernel, the argument and the dimension, e.g.
//     kernel add: argument 1 (B) dimension 0: expected 7 (n), got 8
// and returns nonzero.
//
// Lowering: serial loops stay loops; parallel loops become closures run through
// ctx->parallel_for in about num_threads contiguous chunks; a vectorized loop of constant
// extent with a straight-line body becomes SIMD code directly (codegen/loop_vectorizer.h),
// other vectorized loops and unrolled loops carry LLVM loop hints (the loop vectorizer
// does the SIMD work, tails included); GPU thread bindings are an error. Blocks bind their iteration variables, guard on their
// predicate, and run `init` when every reduction variable is 0. Small constant-size
// allocations live on the stack, others come from ctx->workspace_alloc. Integer floordiv /
// floormod round toward negative infinity; `round` rounds half to even; tanh and erf call
// libm, sigmoid is 1 / (1 + exp(-x)).
//
// IR that cannot be lowered (an undefined variable, a GPU binding, bfloat16, a math
// intrinsic on integers, a kernel name that is not a symbol or clashes with the C library)
// is an InvalidArgument error naming the kernel; the module is never partially returned.
#pragma once

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

}  // namespace kiln::codegen
