// Data-movement kernels: reshape, permute_dims, broadcast_to, concat, split, strided_slice,
// take, shape_of. Elements are copied bit for bit. take rejects indices outside [0, dim)
// (negative ones included) rather than wrapping or clamping: the op's contract does not
// define them, so no expected value exists.
#include <algorithm>
#include <variant>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<RefValue> Reshape(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, call.Shape(1, "shape", /*allow_minus_one=*/true));
  int infer = -1;
  int64_t known = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == -1) {
      if (infer >= 0) return call.Error("more than one -1 in ", ShapeString(shape));
      infer = static_cast<int>(k);
    } else {
      known *= shape[k];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x->numel() % known != 0) {
      return call.Error("cannot infer -1 reshaping ", ShapeString(x->shape()), " to ", ShapeString(shape));
    }
    shape[static_cast<size_t>(infer)] = x->numel() / known;
  }
  if (NumElements(shape) != x->numel()) {
    return call.Error("cannot reshape ", ShapeString(x->shape()), " to ", ShapeString(shape));
  }
  return RefValue(HostTensor::FromBytes(x->dtype(), shape, x->bytes()));
}

absl::StatusOr<RefValue> PermuteDims(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axes"));
  std::vector<int> axes;
  if (axes_attr) {
    if (static_cast<int>(axes_attr->size()) != x->ndim()) {
      return call.Error("axes has ", axes_attr->size(), " entries for ", x->ndim(), " dims");
    }
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, axes_attr, x->ndim()));
  } else {
    for (int k = x->ndim() - 1; k >= 0; --k) axes.push_back(k);
  }
  std::vector<int64_t> shape;
  for (int a : axes) shape.push_back(x->shape()[static_cast<size_t>(a)]);
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape), in_index(shape.size());
    for (size_t k = 0; k < axes.size(); ++k) in_index[static_cast<size_t>(axes[k])] = index[k];
    out.CopyElement(i, *x, Ravel(in_index, x->shape()));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> BroadcastTo(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, call.Shape(1, "shape"));
  bool ok = x->shape().size() <= shape.size();
  for (size_t k = 0; ok && k < x->shape().size(); ++k) {
    int64_t d = x->shape()[k], t = shape[shape.size() - x->shape().size() + k];
    ok = d == 1 || d == t;
  }
  if (!ok) return call.Error("cannot broadcast ", ShapeString(x->shape()), " to ", ShapeString(shape));
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    out.CopyElement(i, *x, BroadcastIndex(Unravel(i, shape), x->shape()));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Concat(const KernelCall& call) {
  if (call.args.empty() || call.args[0].kind() != RefValue::Kind::kTuple) {
    return call.Error("expects a tuple of tensors");
  }
  const std::vector<RefValue>& fields = call.args[0].fields();
  if (fields.empty()) return call.Error("expects at least one tensor");
  for (const RefValue& f : fields) {
    if (!f.is_tensor()) return call.Error("tuple field is not a tensor: ", f.TypeString());
  }
  const HostTensor& first = fields[0].tensor();
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), first.ndim()));
  std::vector<int64_t> shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const RefValue& f : fields) {
    const HostTensor& t = f.tensor();
    bool ok = t.dtype() == first.dtype() && t.ndim() == first.ndim();
    for (int k = 0; ok && k < t.ndim(); ++k) {
      ok = k == axis || t.shape()[static_cast<size_t>(k)] == first.shape()[static_cast<size_t>(k)];
    }
    if (!ok) return call.Error("cannot concatenate ", first.TypeString(), " and ", t.TypeString());
    shape[static_cast<size_t>(axis)] += t.shape()[static_cast<size_t>(axis)];
  }
  HostTensor out(first.dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    for (const RefValue& f : fields) {
      const HostTensor& t = f.tensor();
      int64_t len = t.shape()[static_cast<size_t>(axis)];
      if (index[static_cast<size_t>(axis)] < len) {
        out.CopyElement(i, t, Ravel(index, t.shape()));
        break;
      }
      index[static_cast<size_t>(axis)] -= len;
    }
  }
  return RefValue(std::move(out));
}

// Elements [begin, begin + len * step) stepping `step` along `axis`.
HostTensor SliceAxis(const HostTensor& x, int axis, int64_t begin, int64_t len, int64_t step) {
  std::vector<int64_t> shape = x.shape();
  shape[static_cast<size_t>(axis)] = len;
  HostTensor out(x.dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    index[static_cast<size_t>(axis)] = begin + index[static_cast<size_t>(axis)] * step;
    out.CopyElement(i, x, Ravel(index, x.shape()));
  }
  return out;
}

absl::StatusOr<RefValue> Split(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), x->ndim()));
  int64_t dim = x->shape()[static_cast<size_t>(axis)];
  auto it = call.call.attrs.find("indices_or_sections");
  if (it == call.call.attrs.end()) return call.Error("attribute indices_or_sections is required");
  std::vector<int64_t> points;  // split points, clamped to [0, dim]
  if (const int64_t* sections = std::get_if<int64_t>(&it->second)) {
    if (*sections <= 0 || dim % *sections != 0) {
      return call.Error("dim ", dim, " does not split into ", *sections, " equal sections");
    }
    for (int64_t s = 1; s < *sections; ++s) points.push_back(s * (dim / *sections));
  } else if (const auto* indices = std::get_if<std::vector<int64_t>>(&it->second)) {
    for (int64_t p : *indices) points.push_back(std::clamp<int64_t>(p, 0, dim));
  } else {
    return call.Error("attribute indices_or_sections must be an int or an int list");
  }
  points.push_back(dim);
  std::vector<RefValue> parts;
  int64_t begin = 0;
  for (int64_t p : points) {
    int64_t len = std::max<int64_t>(p - begin, 0);
    parts.emplace_back(SliceAxis(*x, axis, std::min(begin, dim), len, 1));
    begin = std::max(begin, p);
  }
  return RefValue::Tuple(std::move(parts));
}

absl::StatusOr<RefValue> StridedSlice(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto begin, call.IntsAttr("begin"));
  KILN_ASSIGN_OR_RETURN(auto end, call.IntsAttr("end"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axes"));
  KILN_ASSIGN_OR_RETURN(auto strides, call.IntsAttr("strides"));
  if (!begin || !end) return call.Error("attributes begin and end are required");
  size_t n = begin->size();
  if (!axes_attr) {
    axes_attr = std::vector<int64_t>();
    for (size_t k = 0; k < n; ++k) axes_attr->push_back(static_cast<int64_t>(k));
  }
  if (!strides) strides = std::vector<int64_t>(n, 1);
  if (end->size() != n || axes_attr->size() != n || strides->size() != n) {
    return call.Error("begin, end, axes and strides must have the same length");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_attr, x->ndim()));
  HostTensor result = *x;
  for (size_t k = 0; k < n; ++k) {
    int64_t d = result.shape()[static_cast<size_t>(axes[k])];
    int64_t s = (*strides)[k], b = (*begin)[k], e = (*end)[k];
    if (s == 0) return call.Error("stride 0 on axis ", axes[k]);
    if (b < 0) b += d;
    if (e < 0) e += d;
    int64_t len;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      const uint64_t step = 0 - static_cast<uint64_t>(s);  // |s|, also for INT64_MIN
      len = b > e ? static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / step + 1) : 0;
    }
    result = SliceAxis(result, axes[k], b, len, s);
  }
  return RefValue(std::move(result));
}

absl::StatusOr<RefValue> Take(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* indices, call.Tensor(1, "indices"));
  if (!indices->dtype().is_integer()) {
    return call.Error("indices must have an integer dtype, got ", indices->dtype().ToString());
  }
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), x->ndim()));
  const auto ax = static_cast<size_t>(axis);
  std::vector<int64_t> shape(x->shape().begin(), x->shape().begin() + axis);
  shape.insert(shape.end(), indices->shape().begin(), indices->shape().end());
  shape.insert(shape.end(), x->shape().begin() + axis + 1, x->shape().end());
  HostTensor out(x->dtype(), shape);
  const size_t ni = indices->shape().size();
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    std::vector<int64_t> idx_index(index.begin() + axis, index.begin() + axis + static_cast<long>(ni));
    int64_t v = indices->GetInt(Ravel(idx_index, indices->shape()));
    if (v < 0 || v >= x->shape()[ax]) {
      return call.Error("index ", v, " is out of range [0, ", x->shape()[ax], ") on axis ", axis);
    }
    std::vector<int64_t> in_index(index.begin(), index.begin() + axis);
    in_index.push_back(v);
    in_index.insert(in_index.end(), index.begin() + axis + static_cast<long>(ni), index.end());
    out.CopyElement(i, *x, Ravel(in_index, x->shape()));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> ShapeOf(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  return RefValue::Shape(x->shape());
}

}  // namespace

void AddManipulateKernels(KernelTable& t) {
  t["reshape"] = Reshape;
  t["permute_dims"] = PermuteDims;
  t["broadcast_to"] = BroadcastTo;
  t["concat"] = Concat;
  t["split"] = Split;
  t["strided_slice"] = StridedSlice;
  t["take"] = Take;
  t["shape_of"] = ShapeOf;
}

}  // namespace kiln::reference
