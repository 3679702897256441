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
// alloc_storage (size: Prim(int64), a byte count). Result: Object, one block of
//   uninitialized memory of `size` bytes (VM: instruction AllocStorage, 64-byte aligned, on
//   the VM's device) that storage_tensor carves tensors out of. Memory planning
//   (relax/transform/plan_memory.h) emits it; pure like alloc_tensor. The memory lives as
//   long as the storage value or any tensor carved out of it does.
// storage_tensor (storage: Object from alloc_storage, offset: Prim(int64) bytes, shape:
//   Shape), attribute dtype (required). Result: Tensor(shape, dtype) whose data is the
//   storage's bytes [offset, offset + numel * dtype bytes) (VM: instruction AllocTensor;
//   not fitting is a run-time error). Contents are undefined, as for alloc_tensor, and
//   tensors carved out of the same bytes alias: the planner only overlaps tensors whose
//   lifetimes are disjoint. Pure by the same argument as alloc_tensor.
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

// An argument of Prim(int) struct info (a PrimValue such as R.prim(n * 256)).
absl::Status IntPrimArg(const CallNode& call, size_t index, const char* what) {
  const StructInfo& s = call.args[index].struct_info();
  const auto* prim = s.defined() ? s.as<PrimStructInfoNode>() : nullptr;
  if (prim == nullptr || (prim->dtype.code() != DataType::Code::kInt && prim->dtype.code() != DataType::Code::kUInt)) {
    return OpError(call, "argument '", what, "' must be an integer Prim (e.g. R.prim(1024)), got ",
                   s.defined() ? ToString(s) : "undefined");
  }
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferAllocStorage(const CallNode& call, tir::Analyzer&) {
  KILN_RETURN_IF_ERROR(IntPrimArg(call, 0, "size"));
  return ObjectSInfo();
}

absl::StatusOr<StructInfo> InferStorageTensor(const CallNode& call, tir::Analyzer& analyzer) {
  const StructInfo& storage = call.args[0].struct_info();
  if (!storage.defined() || storage.as<ObjectStructInfoNode>() == nullptr) {
    return OpError(call, "argument 'storage' must be an Object (from R.alloc_storage), got ",
                   storage.defined() ? ToString(storage) : "undefined");
  }
  KILN_RETURN_IF_ERROR(IntPrimArg(call, 1, "offset"));
  KILN_ASSIGN_OR_RETURN(const ShapeStructInfoNode* shape, ShapeArg(call, 2, "shape"));
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
  registry.Register({"alloc_storage", 1, 1, true, {}, InferAllocStorage});
  registry.Register({"storage_tensor", 3, 3, true, {"dtype"}, InferStorageTensor});
}

}  // namespace kiln::relax::op
