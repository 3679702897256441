// Operators that rearrange a tensor's elements by position alone (no index tensors):
// pad, tile, flip, trilu, squeeze, expand_dims. Results keep the data's dtype and device.
//
// pad (data), attributes pads (int list, required: 2 * ndim entries in ONNX's order
//   [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}]), mode ("constant", the default,
//   "reflect", "edge" or "wrap") and pad_value (float, default 0; constant mode). A dim d
//   becomes d + begin + end (a negative result is an error, or a run-time check). Negative
//   pads crop first, as ONNX's reference does: the data is sliced by the negative amounts,
//   then padded by the positive ones. reflect mirrors about the edge elements without
//   repeating them (np.pad "reflect", repeated for pads longer than the dim), edge repeats
//   them, wrap continues periodically. reflect, edge and wrap need a non-empty (cropped)
//   dim where they pad (a constant zero is an error, a symbolic one a run-time check).
// tile (data), attribute repeats (int list of non-negative ints, required). np.tile: a
//   shorter list is padded with leading 1s, a longer one gives data leading dims of 1; dim
//   d of the result is d * repeats[d].
// flip (data), attribute axis (int list; absent: every axis). Reverses the order of the
//   elements along each listed axis (np.flip).
// trilu (data), attributes upper (bool, default true) and k (int, default 0). ONNX Trilu
//   on the last two dims (data.ndim >= 2): upper keeps element (i, j) where j - i >= k
//   (np.triu), lower keeps it where j - i <= k (np.tril); the others become 0.
// squeeze (data), attribute axis (int list; absent: every dim that is the constant 1).
//   Removes the listed dims, which must be 1 (a constant other than 1 is an error, a
//   symbolic dim is checked at run time).
// expand_dims (data), attribute axis (int list, required): positions of new dims of size 1
//   in the result (of ndim data.ndim + len(axis); negative count from its end; no repeats).
//   ONNX Unsqueeze.
#include <algorithm>
#include <string>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<std::string> PadMode(const CallNode& call) {
  auto it = call.attrs.find("mode");
  if (it == call.attrs.end()) return std::string("constant");
  const auto* mode = std::get_if<std::string>(&it->second);
  if (mode == nullptr || (*mode != "constant" && *mode != "reflect" && *mode != "edge" && *mode != "wrap")) {
    return OpError(call, "attribute mode must be \"constant\", \"reflect\", \"edge\" or \"wrap\"");
  }
  return *mode;
}

absl::StatusOr<StructInfo> InferPad(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto pads, IntsAttr(call, "pads"));
  KILN_ASSIGN_OR_RETURN(std::string mode, PadMode(call));
  KILN_RETURN_IF_ERROR(FloatAttr(call, "pad_value").status());
  if (!pads) return OpError(call, "attribute 'pads' is required");
  if (pads->size() % 2 != 0) return OpError(call, "pads must have an even number of entries, got ", pads->size());
  const int ndim = static_cast<int>(pads->size() / 2);
  if (data->ndim != kUnknownNdim && data->ndim != ndim) {
    return OpError(call, "pads has ", pads->size(), " entries for a tensor of ndim ", data->ndim, " (needs ",
                   2 * data->ndim, ")");
  }
  if (!data->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  std::vector<PrimExpr> out;
  for (int d = 0; d < ndim; ++d) {
    const int64_t begin = (*pads)[static_cast<size_t>(d)];
    const int64_t end = (*pads)[static_cast<size_t>(d + ndim)];
    const PrimExpr dim = analyzer.Simplify((*data->shape)[static_cast<size_t>(d)]);
    const PrimExpr cropped = analyzer.Simplify(AddConst(dim, std::min<int64_t>(begin, 0) + std::min<int64_t>(end, 0)));
    const PrimExpr size = analyzer.Simplify(AddConst(dim, begin + end));
    if (auto c = size.as_int(); c && *c < 0) {
      return OpError(call, "pads crop dim ", d, " (", DimStr(dim), ") to a negative size (", *c, ")");
    }
    if (auto c = cropped.as_int(); c && *c < 0) {
      return OpError(call, "pads crop dim ", d, " (", DimStr(dim), ") by more than its size");
    }
    if (!cropped.as_int()) {
      AssumeAtMost(call, Int(std::max<int64_t>(0, -std::min<int64_t>(begin, 0) - std::min<int64_t>(end, 0))), dim,
                   analyzer, absl::StrCat("pads crop {} elements from dim ", d, ", which has {}"));
    }
    const bool pads_here = begin > 0 || end > 0;
    if (mode != "constant" && pads_here) {
      if (auto c = cropped.as_int(); c && *c == 0) {
        return OpError(call, "mode \"", mode, "\" cannot pad dim ", d, ", which is empty");
      }
      if (!cropped.as_int()) {
        AssumeAtMost(call, Int(1), cropped, analyzer,
                     absl::StrCat("mode \"", mode, "\" needs at least {} element in dim ", d, " to pad from, it has {}"));
      }
    }
    out.push_back(size);
  }
  return TensorSInfo(std::move(out), data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferTile(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto repeats, IntsAttr(call, "repeats"));
  if (!repeats) return OpError(call, "attribute 'repeats' is required");
  for (int64_t r : *repeats) {
    if (r < 0) return OpError(call, "repeats must be non-negative, got ", r);
  }
  if (data->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  const size_t ndim = std::max<size_t>(repeats->size(), static_cast<size_t>(data->ndim));
  if (!data->shape) return TensorSInfoOfNdim(static_cast<int>(ndim), data->dtype, data->device);
  std::vector<PrimExpr> dims(ndim - data->shape->size(), Int(1));
  dims.insert(dims.end(), data->shape->begin(), data->shape->end());
  std::vector<int64_t> reps(ndim - repeats->size(), 1);
  reps.insert(reps.end(), repeats->begin(), repeats->end());
  for (size_t d = 0; d < ndim; ++d) dims[d] = analyzer.Simplify(dims[d] * Int(reps[d]));
  return TensorSInfo(std::move(dims), data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferFlip(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes, IntsAttr(call, "axis"));
  if (axes && data->ndim != kUnknownNdim) KILN_RETURN_IF_ERROR(NormalizeAxes(call, *axes, data->ndim).status());
  return call.args[0].struct_info();
}

absl::StatusOr<StructInfo> InferTrilu(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_RETURN_IF_ERROR(BoolAttr(call, "upper").status());
  KILN_RETURN_IF_ERROR(IntAttr(call, "k").status());
  if (data->ndim != kUnknownNdim && data->ndim < 2) {
    return OpError(call, "data must have at least 2 dimensions, got ", data->ndim);
  }
  return call.args[0].struct_info();
}

absl::StatusOr<StructInfo> InferSqueeze(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, IntsAttr(call, "axis"));
  if (data->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  std::vector<int> axes;
  if (axes_attr) {
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, *axes_attr, data->ndim));
    if (!data->shape) return TensorSInfoOfNdim(data->ndim - static_cast<int>(axes.size()), data->dtype, data->device);
    for (int a : axes) {
      const PrimExpr dim = analyzer.Simplify((*data->shape)[static_cast<size_t>(a)]);
      if (auto c = dim.as_int(); c && *c != 1) return OpError(call, "cannot squeeze dim ", a, " of size ", *c);
      if (!dim.as_int()) {
        AssumeEqual(call, dim, Int(1), analyzer, absl::StrCat("cannot squeeze dim ", a, ": it is {} at run time, not {}"));
      }
    }
  } else {
    if (!data->shape) return OpError(call, "without 'axis', data's shape must be known");
    for (int d = 0; d < data->ndim; ++d) {
      if (analyzer.Simplify((*data->shape)[static_cast<size_t>(d)]).as_int() == 1) axes.push_back(d);
    }
  }
  std::vector<PrimExpr> out;
  for (int d = 0; d < data->ndim; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back((*data->shape)[static_cast<size_t>(d)]);
  }
  return TensorSInfo(std::move(out), data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferExpandDims(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, IntsAttr(call, "axis"));
  if (!axes_attr) return OpError(call, "attribute 'axis' is required");
  if (data->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  const int ndim = data->ndim + static_cast<int>(axes_attr->size());
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, *axes_attr, ndim));
  if (!data->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  std::vector<PrimExpr> out;
  size_t next = 0;
  for (int d = 0; d < ndim; ++d) {
    out.push_back(std::find(axes.begin(), axes.end(), d) != axes.end() ? Int(1) : (*data->shape)[next++]);
  }
  return TensorSInfo(std::move(out), data->dtype, data->device);
}

}  // namespace

void RegisterRearrangeOps(OpRegistry& registry) {
  registry.Register({"pad", 1, 1, true, {"pads", "mode", "pad_value"}, InferPad});
  registry.Register({"tile", 1, 1, true, {"repeats"}, InferTile});
  registry.Register({"flip", 1, 1, true, {"axis"}, InferFlip});
  registry.Register({"trilu", 1, 1, true, {"upper", "k"}, InferTrilu});
  registry.Register({"squeeze", 1, 1, true, {"axis"}, InferSqueeze});
  registry.Register({"expand_dims", 1, 1, true, {"axis"}, InferExpandDims});
}

}  // namespace kiln::relax::op
