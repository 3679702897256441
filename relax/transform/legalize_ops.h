// LegalizeOps: lowers every tensor operator call of a normalized module to TIR.
//
// Each binding whose value calls an operator with a legalization (OpInfo::legalize, or one
// of `custom`, which take precedence) gets the Relax expression the legalization returns as
// its value. A legalization (relax/op_registry.h LegalizeFn) adds any number of PrimFuncs to
// the module and emits glue through a BlockBuilder; the glue's bindings go right before the
// binding, in its block, and are legalized in turn (glue may use operators), up to 16
// levels deep. Most operators have one-kernel legalizations (KernelLegalizeFn), for which
// the binding becomes
// `R.call_tir(@<kernel>, (tensor operands...), out_sinfo=<the call's struct info>)`
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
// "function 'main', binding 'y': exp: no CPU lowering for dtype int32". An operator with a
// legalization over a string tensor (operand or result) is Unimplemented, except reshape,
// which stays a view: strings are for host builtins only (vm/string_tensor.h).
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "relax/op_registry.h"

namespace kiln::relax {

// Legalizations by operator name, replacing the registry's (a target's own lowering, tests).
using LegalizeMap = std::map<std::string, LegalizeFn>;

absl::StatusOr<IRModule> LegalizeOps(const IRModule& module, const LegalizeMap& custom = {});

}  // namespace kiln::relax
