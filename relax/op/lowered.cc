// The lowered (VM-level) forms that relax/transform/lower_call_tir.h produces from call_tir.
// They keep output allocation explicit and separate from the kernel call, so that memory
// planning can later replace each allocation by storage + offset without touching calls.
//
// alloc_tensor (shape: Shape), attribute dtype (required). Result: Tensor(shape, dtype), a
//   fresh uninitialized tensor. Pure: a fresh allocation has no observable effect, and a
//   dead one may be dropped.
// call_tir_dps (callee: GlobalVar of a PrimFunc, or ExternFunc of a library kernel
//   (lowered from call_dps_library), inputs: Tuple, outputs: Tuple,
//   [tir_vars: Shape]). Calls the kernel with inputs, then outputs, then the tir_vars
//   values (destination-passing) and returns the outputs: the single output itself, or a
//   Tuple of them when there are several. Pure by the destination-passing convention: it
//   writes only its outputs, which were allocated for it alone and are not read before
//   it returns them (the same contract call_tir has), so it may stay in a dataflow block;
//   a caller that drops its result may drop the call.
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> InferAllocTensor(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const ShapeStructInfoNode* shape, ShapeArg(call, 0, "shape"));
  KILN_ASSIGN_OR_RETURN(std::optional<DataType> dtype, DTypeAttr(call, "dtype"));
  if (!dtype) return OpError(call, "attribute 'dtype' is required");
  if (!shape->values) return TensorSInfoOfNdim(shape->ndim, dtype);
  return TensorSInfo(SimplifyDims(*shape->values, analyzer), dtype);
}

absl::StatusOr<StructInfo> InferCallTirDps(const CallNode& call, tir::Analyzer&) {
  if (call.args[0].kind() != ExprKind::kGlobalVar && call.args[0].kind() != ExprKind::kExternFunc) {
    return OpError(call, "argument 0 must be a GlobalVar (a PrimFunc) or an ExternFunc (a library kernel)");
  }
  for (int i : {1, 2}) {
    if (call.args[i].struct_info().as<TupleStructInfoNode>() == nullptr) {
      return OpError(call, "argument ", i, " must be a Tuple, got ", ToString(call.args[i].struct_info()));
    }
  }
  if (call.args.size() > 3) KILN_RETURN_IF_ERROR(ShapeArg(call, 3, "tir_vars").status());
  const auto& outputs = call.args[2].struct_info().as<TupleStructInfoNode>()->fields;
  if (outputs.empty()) return OpError(call, "needs at least one output");
  for (const StructInfo& out : outputs) {
    if (!out.defined() || out.as<TensorStructInfoNode>() == nullptr) {
      return OpError(call, "outputs must be Tensors, got ", out.defined() ? ToString(out) : "undefined");
    }
  }
  if (outputs.size() == 1) return outputs[0];
  return TupleSInfo(outputs);
}

}  // namespace

void RegisterLoweredOps(OpRegistry& registry) {
  registry.Register({"alloc_tensor", 1, 1, true, {"dtype"}, InferAllocTensor});
  registry.Register({"call_tir_dps", 3, 4, true, {}, InferCallTirDps});
}

}  // namespace kiln::relax::op
