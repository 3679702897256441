// MakeKernelAbi: a PrimFunc's parameters -> the kernel ABI of vm/kernel_abi.h, with every
// check on the caller's arguments written out as TIR asserts.
//
// The result has two scalar parameters, `args: handle` (const KilnArg*) and
// `num_args: int32`, and the attribute calling_conv = "kernel_abi"; the emitter supplies
// the call context. Its body is the prologue, then the original body:
//  1. the argument count;
//  2. scalar parameters (so that shapes mentioning them are checked against them, whatever
//     the parameter order): the argument's type code (int for int/uint/bool variables,
//     float for float variables, handle for handles), declared bounds of int variables,
//     then `let v = ...` binding the variable (bool is `!= 0`, narrower types are cast);
//  3. each tensor parameter in order: type code, non-null, device (CPU memory, or pinned
//     CUDA host memory, for a cpu target; CUDA memory for cuda; Vulkan memory for vulkan),
//     rank, dtype (code, bits, lanes), each dimension (a constant must match; a variable is
//     bound by `let` at its first occurrence after its declared bounds are checked, later
//     occurrences must equal it; compound dimensions such as `m + 2` wait until step 4),
//     then strides: a buffer without declared strides must be compact row-major (a NULL
//     strides array, or strides equal to the compact ones except on extent-1 dimensions);
//     declared strides are bound or checked like dimensions;
//  4. compound dimensions, once every variable is bound;
//  5. `decl_buffer B: <the parameter's buffer> = tensor_data(B_tensor)` around the body, so
//     the body's accesses are unchanged and the data pointer is read after every check.
// Each failed check stops the kernel with a message naming the argument, e.g.
//     argument 1 (B) dimension 0: expected {} (n), got {}
// (the emitter prefixes "kernel NAME: ").
//
// Errors (InvalidArgument): a vector or unsupported scalar parameter, a non-integer
// symbolic dimension, a compound dimension using a variable no argument defines.
// Function targets: tir::TargetOf(func), a CPU when the function has none.
#pragma once

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir::transform {

// The attribute MakeKernelAbi sets: the function takes (args, num_args) and checks them.
inline constexpr char kCallingConvAttr[] = "calling_conv";
inline constexpr char kKernelAbi[] = "kernel_abi";

absl::StatusOr<PrimFunc> MakeKernelAbi(const PrimFunc& func);

}  // namespace kiln::tir::transform
