// Indexing kernels: gather_elements, gather_nd, scatter_elements, scatter_nd, one_hot.
// Elements move bit for bit; scatter reductions compute in double (int64 for integers).
// An index outside [-dim, dim) is an error naming it; negative ones count from the end.
#include <cmath>
#include <functional>
#include <string>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<const HostTensor*> Indices(const KernelCall& call, size_t i) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* t, call.Tensor(i, "indices"));
  if (!t->dtype().is_integer()) return call.Error("indices must have an integer dtype, got ", t->dtype().ToString());
  return t;
}

// indices[at] as a position in [0, dim).
absl::StatusOr<int64_t> Position(const KernelCall& call, const HostTensor& indices, int64_t at, int64_t dim,
                                 int axis) {
  int64_t v = indices.GetInt(at);
  if (v < -dim || v >= dim) return call.Error("index ", v, " is out of range [", -dim, ", ", dim, ") on axis ", axis);
  return v < 0 ? v + dim : v;
}

absl::StatusOr<RefValue> GatherElements(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* indices, Indices(call, 1));
  if (x->ndim() != indices->ndim() || x->ndim() == 0) return call.Error("data and indices need the same ndim >= 1");
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), x->ndim()));
  for (int d = 0; d < x->ndim(); ++d) {
    if (d != axis && indices->shape()[d] > x->shape()[d]) return call.Error("indices dim ", d, " exceeds data's");
  }
  HostTensor out(x->dtype(), indices->shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, indices->shape());
    KILN_ASSIGN_OR_RETURN(index[static_cast<size_t>(axis)],
                          Position(call, *indices, i, x->shape()[static_cast<size_t>(axis)], axis));
    out.CopyElement(i, *x, Ravel(index, x->shape()));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> GatherNd(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* indices, Indices(call, 1));
  KILN_ASSIGN_OR_RETURN(auto batch_attr, call.IntAttr("batch_dims"));
  const int64_t b = batch_attr.value_or(0);
  const int64_t q = indices->ndim();
  if (q < 1 || b < 0 || b >= q || b >= x->ndim()) return call.Error("bad batch_dims ", b);
  const int64_t k = indices->shape().back();
  if (k < 1 || b + k > x->ndim()) return call.Error("the last dim of indices (", k, ") does not fit data");
  for (int64_t d = 0; d < b; ++d) {
    if (x->shape()[d] != indices->shape()[d]) return call.Error("batch dim ", d, " differs");
  }
  std::vector<int64_t> shape(indices->shape().begin(), indices->shape().end() - 1);
  shape.insert(shape.end(), x->shape().begin() + b + k, x->shape().end());
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> o = Unravel(i, shape);
    std::vector<int64_t> index(o.begin(), o.begin() + b);
    std::vector<int64_t> at(o.begin(), o.begin() + (q - 1));
    at.push_back(0);
    for (int64_t j = 0; j < k; ++j) {
      at.back() = j;
      KILN_ASSIGN_OR_RETURN(int64_t pos, Position(call, *indices, Ravel(at, indices->shape()),
                                                  x->shape()[static_cast<size_t>(b + j)], static_cast<int>(b + j)));
      index.push_back(pos);
    }
    index.insert(index.end(), o.begin() + (q - 1), o.end());
    out.CopyElement(i, *x, Ravel(index, x->shape()));
  }
  return RefValue(std::move(out));
}

// out[at] = combine(out[at], updates[u]) under the reduction attribute.
absl::StatusOr<std::function<void(HostTensor&, int64_t, const HostTensor&, int64_t)>> Combiner(
    const KernelCall& call) {
  std::string name = "none";
  auto it = call.call.attrs.find("reduction");
  if (it != call.call.attrs.end()) {
    const auto* s = std::get_if<std::string>(&it->second);
    if (s == nullptr) return call.Error("reduction must be a string");
    name = *s;
  }
  if (name == "none") {
    return [](HostTensor& out, int64_t at, const HostTensor& u, int64_t i) { out.CopyElement(at, u, i); };
  }
  int kind = name == "add" ? 0 : name == "mul" ? 1 : name == "max" ? 2 : name == "min" ? 3 : -1;
  if (kind < 0) return call.Error("unknown reduction \"", name, "\"");
  return [kind](HostTensor& out, int64_t at, const HostTensor& u, int64_t i) {
    if (ComputesInInt(out.dtype())) {
      int64_t a = out.GetInt(at), b = u.GetInt(i);
      out.SetInt(at, kind == 0 ? a + b : kind == 1 ? a * b : kind == 2 ? std::max(a, b) : std::min(a, b));
    } else {
      double a = out.GetDouble(at), b = u.GetDouble(i);
      out.SetDouble(at, kind == 0 ? a + b : kind == 1 ? a * b : kind == 2 ? NanMax(a, b) : NanMin(a, b));
    }
  };
}

absl::StatusOr<RefValue> ScatterElements(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* indices, Indices(call, 1));
  KILN_ASSIGN_OR_RETURN(const HostTensor* updates, call.Tensor(2, "updates"));
  KILN_ASSIGN_OR_RETURN(auto combine, Combiner(call));
  if (updates->dtype() != x->dtype()) return call.Error("updates and data differ in dtype");
  if (indices->shape() != updates->shape() || indices->ndim() != x->ndim() || x->ndim() == 0) {
    return call.Error("indices ", ShapeString(indices->shape()), " and updates ", ShapeString(updates->shape()),
                      " must have one shape, of data's ndim");
  }
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), x->ndim()));
  for (int d = 0; d < x->ndim(); ++d) {
    if (d != axis && indices->shape()[d] > x->shape()[d]) return call.Error("indices dim ", d, " exceeds data's");
  }
  HostTensor out = *x;
  for (int64_t i = 0; i < updates->numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, updates->shape());
    KILN_ASSIGN_OR_RETURN(index[static_cast<size_t>(axis)],
                          Position(call, *indices, i, x->shape()[static_cast<size_t>(axis)], axis));
    combine(out, Ravel(index, x->shape()), *updates, i);
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> ScatterNd(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* indices, Indices(call, 1));
  KILN_ASSIGN_OR_RETURN(const HostTensor* updates, call.Tensor(2, "updates"));
  KILN_ASSIGN_OR_RETURN(auto combine, Combiner(call));
  if (updates->dtype() != x->dtype()) return call.Error("updates and data differ in dtype");
  const int64_t q = indices->ndim();
  if (q < 1) return call.Error("indices must have at least 1 dimension");
  const int64_t k = indices->shape().back();
  if (k < 1 || k > x->ndim()) return call.Error("the last dim of indices (", k, ") does not fit data");
  std::vector<int64_t> expect(indices->shape().begin(), indices->shape().end() - 1);
  expect.insert(expect.end(), x->shape().begin() + k, x->shape().end());
  if (updates->shape() != expect) {
    return call.Error("updates ", ShapeString(updates->shape()), " should be ", ShapeString(expect));
  }
  HostTensor out = *x;
  for (int64_t i = 0; i < updates->numel(); ++i) {
    std::vector<int64_t> u = Unravel(i, updates->shape());
    std::vector<int64_t> from(u.begin(), u.begin() + (q - 1));
    from.push_back(0);
    std::vector<int64_t> index;
    for (int64_t j = 0; j < k; ++j) {
      from.back() = j;
      KILN_ASSIGN_OR_RETURN(int64_t pos, Position(call, *indices, Ravel(from, indices->shape()),
                                                  x->shape()[static_cast<size_t>(j)], static_cast<int>(j)));
      index.push_back(pos);
    }
    index.insert(index.end(), u.begin() + (q - 1), u.end());
    combine(out, Ravel(index, x->shape()), *updates, i);
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> OneHot(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* indices, Indices(call, 0));
  KILN_ASSIGN_OR_RETURN(auto depth, call.IntAttr("depth"));
  KILN_ASSIGN_OR_RETURN(auto on, call.FloatAttr("on_value"));
  KILN_ASSIGN_OR_RETURN(auto off, call.FloatAttr("off_value"));
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  if (!depth || *depth <= 0) return call.Error("depth must be given and positive");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(-1), indices->ndim() + 1));
  std::vector<int64_t> shape = indices->shape();
  shape.insert(shape.begin() + axis, *depth);
  KILN_RETURN_IF_ERROR(call.CheckElementCount(shape));
  HostTensor out(dtype.value_or(DataType::Float32()), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> o = Unravel(i, shape);
    const int64_t pos = o[static_cast<size_t>(axis)];
    o.erase(o.begin() + axis);
    int64_t v = indices->GetInt(Ravel(o, indices->shape()));
    if (v < 0) v += *depth;
    out.SetDouble(i, v == pos ? on.value_or(1.0) : off.value_or(0.0));
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddIndexingKernels(KernelTable& t) {
  t["gather_elements"] = GatherElements;
  t["gather_nd"] = GatherNd;
  t["scatter_elements"] = ScatterElements;
  t["scatter_nd"] = ScatterNd;
  t["one_hot"] = OneHot;
}

}  // namespace kiln::reference
