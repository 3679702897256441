// FuseTir: turns each Relax function with attribute `primitive` (made by
// relax/transform/fuse_ops.h) into ONE PrimFunc of the same name, and its calls into
// call_tir of that PrimFunc.
//
//   func @fused_matmul_add_gelu(x: Tensor((n, 64), float32), w: Tensor((64, 256), float32),
//                               b: Tensor((256,), float32)) -> Tensor((n, 256), float32) {
//     attr primitive = true
//     dataflow {
//       %mm = R.call_tir(@matmul, (x, w), out_sinfo=Tensor((n, 256), float32))
//       %add = R.call_tir(@add, (%mm, b), out_sinfo=Tensor((n, 256), float32))
//       gv = R.call_tir(@gelu, (%add,), out_sinfo=Tensor((n, 256), float32))
//     }
//     return gv
//   }
// becomes
//   prim_func @fused_matmul_add_gelu(x: Buffer((n, 64), float32), w: Buffer((64, 256), float32),
//                                    b: Buffer((256,), float32), gv: Buffer((n, 256), float32)) {
//     attr op_pattern = "out_ewise_fusable"            -- the first kernel's pattern
//     allocate mm: Buffer((n, 256), float32) {
//       allocate add: Buffer((n, 256), float32) {
//         <matmul's body, writing mm>                 -- each kernel's loop nest, in order
//         <add's body, reading mm and b, writing add>
//         <gelu's body, reading add, writing gv>
//       }
//     }
//   }
// and `lv = @fused_matmul_add_gelu(x, w0, b0)` in the caller becomes
// `lv = R.call_tir(@fused_matmul_add_gelu, (x, w0, b0), out_sinfo=<lv's struct info>)`.
//
// The fused PrimFunc, exactly:
//  - parameters: one buffer per parameter of the primitive function (its external inputs, in
//    order, named after them), then one buffer for its result (named after the returned
//    variable): destination-passing style, as legalized kernels are. Shapes are the
//    primitive function's struct info, so its symbolic variables are the PrimFunc's.
//  - body: the bodies of the called PrimFuncs in binding order, each with its parameter
//    buffers replaced by the fused buffers (a kernel's input that an earlier call computed
//    is that call's buffer) and its symbolic shape variables replaced by the call site's
//    dims (matched by MatchKernelShapes). Every loop, iteration and let variable and every
//    buffer a kernel allocates is a fresh copy, so a kernel called twice is inlined twice
//    without sharing definitions; block names are made unique (`add`, then `add_1`).
//  - each intermediate tensor is an `allocate` around the whole sequence, the first
//    intermediate outermost (the form softmax's legalization uses for its temporaries).
//  - attribute op_pattern: the first kernel's op_pattern (opaque if it has none).
// Each original block stays in its own loop nest, so the default CPU schedule sees the
// plain form it schedules block by block.
//
// Afterwards the primitive functions are removed from the module, and so is every PrimFunc
// that one of them called and that nothing references any more (this pass owns that clean-up;
// dead-code elimination need not know about fusion).
//
// Errors (InvalidArgument, naming the function and binding): a primitive function whose
// body is not one dataflow block of call_tir bindings of PrimFuncs (single tensor outputs,
// no tir_vars), or whose call sites' shapes do not match the kernels' parameters.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/stmt.h"
#include "tir/stmt_functor.h"

namespace kiln::relax {

// Matches a PrimFunc's parameters against the tensors of one call (`tensors`: the inputs'
// struct info, then the outputs'): returns the kernel's symbolic shape variables mapped to
// the call site's dims. Fails (InvalidArgument saying which parameter) unless every
// parameter is a compact buffer, every tensor has a known shape and the kernel's dtype and
// rank, and every dim, once mapped, provably equals the call site's. A call that passes
// this computes the same thing when its kernel is inlined with the map applied.
absl::StatusOr<tir::VarMap> MatchKernelShapes(const tir::PrimFunc& func, const std::vector<StructInfo>& tensors);

absl::StatusOr<IRModule> FuseTir(const IRModule& module);

}  // namespace kiln::relax
