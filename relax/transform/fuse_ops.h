// FuseOps: groups chains of call_tir bindings into primitive Relax functions, which
// relax/transform/fuse_tir.h then turns into one kernel each.
//
// What is fused. Within one dataflow block, walking the bindings in order, a call_tir
// joins the group of the call that produced one of its arguments when
//  - that argument is a DataflowVar (never the block's output) used by this call and
//    nowhere else in the function (so nothing is computed twice and no intermediate
//    escapes the fused kernel), and it is the latest call of that group (groups are chains);
//  - the patterns (op_pattern, relax/transform/annotate_patterns.h) allow it: an
//    elementwise or broadcast consumer joins a group whose kernels are out_ewise_fusable
//    (matmul), injective, broadcast or elementwise; an injective consumer joins a group of
//    injective or elementwise kernels only.
// With FuseOpsOptions::transposed_operands (the CPU pipeline), a matmul-like
// (out_ewise_fusable) call of two operands also joins the group of a lone transpose of the
// last two axes that makes its second operand (`q @ permute_dims(k)`): the kernel then reads
// k itself, and the CPU matmul rule transposes it while packing its panels
// (tir/schedule_rules/cpu_matmul.cc), so no transposed copy is written.
// A group starts at an out_ewise_fusable, injective, broadcast or elementwise call.
//
// What is not fused: comm_reduce (sum, max, mean, ...), opaque and any other pattern (softmax,
// norms) stay alone, before and after; calls with tir_vars (call_tir's third
// argument, e.g. arange's start), calls with Tuple outputs, calls whose tensors are not all
// of known shape and dtype, calls whose kernel's shapes do not provably match the call site
// (MatchKernelShapes), and groups whose symbolic variables are not all defined by the plain
// dims of their inputs' shapes. Only dataflow blocks are considered (those of If branches
// too); calls of library kernels (call_dps_library) are never fused.
//
// Each group of two or more calls becomes a private function
//   func @fused_<kernel names joined by _>(<the group's external inputs>) -> <result> {
//     attr primitive = true
//     dataflow { <the group's call_tirs, same kernels, same order> }
//     return <the last call's result>
//   }
// (the kernel names without the numbers legalization adds to keep them unique, so
// matmul3 + add1 + gelu gives `fused_matmul_add_gelu`; the name is then made unique against
// the module: `fused_add_gelu`, `fused_add_gelu1`), whose
// parameters are the distinct Vars and constants the group reads from outside, in first-use
// order, with fresh symbolic shape variables. The group's bindings become one binding of
// the last call's variable (same Var, same struct info, at the last call's place) to
// `@fused_...(inputs)`. Nothing else changes; a module without fusable chains comes back as
// it was.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

struct FuseOpsOptions {
  // A lone transpose joins the matmul whose second operand it makes (see above).
  bool transposed_operands = false;
};

absl::StatusOr<IRModule> FuseOps(const IRModule& module);
absl::StatusOr<IRModule> FuseOps(const IRModule& module, const FuseOpsOptions& options);

}  // namespace kiln::relax
