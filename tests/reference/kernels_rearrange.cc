// Rearranging kernels: pad, tile, flip, trilu, squeeze, expand_dims. Elements are copied bit
// for bit. pad follows ONNX's reference: negative pads crop first, then np.pad pads; the
// reflect position is found by stepping back and forth over the dim, not by a formula, so
// that it checks the kernel's modular arithmetic independently.
#include <algorithm>
#include <string>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

// The source index in [0, n) of padded position p (p < 0 or p >= n pads) under `mode`;
// -1 for constant padding.
int64_t PadSource(int64_t p, int64_t n, const std::string& mode) {
  if (p >= 0 && p < n) return p;
  if (mode == "constant") return -1;
  if (mode == "edge") return p < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((p % n) + n) % n;
  if (n == 1) return 0;
  // reflect: walk from the nearest edge, bouncing off both ends without repeating them.
  int64_t i = p < 0 ? 0 : n - 1;
  int64_t dir = p < 0 ? 1 : -1;
  for (int64_t steps = p < 0 ? -p : p - (n - 1); steps > 0; --steps) {
    if (i + dir < 0 || i + dir >= n) dir = -dir;
    i += dir;
  }
  return i;
}

absl::StatusOr<RefValue> Pad(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto pads, call.IntsAttr("pads"));
  KILN_ASSIGN_OR_RETURN(auto value, call.FloatAttr("pad_value"));
  std::string mode = "constant";
  if (auto it = call.call.attrs.find("mode"); it != call.call.attrs.end()) mode = std::get<std::string>(it->second);
  const size_t ndim = x->shape().size();
  if (!pads || pads->size() != 2 * ndim) return call.Error("pads needs ", 2 * ndim, " entries");
  std::vector<int64_t> crop(ndim), cropped(ndim), begin(ndim), shape(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    const int64_t b = (*pads)[d], e = (*pads)[d + ndim];
    crop[d] = std::max<int64_t>(-b, 0);
    cropped[d] = x->shape()[d] - crop[d] - std::max<int64_t>(-e, 0);
    begin[d] = std::max<int64_t>(b, 0);
    shape[d] = cropped[d] + begin[d] + std::max<int64_t>(e, 0);
    if (cropped[d] < 0) return call.Error("pads crop dim ", d, " by more than its size");
    if (mode != "constant" && cropped[d] == 0 && shape[d] > 0) return call.Error("cannot pad an empty dim ", d);
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(shape));
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    bool fill = false;
    for (size_t d = 0; d < ndim; ++d) {
      const int64_t s = PadSource(index[d] - begin[d], cropped[d], mode);
      fill |= s < 0;
      index[d] = s + crop[d];
    }
    if (fill) {
      out.SetDouble(i, value.value_or(0.0));
    } else {
      out.CopyElement(i, *x, Ravel(index, x->shape()));
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Tile(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto repeats, call.IntsAttr("repeats"));
  if (!repeats) return call.Error("repeats is required");
  const size_t ndim = std::max(repeats->size(), x->shape().size());
  std::vector<int64_t> in_shape(ndim - x->shape().size(), 1);
  in_shape.insert(in_shape.end(), x->shape().begin(), x->shape().end());
  std::vector<int64_t> reps(ndim - repeats->size(), 1);
  reps.insert(reps.end(), repeats->begin(), repeats->end());
  std::vector<int64_t> shape(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    if (reps[d] < 0) return call.Error("negative repeat ", reps[d]);
    shape[d] = in_shape[d] * reps[d];
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(shape));
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    for (size_t d = 0; d < ndim; ++d) index[d] %= in_shape[d];
    out.CopyElement(i, *x, Ravel(index, in_shape));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Flip(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axis"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_attr, x->ndim()));
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, x->shape());
    for (int a : axes) index[static_cast<size_t>(a)] = x->shape()[static_cast<size_t>(a)] - 1 - index[static_cast<size_t>(a)];
    out.CopyElement(i, *x, Ravel(index, x->shape()));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Trilu(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto upper, call.BoolAttr("upper"));
  KILN_ASSIGN_OR_RETURN(auto k, call.IntAttr("k"));
  if (x->ndim() < 2) return call.Error("data needs 2 dims");
  HostTensor out(x->dtype(), x->shape());  // zero-filled
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, x->shape());
    const int64_t row = index[index.size() - 2], col = index.back();
    const bool keep = upper.value_or(true) ? col - row >= k.value_or(0) : col - row <= k.value_or(0);
    if (keep) out.CopyElement(i, *x, i);
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Squeeze(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axis"));
  std::vector<int64_t> shape;
  std::vector<bool> drop(x->shape().size(), false);
  if (axes_attr) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_attr, x->ndim()));
    for (int a : axes) {
      if (x->shape()[static_cast<size_t>(a)] != 1) return call.Error("cannot squeeze dim ", a, " of ", ShapeString(x->shape()));
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    // The dims that are the constant 1 in data's struct info (a symbolic dim that is 1 at
    // run time stays): the operator's contract is about the static shape.
    const auto* sinfo = call.call.args[0].struct_info().as<relax::TensorStructInfoNode>();
    if (sinfo == nullptr || !sinfo->shape) return call.Error("without axis, data's shape must be known");
    for (size_t d = 0; d < drop.size(); ++d) drop[d] = (*sinfo->shape)[d].as_int() == 1;
  }
  for (size_t d = 0; d < drop.size(); ++d) {
    if (!drop[d]) shape.push_back(x->shape()[d]);
  }
  return RefValue(HostTensor::FromBytes(x->dtype(), shape, x->bytes()));
}

absl::StatusOr<RefValue> ExpandDims(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axis"));
  if (!axes_attr) return call.Error("axis is required");
  const int ndim = x->ndim() + static_cast<int>(axes_attr->size());
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_attr, ndim));
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int d = 0; d < ndim; ++d) {
    shape.push_back(std::find(axes.begin(), axes.end(), d) != axes.end() ? 1 : x->shape()[next++]);
  }
  return RefValue(HostTensor::FromBytes(x->dtype(), shape, x->bytes()));
}

}  // namespace

void AddRearrangeKernels(KernelTable& t) {
  t["pad"] = Pad;
  t["tile"] = Tile;
  t["flip"] = Flip;
  t["trilu"] = Trilu;
  t["squeeze"] = Squeeze;
  t["expand_dims"] = ExpandDims;
}

}  // namespace kiln::reference
