// LowerCallTir: replaces every `R.call_tir` by an explicit allocation of its outputs and a
// destination-passing kernel call (the two ops of relax/op/lowered.cc):
//
//   gv: Tensor((n, 4), float32) = R.call_tir(@add_kernel, (x, y), out_sinfo=Tensor((n, 4), float32))
// becomes
//   gv_out: Tensor((n, 4), float32) = R.alloc_tensor(R.shape([n, 4]), dtype=float32)
//   gv: Tensor((n, 4), float32) = R.call_tir_dps(@add_kernel, (x, y), (gv_out,))
//
// With several outputs (out_sinfo a Tuple) there is one alloc_tensor per output
// (`gv_out0`, `gv_out1`, ...) and call_tir_dps returns the Tuple of them; a call_tir's
// tir_vars argument becomes call_tir_dps's fourth argument. The bound variable keeps its
// identity, struct info and block (a DataflowVar stays one; the allocations are bound in
// the same block, DataflowVars inside a dataflow block), so nothing after the call changes.
// Allocation stays a separate binding on purpose: memory planning replaces alloc_tensor by
// storage + offsets later, and DCE drops an allocation whose call was dropped.
//
// `R.call_dps_library(R.extern("sym"), args, out_sinfo=...)` is lowered the same way, to
// `R.call_tir_dps(R.extern("sym"), args, outs)`: VM codegen calls a library kernel exactly
// as it calls a generated one.
//
// Requires a normalized module (A-normal form, struct info on every Var). An output whose
// shape is not known (only its rank) cannot be allocated and is an error naming the
// function and binding. PrimFuncs and everything that is not call_tir or call_dps_library pass through.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

absl::StatusOr<IRModule> LowerCallTir(const IRModule& module);

}  // namespace kiln::relax
