// LegalizeOps: lowers every tensor operator call of a normalized module to TIR.
//
// Each binding whose value calls a registered operator with a legalization (OpInfo::legalize)
// becomes `R.call_tir(@<kernel>, (tensor operands...), out_sinfo=<the call's struct info>)`
// and the PrimFunc joins the module. When the kernel has trailing scalar parameters
// (symbolic variables it cannot bind from its buffers, e.g. arange's start), the call passes
// them as tir_vars: `R.call_tir(@arange, (), R.shape([p]), out_sinfo=...)`. Kernels are
// named after the operator, made unique against the module ("add", "add1", ...; their
// exported symbols are chosen by codegen/build_executable.h); structurally equal PrimFuncs
// (tir::StructuralEqual, symbolic shape vars compared up to renaming) are added once and
// shared. A Tuple-valued
// operand held in a variable (concat's) is unpacked with TupleGetItem bindings first, since
// a kernel takes one buffer per tensor. Operators without a legalization (call_tir,
// call_dps_library, call_builtin, shape_of, print) stay as they are.
//
// Errors: a call that cannot be lowered (operand or result of unknown shape or dtype, a
// dtype the CPU backend lacks) is reported naming the function, binding and operator:
// "function 'main', binding 'y': exp: no CPU lowering for dtype int32".
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

absl::StatusOr<IRModule> LegalizeOps(const IRModule& module);

}  // namespace kiln::relax
