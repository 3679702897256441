// Sorting and scans along one axis: cumsum, sort, argsort, topk.
//
// Order: ascending order puts NaN after every number (np.sort); descending order (and topk's
// largest) puts NaN first, as the largest value. Equal values (NaNs among them) keep the
// order of their indices - the stable order np.sort(kind="stable") gives and ONNX TopK asks
// for ("the element with the lower index appears first"), in both directions.
//
// cumsum (data), attributes axis (int, required), exclusive (bool, default false) and
//   reverse (bool, default false). ONNX CumSum / np.cumsum along the axis: element i is the
//   sum of the elements at j <= i (reverse: j >= i; exclusive leaves out j == i itself, so
//   its first element is 0). Result: data's struct info.
// sort (data), attributes axis (default -1) and descending (bool, default false): the
//   sorted values. Result: data's struct info.
// argsort (data), attributes axis, descending (as sort) and dtype (an integer dtype,
//   default int64): the indices that sort data (np.argsort(kind="stable")).
// topk (data), attributes k (int >= 0, required, at most the axis' dim: a constant dim is
//   checked here, a symbolic one at run time), axis (default -1), largest (bool, default
//   true), sorted (bool, default true; results are always sorted, which sorted=false
//   allows) and dtype (of the indices, default int64). Returns a Tuple (values, indices),
//   both of data's shape with the axis' dim replaced by k (ONNX TopK).
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<int> AxisOf(const CallNode& call, const TensorStructInfoNode& data, int64_t fallback) {
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (data.ndim == 0) return OpError(call, "data must have at least 1 dimension");
  if (data.ndim == kUnknownNdim) return -1;
  return NormalizeAxis(call, axis_attr.value_or(fallback), data.ndim);
}

absl::StatusOr<StructInfo> InferCumsum(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (!axis_attr) return OpError(call, "attribute 'axis' is required");
  KILN_RETURN_IF_ERROR(AxisOf(call, *data, 0).status());
  KILN_RETURN_IF_ERROR(BoolAttr(call, "exclusive").status());
  KILN_RETURN_IF_ERROR(BoolAttr(call, "reverse").status());
  if (data->dtype && data->dtype->is_bool()) return OpError(call, "data must be numeric, got bool");
  return call.args[0].struct_info();
}

absl::StatusOr<DataType> IndexDType(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(auto dtype, DTypeAttr(call, "dtype"));
  if (dtype && !dtype->is_integer()) return OpError(call, "dtype must be an integer type, got ", dtype->ToString());
  return dtype.value_or(DataType::Int64());
}

absl::StatusOr<StructInfo> InferSort(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_RETURN_IF_ERROR(AxisOf(call, *data, -1).status());
  KILN_RETURN_IF_ERROR(BoolAttr(call, "descending").status());
  return call.args[0].struct_info();
}

absl::StatusOr<StructInfo> InferArgsort(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_RETURN_IF_ERROR(AxisOf(call, *data, -1).status());
  KILN_RETURN_IF_ERROR(BoolAttr(call, "descending").status());
  KILN_ASSIGN_OR_RETURN(DataType dtype, IndexDType(call));
  if (!data->shape) return TensorSInfoOfNdim(data->ndim, dtype, data->device);
  return TensorSInfo(*data->shape, dtype, data->device);
}

absl::StatusOr<StructInfo> InferTopk(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(int axis, AxisOf(call, *data, -1));
  KILN_ASSIGN_OR_RETURN(auto k, IntAttr(call, "k"));
  KILN_RETURN_IF_ERROR(BoolAttr(call, "largest").status());
  KILN_RETURN_IF_ERROR(BoolAttr(call, "sorted").status());
  KILN_ASSIGN_OR_RETURN(DataType dtype, IndexDType(call));
  if (!k) return OpError(call, "attribute 'k' is required");
  if (*k < 0) return OpError(call, "k must be non-negative, got ", *k);
  if (!data->shape) {
    return TupleSInfo({TensorSInfoOfNdim(data->ndim, data->dtype, data->device),
                       TensorSInfoOfNdim(data->ndim, dtype, data->device)});
  }
  std::vector<PrimExpr> shape = *data->shape;
  PrimExpr& dim = shape[static_cast<size_t>(axis)];
  if (auto c = analyzer.Simplify(dim).as_int(); c && *c < *k) {
    return OpError(call, "k (", *k, ") is larger than dim ", axis, " (", *c, ")");
  }
  AssumeAtMost(call, Int(*k), dim, analyzer, absl::StrCat("k ({}) is larger than dim ", axis, " ({}) at run time"));
  dim = Int(*k);
  return TupleSInfo({TensorSInfo(shape, data->dtype, data->device), TensorSInfo(shape, dtype, data->device)});
}

}  // namespace

void RegisterSortOps(OpRegistry& registry) {
  registry.Register({"cumsum", 1, 1, true, {"axis", "exclusive", "reverse"}, InferCumsum});
  registry.Register({"sort", 1, 1, true, {"axis", "descending"}, InferSort});
  registry.Register({"argsort", 1, 1, true, {"axis", "descending", "dtype"}, InferArgsort});
  registry.Register({"topk", 1, 1, true, {"k", "axis", "largest", "sorted", "dtype"}, InferTopk});
}

}  // namespace kiln::relax::op
