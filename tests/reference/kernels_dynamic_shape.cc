// Kernels of the operators whose result shape comes from data: tensor_to_shape and
// dynamic_strided_slice. The slice follows ONNX's Slice as written in its specification
// (clamping per stride sign), computed position by position with int64 arithmetic.
#include <algorithm>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<RefValue> TensorToShape(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* t, call.Tensor(0, "data"));
  if (t->ndim() != 1 || t->dtype() != DataType::Int64()) return call.Error("data must be a 1-d int64 tensor");
  std::vector<int64_t> dims = t->ToInts();
  for (int64_t d : dims) {
    if (d < 0) return call.Error("negative dim ", d);
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(dims));
  return RefValue::Shape(dims);
}

absl::StatusOr<RefValue> DynamicStridedSlice(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* begin, call.Tensor(1, "begin"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* end, call.Tensor(2, "end"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* strides, call.Tensor(3, "strides"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axes"));
  const int64_t count = begin->numel();
  if (end->numel() != count || strides->numel() != count || count > x->ndim()) {
    return call.Error("begin, end and strides must have one length of at most ", x->ndim());
  }
  std::vector<int64_t> raw;
  for (int64_t i = 0; i < count; ++i) raw.push_back(axes_attr ? (*axes_attr)[static_cast<size_t>(i)] : i);
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, raw, x->ndim()));
  std::vector<int64_t> start(x->shape().size(), 0), step(x->shape().size(), 1), shape = x->shape();
  for (int64_t i = 0; i < count; ++i) {
    const auto a = static_cast<size_t>(axes[static_cast<size_t>(i)]);
    const int64_t d = x->shape()[a];
    int64_t b = begin->GetInt(i), e = end->GetInt(i);
    const int64_t s = strides->GetInt(i);
    if (s == 0) return call.Error("the stride of axis ", a, " (strides[", i, "]) is 0");
    if (b < 0) b += d;
    if (e < 0) e += d;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    int64_t len = 0;
    for (int64_t p = b; s > 0 ? p < e : p > e; p += s) ++len;
    start[a] = b;
    step[a] = s;
    shape[a] = len;
  }
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    for (size_t a = 0; a < index.size(); ++a) index[a] = start[a] + index[a] * step[a];
    out.CopyElement(i, *x, Ravel(index, x->shape()));
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddDynamicShapeKernels(KernelTable& t) {
  t["tensor_to_shape"] = TensorToShape;
  t["dynamic_strided_slice"] = DynamicStridedSlice;
}

}  // namespace kiln::reference
