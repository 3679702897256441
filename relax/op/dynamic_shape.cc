// Operators whose result shape is known only at run time, from data.
//
// tensor_to_shape (data: Tensor((r,), int64)) -> Shape(ndim = r): the shape whose dims are
//   data's values (each must be >= 0; checked when it runs). r must be a constant for the
//   result's ndim to be known (otherwise Shape of unknown ndim). data on a GPU is copied to
//   the host (the VM reads the shape there).
//   A match_cast of the result to Shape([a, b, ...]) with fresh symbolic variables defines
//   those variables at run time: that is how a data-dependent shape enters the symbolic
//   world (see dynamic_strided_slice's legalization, docs/ir.md).
// dynamic_strided_slice (data, begin, end, strides), attribute axes (int list; absent: the
//   first len(begin) axes). ONNX Slice with run-time positions: begin, end and strides are
//   1-d integer tensors of one constant length (the number of sliced axes, at most
//   data.ndim). Per sliced axis of dim d: a negative begin or end adds d; then a positive
//   stride clamps begin and end to [0, d], a negative one begin to [0, d - 1] and end to
//   [-1, d - 1]; the length is max(ceil((end - begin) / stride), 0). A stride of 0 is a
//   run-time error. The result has data's ndim and dtype and a shape known only at run time
//   (struct info Tensor(ndim = data.ndim)); match_cast it to name its dims.
// check_slice_strides (strides: 1-d integer Tensor), attribute axes (int list, required: the
//   data axis each entry slices). At run time: fails with "dynamic_strided_slice: the stride
//   of axis A (strides[i]) is 0" when an entry is 0, reading strides on the host (copied
//   there from a GPU). Returns Object (nothing). dynamic_strided_slice's legalization emits
//   it before its kernels (no kernel then reads strides in host code, which a GPU function
//   could not). Pure and kept_when_unused, like check_dims (relax/op/check_dims.cc).
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> InferTensorToShape(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  if (data->dtype && *data->dtype != DataType::Int64()) {
    return OpError(call, "data must be int64, got ", data->dtype->ToString());
  }
  if (data->ndim != kUnknownNdim && data->ndim != 1) return OpError(call, "data must be 1-d, got ndim ", data->ndim);
  if (!data->shape) return ShapeSInfoOfNdim(kUnknownNdim);
  auto r = (*data->shape)[0].as_int();
  return ShapeSInfoOfNdim(r ? static_cast<int>(*r) : kUnknownNdim);
}

absl::StatusOr<StructInfo> InferDynamicStridedSlice(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes, IntsAttr(call, "axes"));
  std::optional<int64_t> count;
  const char* names[] = {"begin", "end", "strides"};
  for (size_t i = 1; i <= 3; ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, TensorArg(call, i, names[i - 1]));
    if (t->dtype && !t->dtype->is_integer()) {
      return OpError(call, names[i - 1], " must have an integer dtype, got ", t->dtype->ToString());
    }
    if (t->ndim != kUnknownNdim && t->ndim != 1) return OpError(call, names[i - 1], " must be 1-d, got ndim ", t->ndim);
    if (!t->shape) return OpError(call, "the length of ", names[i - 1], " must be known");
    auto c = (*t->shape)[0].as_int();
    if (!c) return OpError(call, "the length of ", names[i - 1], " (", DimStr((*t->shape)[0]), ") must be a constant");
    if (count && *c != *count) {
      return OpError(call, "begin, end and strides must have one length, got ", *count, " and ", *c);
    }
    count = c;
  }
  if (axes && static_cast<int64_t>(axes->size()) != *count) {
    return OpError(call, "axes has ", axes->size(), " entries but begin has ", *count);
  }
  if (data->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  if (*count > data->ndim) return OpError(call, "slices ", *count, " axes of a tensor of ndim ", data->ndim);
  if (axes) KILN_RETURN_IF_ERROR(NormalizeAxes(call, *axes, data->ndim).status());
  if (data->ndim == 0) return OpError(call, "data must have at least 1 dimension");
  return TensorSInfoOfNdim(data->ndim, data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferCheckSliceStrides(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* strides, TensorArg(call, 0, "strides"));
  if (strides->dtype && !strides->dtype->is_integer()) {
    return OpError(call, "strides must have an integer dtype, got ", strides->dtype->ToString());
  }
  if (strides->ndim != kUnknownNdim && strides->ndim != 1) return OpError(call, "strides must be 1-d, got ndim ", strides->ndim);
  KILN_ASSIGN_OR_RETURN(auto axes, IntsAttr(call, "axes"));
  if (!axes) return OpError(call, "attribute 'axes' is required");
  return ObjectSInfo();
}

}  // namespace

void RegisterDynamicShapeOps(OpRegistry& registry) {
  registry.Register({"tensor_to_shape", 1, 1, true, {}, InferTensorToShape});
  registry.Register({"dynamic_strided_slice", 4, 4, true, {"axes"}, InferDynamicStridedSlice});
  OpInfo check{"check_slice_strides", 1, 1, true, {"axes"}, InferCheckSliceStrides};
  check.kept_when_unused = true;
  registry.Register(std::move(check));
}

}  // namespace kiln::relax::op
