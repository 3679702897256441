// VM code generation: lowered Relax functions -> bytecode, through vm::ExecutableBuilder.
//
// Input: a module after relax/transform/pipeline.h (normalized, every call_tir lowered to
// alloc_tensor + call_tir_dps). Per Relax function:
//  - Parameter signatures come from the parameters' struct info: a Tensor's dtype and rank,
//    each dimension fixed (a constant), symbolic (a bare variable: bound at its first
//    sight, checked at later ones, so a mismatch is the VM's error naming the function,
//    parameter, dimension and variable) or any (a compound expression such as n + 1,
//    checked by a MatchShape against IntOps once the parameters are bound); a Shape's
//    dims likewise; Prim(int) an int, and Prim(int64, value=k) binds
//    (or checks) k; anything else any value.
//  - match_cast on a Tensor, Shape or Prim(int, value=k): MatchShape (binds new symbolic
//    variables, then checks compound dims such as 2 * n; the dtype is not checked).
//  - Symbolic PrimExprs (alloc shapes, R.shape, R.prim, tir_vars): IntOp instructions over
//    the registers holding the bound variables (+ - * floordiv floormod min max, the
//    comparisons, and && || ! on their 0 / 1 results); ShapeExpr: MakeShape.
//  - alloc_tensor: the kiln.alloc_tensor builtin; alloc_storage / storage_tensor (from
//    relax/transform/plan_memory.h): the AllocStorage / AllocTensor instructions; call_tir_dps: CallKernel with inputs,
//    outputs, then tir_vars as int operands; calls of other Relax functions: CallFunction;
//    shape_of: kiln.shape_of; reshape (which legalization keeps as a view): kiln.reshape; Tuple / TupleGetItem: kiln.tuple_make / kiln.tuple_get;
//    If: If/Goto (a tensor condition goes through kiln.read_if_cond); Constant tensors and
//    strings: the constant pool and LoadConst.
//  - R.call_builtin(R.extern("name"), args...) and a direct call R.extern("name")(args...):
//    CallBuiltin, recording the signature derived from the arguments' and the call's struct
//    info (Tensor tensor, Shape shape, Prim(int) int, Prim(float) double, Tuple tuple, Func
//    closure, anything else any), which loading checks against the registered builtin.
//    R.print: kiln.print with the format string first.
//  - A Relax function used as a value (`f = @g`, also inside a tuple): MakeClosure capturing
//    nothing; a call of a variable (`f(x)`): Call of the closure. Func parameters are
//    checked to be closures.
//  - A parameter `Tensor(..., device="cuda:0")`: the device goes into the device table and
//    the parameter's signature, so the VM checks where the tensor is.
//  - One register per variable. A variable's register is killed (Kill) right after its
//    last use, so tensors go back to the pool early; this pass does it rather than a
//    separate Relax pass because only here are registers known. Uses are ordered as the
//    code is laid out, which is also execution order (no loops; an If's then-branch comes
//    first), so no killed register is read again; a variable last used inside one branch
//    is killed in that branch only and otherwise lives until the function returns.
// Anything else (an unlowered call_tir, an operator that was not legalized, a PrimFunc or an
// R.extern used as a value, float symbolic expressions) is an error naming the function and
// binding.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "relax/ir_module.h"
#include "vm/executable_builder.h"

namespace kiln::codegen {

// Emits every Relax function of `module` into `builder`. `kernels` maps each PrimFunc
// name that call_tir_dps may call to its kernel index (ExecutableBuilder::DeclareKernel).
absl::Status GenerateVmCode(const relax::IRModule& module, const std::map<std::string, int32_t>& kernels,
                            vm::ExecutableBuilder& builder);

// The kernel-ABI argument signature of a PrimFunc: 't' per buffer, 'i' per int/uint/bool
// scalar, 'f' per float scalar, in parameter order.
std::string KernelArgSignature(const tir::PrimFunc& func);

}  // namespace kiln::codegen
