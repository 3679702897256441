// FoldConstants: computes, at compile time, the bindings whose value depends only on
// constants, and binds their variables to the resulting Constant instead.
//
// What it folds, in every Relax function (If branches and nested functions included):
//  - A call to a registered pure operator that has a one-kernel legalization
//    (OpInfo::legalize_kernel; multi-kernel legalizations are not folded), when
//    every tensor operand is a constant (an R.const, or a variable bound to one, or for a
//    Tuple operand such as concat's, a tuple of those), and its result is a Tensor (or a
//    Tuple of Tensors) of static shape, known dtype and no device annotation, with at most
//    FoldConstantsOptions::max_elements elements in all. Non-tensor operands (shapes,
//    prim values) are part of the kernel, as legalization makes them; a kernel that needs a
//    symbolic value at run time (a scalar parameter) is not folded. The value is computed by
//    legalizing the call exactly as relax/transform/legalize_ops.h does (the operator's own
//    kernel) and running the PrimFunc in the TIR interpreter (tir/interpreter.h): no
//    LLVM and no code generation, with the interpreter's arithmetic (float32 math in float32,
//    integers wrapping to their width). A Tuple result becomes a Tuple of Constants.
//  - `t[i]` of a tuple whose fields are all constants becomes that field's Constant.
//  A creation op (no tensor operand: zeros, full, arange) folds only when its result has at
//  most FoldConstantsOptions::max_created_elements elements.
//  A folded binding keeps its variable (so every use stays valid); the bindings that fed it
//  stay too, for dead_code_elimination to remove. Bindings that cannot be folded (an
//  operator the interpreter cannot run, a computation above the step budget, or one whose
//  value is undefined, such as an integer division by zero, which the kernel then reports
//  at run time if the binding is ever reached) are left as they are: not folding is never
//  an error.
//
// A module in which nothing folds is returned unchanged: every entry is the same object.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

struct FoldConstantsOptions {
  // A folded result lives in the executable and in memory for the program's lifetime, while
  // the call it replaces may produce it from far smaller inputs (broadcast_to, full, a
  // matmul's outer product): above this many elements, computing at run time is cheaper
  // than carrying the value. 1 << 20 float32 elements are 4 MiB.
  int64_t max_elements = int64_t{1} << 20;
  // A creation op's value costs next to nothing to make at run time; folding it only saves
  // a kernel call, worth carrying a small constant but not megabytes.
  int64_t max_created_elements = 4096;
  // The interpreter is far slower than generated code; a fold that needs more steps than
  // this (loop iterations, block executions and stores) is left to run time, so that
  // compiling never stalls on, say, a large constant matmul. At roughly 150 ns a step,
  // 1 << 24 steps bound one fold to a few seconds; transposing a 1024 x 1024 weight takes
  // about 3 million.
  int64_t max_steps = int64_t{1} << 24;
};

absl::StatusOr<IRModule> FoldConstants(const IRModule& module, const FoldConstantsOptions& options = {});

}  // namespace kiln::relax
