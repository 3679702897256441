// Helpers shared by the operator families' legalizations (relax/op/legalize_*.cc): the
// lowering of one normalized Relax call to a TIR PrimFunc in destination-passing style, and
// the call_tir that replaces the call (CallKernel, CallTir).
//
// Conventions every one-kernel legalization follows (CallKernel relies on them):
//  - Parameters: one buffer per tensor operand in argument order (a Tuple operand, as
//    concat's, contributes one buffer per field), then one buffer per output tensor.
//    Non-tensor operands (Shape, Prim) are folded into the kernel. A symbolic variable the
//    kernel needs but cannot bind from its buffers' shapes (arange's start `p` when p is no
//    buffer dim) becomes a trailing scalar int64 parameter, the same tir::Var; LegalizeOps
//    passes it as call_tir's tir_vars.
//  - Buffer shapes are the struct info's dims, sharing their tir::Vars, so a symbolic var
//    that appears in several parameters is one Var (the kernel prologue binds it once and
//    checks the other occurrences). A compound dim (n + 1) whose variables are not all
//    bound by some plain-variable dim is replaced by a fresh variable, since the kernel
//    could not bind it otherwise.
//  - Computation is TensorIR Blocks inside serial loops: spatial iteration variables over
//    the output, reduction variables with `init` for reductions. Scheduling comes later.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/op_registry.h"
#include "tir/buffer.h"
#include "tir/stmt.h"

namespace kiln::relax::op {

void RegisterElementwiseLegalize(OpRegistry& registry);
void RegisterMatmulLegalize(OpRegistry& registry);
void RegisterManipulateLegalize(OpRegistry& registry);
void RegisterReduceLegalize(OpRegistry& registry);
void RegisterNnLegalize(OpRegistry& registry);
void RegisterNormalizationLegalize(OpRegistry& registry);
void RegisterResizeLegalize(OpRegistry& registry);
void RegisterCreateLegalize(OpRegistry& registry);
void RegisterQuantizeLegalize(OpRegistry& registry);
void RegisterPositionalLegalize(OpRegistry& registry);
void RegisterIndexingLegalize(OpRegistry& registry);
void RegisterRearrangeLegalize(OpRegistry& registry);
void RegisterSortLegalize(OpRegistry& registry);
void RegisterEinsumLegalize(OpRegistry& registry);
void RegisterDynamicShapeLegalize(OpRegistry& registry);

using tir::Buffer;
using tir::Stmt;

// `call_tir(callee, (operands...)[, tir_vars], out_sinfo=out)`, carrying `out` as its struct
// info; tir_vars (the kernel's trailing scalar parameters) are passed as a ShapeExpr.
Expr CallTir(Expr callee, std::vector<Expr> operands, StructInfo out, std::vector<PrimExpr> tir_vars = {});

// What a one-kernel legalization's call becomes (OpRegistry::SetLegalize wraps every
// KernelLegalizeFn in it): `func` joins the module (AddPrimFunc, named after the operator)
// and is called on the call's tensor operands, flattened as the parameter convention says
// (a Tuple-valued operand held in a variable is unpacked with TupleGetItem bindings
// `<binding>_in<i>` emitted through the builder), with its scalar parameters as tir_vars.
absl::StatusOr<Expr> CallKernel(LegalizeContext& context, const CallNode& call, tir::PrimFunc func);

// A tensor struct info with known shape and dtype, or an error naming the op and `what`.
absl::StatusOr<const TensorStructInfoNode*> KnownTensor(const CallNode& call, const StructInfo& sinfo,
                                                        const std::string& what);
// The tensor operands of a call, flattened as the parameter convention says.
absl::StatusOr<std::vector<const TensorStructInfoNode*>> TensorOperands(const CallNode& call);
// The call's outputs: its own struct info (a Tensor or a Tuple of Tensors).
absl::StatusOr<std::vector<const TensorStructInfoNode*>> CallOutputs(const CallNode& call);

// Rejects element types the CPU backend cannot lower (bfloat16, vectors, handles).
absl::Status CheckDType(const CallNode& call, DataType dtype);

struct KernelParams {
  std::vector<Buffer> inputs;
  std::vector<Buffer> outputs;
  std::vector<tir::Var> scalars;  // after the buffers, in this order
};
// Buffers for the call's tensor operands and outputs (names A, B, ... and out, out1, ...).
absl::StatusOr<KernelParams> MakeParams(const CallNode& call);

// Makes `value` (a symbolic expression from a Prim or Shape operand) usable in the kernel:
// each of its variables that no buffer shape binds as a plain dim joins params.scalars.
// Returns `value`.
PrimExpr UseSymbolic(KernelParams& params, const PrimExpr& value);

// The PrimFunc over params.inputs, params.outputs, then params.scalars, with attribute
// op_pattern.
tir::PrimFunc MakePrimFunc(const KernelParams& params, Stmt body, const std::string& op_pattern);

// The indices into `in` for output indices `out_index` under numpy broadcasting (dims
// aligned from the right; an input dim that is literally 1 reads index 0).
std::vector<PrimExpr> BroadcastIndex(const Buffer& in, const std::vector<PrimExpr>& out_index);

// The loop nest and block of one computation. `body` receives the block's spatial and
// reduction iteration variables and returns the block body and (for reductions) its init.
struct BlockParts {
  Stmt body;
  Stmt init;
};
using BlockBodyFn =
    std::function<BlockParts(const std::vector<PrimExpr>& spatial, const std::vector<PrimExpr>& reduce)>;
Stmt BlockNest(const std::string& name, const std::vector<PrimExpr>& spatial_extents,
               const std::vector<PrimExpr>& reduce_extents, const BlockBodyFn& body);

// out[v...] = value(v...) over out's shape.
Stmt ComputeBlock(const std::string& name, const Buffer& out,
                  const std::function<PrimExpr(const std::vector<PrimExpr>&)>& value);
// out[s...] = init; then out[s...] = combine(out[s...], value(s..., r...)) over the
// reduction extents.
Stmt ReduceBlock(const std::string& name, const Buffer& out, const std::vector<PrimExpr>& reduce_extents,
                 PrimExpr init, const std::function<PrimExpr(PrimExpr, PrimExpr)>& combine,
                 const std::function<PrimExpr(const std::vector<PrimExpr>&, const std::vector<PrimExpr>&)>& value);

// A constant of `dtype` (float or integer or bool).
PrimExpr Const(DataType dtype, double value);
// The lowest / highest value of dtype (-inf / inf for floats).
PrimExpr LowestValue(DataType dtype);
PrimExpr HighestValue(DataType dtype);
// A scratch buffer allocated inside the kernel.
Buffer ScratchBuffer(const std::string& name, DataType dtype, std::vector<PrimExpr> shape);

// The type sums of `dtype` values accumulate in: float32 for float16 (as PyTorch and ONNX
// Runtime do: a float16 accumulator loses about a unit in the last place per addition),
// otherwise dtype itself.
DataType AccumulationType(DataType dtype);
// `e` converted to `dtype` (itself when it already has that type).
PrimExpr CastTo(DataType dtype, PrimExpr e);

}  // namespace kiln::relax::op
