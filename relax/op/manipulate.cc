// Tensor manipulation operators. Results keep the data's dtype and device.
//
// reshape (data, shape: Shape). At most one -1 in `shape`; it is inferred symbolically from
//   the element counts: both counts are factored into a constant times symbolic factors, the
//   common factors cancel, and the -1 dim is the quotient ((n, 4, 8) -> (-1, 32) gives
//   (n, 32)); when the factors do not cancel it is floordiv(numel(data), numel(rest)). A
//   count mismatch that is certain after cancellation (symbolic dims taken as non-zero) is an
//   error, as is a constant count that -1 cannot divide. Other negative dims are errors. A
//   count equality (or, with -1, a divisibility) that inference cannot prove is checked at
//   run time before the function's first kernel (assumed_relations.h).
// permute_dims (data), attribute axes (int list; absent: reverse the dims). axes must be a
//   permutation of the dims.
// broadcast_to (data, shape: Shape). Dims are aligned from the right; each data dim must be
//   1 or equal the target dim (provably different -> error). The result shape is `shape`.
// concat (Tuple of tensors), attribute axis (default 0). Fields share ndim and dtype; dims
//   off the axis must match (provably different -> error, result takes the first field's);
//   the dim along the axis is the simplified sum.
// split (data), attributes indices_or_sections (required: an int N = N equal sections, or
//   an int list of increasing split points) and axis (default 0). Returns a Tuple.
//   Sections: each part has floordiv(dim, N) (a constant dim must divide evenly; a symbolic
//   one is checked at run time, before the function's first kernel: assumed_relations.h). Indices [i1, ..., ik]: parts [0, i1), [i1, i2), ...,
//   [ik, dim); with a constant dim the points clamp to [0, dim] (numpy), with a symbolic dim
//   they are taken to be <= dim (checked at run time).
// strided_slice (data), attributes begin, end (int lists, required), axes (int list,
//   default 0..len(begin)-1), strides (int list, default all 1; 0 is an error). numpy
//   slicing per listed axis with dim d: a negative begin/end adds d, then positive strides
//   clamp begin/end to [0, d] and negative strides to [-1, d - 1]; the length is
//   max(ceil((end - begin) / stride), 0). With a symbolic d, |begin| or |end| >= 2^31 means
//   "past that end" (end = 2^63 - 1 slices to the end, end = -2^63 with a negative stride
//   to the start), other clamps appear as min/max in the result, simplified where the
//   analyzer can.
// take (data, indices), attribute axis (default 0). indices has an integer dtype; the
//   result shape is data.shape[:axis] + indices.shape + data.shape[axis + 1:].
#include <algorithm>
#include <limits>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

// A product `constant * factors[0] * factors[1] ...` of shape dims.
struct Product {
  int64_t constant = 1;
  std::vector<PrimExpr> factors;
  bool overflow = false;  // the constant part does not fit in int64
};

void Factor(const PrimExpr& e, Product& p) {
  if (auto c = e.as_int()) {
    p.overflow |= __builtin_mul_overflow(p.constant, *c, &p.constant);
  } else if (e.kind() == tir::ExprKind::kMul) {
    const auto* mul = e.as<tir::BinaryNode>();
    Factor(mul->a, p);
    Factor(mul->b, p);
  } else {
    p.factors.push_back(e);
  }
}

Product FactorDims(const std::vector<PrimExpr>& dims, tir::Analyzer& analyzer) {
  Product p;
  for (const PrimExpr& d : dims) Factor(analyzer.Simplify(d), p);
  return p;
}

PrimExpr ProductExpr(const Product& p) {
  PrimExpr out;
  for (const PrimExpr& f : p.factors) out = out.defined() ? out * f : f;
  if (!out.defined()) return Int(p.constant);
  return p.constant == 1 ? out : out * p.constant;
}

// Removes from `a` and `b` the symbolic factors they share.
void Cancel(Product& a, Product& b, tir::Analyzer& analyzer) {
  for (auto bi = b.factors.begin(); bi != b.factors.end();) {
    auto ai = std::find_if(a.factors.begin(), a.factors.end(), [&](const PrimExpr& f) {
      return f.same_as(*bi) || DimsEqual(f, *bi, analyzer);
    });
    if (ai != a.factors.end()) {
      a.factors.erase(ai);
      bi = b.factors.erase(bi);
    } else {
      ++bi;
    }
  }
}

absl::StatusOr<StructInfo> InferReshape(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ShapeStructInfoNode* target, ShapeArg(call, 1, "shape"));
  if (!target->values) return TensorSInfoOfNdim(target->ndim, data->dtype, data->device);
  std::vector<PrimExpr> dims = SimplifyDims(*target->values, analyzer);
  int infer_axis = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    auto c = dims[i].as_int();
    if (!c || *c >= 0) continue;
    if (*c != -1) return OpError(call, "new shape dim ", i, " is negative (", *c, ")");
    if (infer_axis >= 0) {
      return OpError(call, "at most one -1 in the new shape, got dims ", infer_axis, " and ", i);
    }
    infer_axis = static_cast<int>(i);
  }
  if (!data->shape) {
    if (infer_axis >= 0) {
      return TensorSInfoOfNdim(static_cast<int>(dims.size()), data->dtype, data->device);
    }
    return TensorSInfo(dims, data->dtype, data->device);
  }
  std::vector<PrimExpr> known;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<int>(i) != infer_axis) known.push_back(dims[i]);
  }
  Product in = FactorDims(*data->shape, analyzer);
  Product out = FactorDims(known, analyzer);
  if (in.overflow || out.overflow) {
    return OpError(call, "the element count of ", in.overflow ? DimsStr(*data->shape) : DimsStr(dims),
                   " does not fit in int64");
  }
  const std::string in_numel = DimStr(analyzer.Simplify(ProductExpr(in)));
  Cancel(in, out, analyzer);
  auto mismatch = [&]() {
    return OpError(call, "cannot reshape ", DimsStr(*data->shape), " (", in_numel,
                   " elements) into ", DimsStr(*target->values));
  };
  // Run-time checks compare the full counts (the message shows the user's numbers).
  const PrimExpr in_count = ProductExpr(FactorDims(*data->shape, analyzer));
  const PrimExpr out_count = ProductExpr(FactorDims(known, analyzer));
  if (infer_axis < 0) {
    if (in.factors.empty() && out.factors.empty() && in.constant != out.constant) return mismatch();
    if (DimsDiffer(ProductExpr(in), ProductExpr(out), analyzer)) return mismatch();
    AssumeEqual(call, in_count, out_count, analyzer,
                absl::StrCat("element counts differ at run time: data ", DimsStr(*data->shape), " has {} elements, ",
                             "the new shape ", DimsStr(dims), " has {}"));
    return TensorSInfo(dims, data->dtype, data->device);
  }
  PrimExpr inferred;
  if (out.factors.empty() && out.constant != 0 && in.constant % out.constant == 0) {
    Product q{in.constant / out.constant, in.factors};
    inferred = ProductExpr(q);
  } else if (out.constant == 0) {
    return OpError(call, "cannot infer the -1 dim when the other dims have zero elements");
  } else if (out.factors.empty() && in.factors.empty()) {
    return mismatch();
  } else {
    // A remainder the analyzer can compute (2 * n + 1 into pairs) never divides: refuse now
    // rather than at every run.
    if (out.factors.empty()) {
      const PrimExpr rest = analyzer.Simplify(tir::FloorMod(ProductExpr(in), Int(out.constant)));
      if (const auto* constant = rest.as<tir::IntImmNode>(); constant != nullptr && constant->value != 0) {
        return OpError(call, "cannot infer the -1 dim: data ", DimsStr(*data->shape), " has ", in_numel,
                       " elements, which leave remainder ", constant->value, " when divided by the other dims of ",
                       DimsStr(dims), " (", out.constant, " elements) for every value of its symbols");
      }
    }
    inferred = FloorDivDim(ProductExpr(in), ProductExpr(out), analyzer);
    AssumeDivisible(call, in_count, out_count, analyzer,
                    absl::StrCat("cannot infer the -1 dim at run time: data ", DimsStr(*data->shape), " has {} elements, ",
                                 "which the other dims of ", DimsStr(dims), " ({} elements) do not divide"));
  }
  dims[static_cast<size_t>(infer_axis)] = analyzer.Simplify(inferred);
  return TensorSInfo(dims, data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferPermuteDims(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, IntsAttr(call, "axes"));
  int ndim = data->ndim;
  if (ndim == kUnknownNdim) {
    return TensorSInfoOfNdim(axes_attr ? static_cast<int>(axes_attr->size()) : kUnknownNdim,
                             data->dtype, data->device);
  }
  std::vector<int> axes;
  if (axes_attr) {
    if (static_cast<int>(axes_attr->size()) != ndim) {
      return OpError(call, "axes has ", axes_attr->size(), " entries for a tensor of ndim ", ndim);
    }
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, *axes_attr, ndim));
  } else {
    for (int i = ndim - 1; i >= 0; --i) axes.push_back(i);
  }
  if (!data->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  std::vector<PrimExpr> out;
  for (int a : axes) out.push_back((*data->shape)[static_cast<size_t>(a)]);
  return TensorSInfo(out, data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferBroadcastTo(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ShapeStructInfoNode* target, ShapeArg(call, 1, "shape"));
  if (data->ndim != kUnknownNdim && target->ndim != kUnknownNdim && data->ndim > target->ndim) {
    return OpError(call, "cannot broadcast a tensor of ndim ", data->ndim, " to ndim ",
                   target->ndim);
  }
  if (!target->values) return TensorSInfoOfNdim(target->ndim, data->dtype, data->device);
  std::vector<PrimExpr> dims = SimplifyDims(*target->values, analyzer);
  if (data->shape) {
    const size_t offset = dims.size() - data->shape->size();
    for (size_t i = 0; i < data->shape->size(); ++i) {
      PrimExpr d = analyzer.Simplify((*data->shape)[i]);
      const PrimExpr& t = dims[offset + i];
      if (d.as_int() == 1 || DimsEqual(d, t, analyzer)) continue;
      if (DimsDiffer(d, t, analyzer)) {
        return OpError(call, "cannot broadcast dim ", i, " (", DimStr(d), ") to target dim ",
                       offset + i, " (", DimStr(t), ")");
      }
      AssumeEqual(call, d, t, analyzer,
                  absl::StrCat("cannot broadcast at run time: data dim ", i, " is {}, target dim ", offset + i,
                               " is {} (a symbolic dim broadcasts only when equal)"));
    }
  }
  return TensorSInfo(dims, data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferConcat(const CallNode& call, tir::Analyzer& analyzer) {
  const auto* tuple = call.args[0].struct_info().as<TupleStructInfoNode>();
  if (tuple == nullptr) {
    return OpError(call, "expects a Tuple of tensors, got ", ToString(call.args[0].struct_info()));
  }
  if (tuple->fields.empty()) return OpError(call, "expects at least one tensor");
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  std::vector<const TensorStructInfoNode*> ts;
  std::optional<DataType> dtype;
  std::string device;
  int ndim = kUnknownNdim;
  for (size_t i = 0; i < tuple->fields.size(); ++i) {
    const auto* t =
        tuple->fields[i].defined() ? tuple->fields[i].as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr) {
      return OpError(call, "field ", i, " must be a Tensor, got ", ToString(tuple->fields[i]));
    }
    if (t->shape) KILN_RETURN_IF_ERROR(CheckInt64Dims(call, *t->shape, absl::StrCat("field ", i)));
    if (i == 0) {
      dtype = t->dtype;
      device = t->device;
    } else {
      KILN_ASSIGN_OR_RETURN(
          dtype, UnifyDType(call, dtype, "field 0", t->dtype, absl::StrCat("field ", i).c_str()));
      KILN_ASSIGN_OR_RETURN(device, UnifyDevice(call, device, "field 0", t->device,
                                                absl::StrCat("field ", i).c_str()));
    }
    if (t->ndim != kUnknownNdim) {
      if (ndim != kUnknownNdim && ndim != t->ndim) {
        return OpError(call, "fields differ in ndim: ", ndim, " vs ", t->ndim, " (field ", i, ")");
      }
      ndim = t->ndim;
    }
    ts.push_back(t);
  }
  if (ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, dtype, device);
  if (ndim == 0) return OpError(call, "cannot concatenate 0-d tensors");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), ndim));
  for (const auto* t : ts) {
    if (!t->shape) return TensorSInfoOfNdim(ndim, dtype, device);
  }
  std::vector<PrimExpr> out = *ts[0]->shape;
  PrimExpr sum = Int(0);
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& shape = *ts[i]->shape;
    for (int d = 0; d < ndim; ++d) {
      if (d == axis) continue;
      PrimExpr a = analyzer.Simplify(out[static_cast<size_t>(d)]);
      PrimExpr b = analyzer.Simplify(shape[static_cast<size_t>(d)]);
      if (!DimsEqual(a, b, analyzer) && DimsDiffer(a, b, analyzer)) {
        return OpError(call, "field ", i, " dim ", d, " (", DimStr(b), ") differs from field 0 (",
                       DimStr(a), ")");
      }
      AssumeEqual(call, b, a, analyzer,
                  absl::StrCat("dims off the axis differ at run time: field ", i, " dim ", d,
                               " is {}, field 0 dim ", d, " is {}"));
    }
    sum = i == 0 ? shape[static_cast<size_t>(axis)] : sum + shape[static_cast<size_t>(axis)];
  }
  out[static_cast<size_t>(axis)] = sum;
  return TensorSInfo(SimplifyDims(std::move(out), analyzer), dtype, device);
}

absl::StatusOr<StructInfo> InferSplit(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  auto it = call.attrs.find("indices_or_sections");
  if (it == call.attrs.end()) return OpError(call, "attribute 'indices_or_sections' is required");
  const auto* sections = std::get_if<int64_t>(&it->second);
  const auto* indices = std::get_if<std::vector<int64_t>>(&it->second);
  if (sections == nullptr && indices == nullptr) {
    return OpError(call, "attribute 'indices_or_sections' must be an int or an int list");
  }
  if (sections && *sections <= 0) {
    return OpError(call, "sections must be positive, got ", *sections);
  }
  if (indices) {
    for (size_t i = 0; i < indices->size(); ++i) {
      if ((*indices)[i] < 0 || (i > 0 && (*indices)[i] < (*indices)[i - 1])) {
        return OpError(call, "split indices must be non-negative and increasing");
      }
    }
  }
  const size_t parts = sections ? static_cast<size_t>(*sections) : indices->size() + 1;
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (data->ndim == kUnknownNdim || !data->shape) {
    if (data->ndim != kUnknownNdim)
      KILN_RETURN_IF_ERROR(NormalizeAxis(call, axis_attr.value_or(0), data->ndim).status());
    return TupleSInfo(
        std::vector<StructInfo>(parts, TensorSInfoOfNdim(data->ndim, data->dtype, data->device)));
  }
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), data->ndim));
  PrimExpr dim = analyzer.Simplify((*data->shape)[static_cast<size_t>(axis)]);
  std::vector<PrimExpr> sizes;
  if (sections) {
    if (auto c = dim.as_int(); c && *c % *sections != 0) {
      return OpError(call, "dim ", axis, " (", *c, ") does not split into ", *sections,
                     " equal sections");
    }
    AssumeDivisible(call, dim, Int(*sections), analyzer,
                    absl::StrCat("dim ", axis, " is {} at run time, which does not split into {} equal sections"));
    sizes.assign(parts, FloorDivDim(dim, Int(*sections), analyzer));
  } else {
    auto c = dim.as_int();
    auto clamp = [&](int64_t v) -> PrimExpr { return Int(c ? std::min(v, *c) : v); };
    PrimExpr start = Int(0);
    for (int64_t index : *indices) {
      PrimExpr stop = clamp(index);
      sizes.push_back(analyzer.Simplify(stop - start));
      start = stop;
    }
    sizes.push_back(analyzer.Simplify(dim - start));
    if (!c && !indices->empty()) {
      AssumeAtMost(call, Int(indices->back()), dim, analyzer,
                   absl::StrCat("split index {} is past the end of dim ", axis, " (", DimStr(dim), " is {} at run time)"));
    }
  }
  std::vector<StructInfo> fields;
  for (const PrimExpr& size : sizes) {
    std::vector<PrimExpr> shape = *data->shape;
    shape[static_cast<size_t>(axis)] = size;
    fields.push_back(TensorSInfo(std::move(shape), data->dtype, data->device));
  }
  return TupleSInfo(std::move(fields));
}

constexpr int64_t kSliceToEnd = int64_t{1} << 31;

// The length of data[begin:end:stride] along a dim of size d.
PrimExpr SliceLength(const PrimExpr& d, int64_t begin, int64_t end, int64_t stride,
                     tir::Analyzer& analyzer) {
  auto c = d.as_int();
  if (c) {
    const int64_t n = *c;
    // numpy: a negative index adds n, then clamp (written to avoid overflow at the extremes).
    auto norm = [&](int64_t v) -> int64_t {
      const int64_t lo = stride > 0 ? 0 : -1;
      const int64_t hi = stride > 0 ? n : n - 1;
      if (v >= n) return hi;
      if (v < -n) return lo;
      return std::clamp<int64_t>(v < 0 ? v + n : v, lo, hi);
    };
    const int64_t b = norm(begin);
    const int64_t e = norm(end);
    const int64_t len = stride > 0 ? (e - b + stride - 1) / stride : (b - e - stride - 1) / -stride;
    return Int(std::max<int64_t>(len, 0));
  }
  // Symbolic dim (>= 0 as a shape variable).
  // |v| >= 2^31 stands for "past the end" on that side.
  auto norm = [&](int64_t v, bool is_end) -> PrimExpr {
    if (stride > 0) {
      if (is_end && v >= kSliceToEnd) return d;
      if (v == 0 || v <= -kSliceToEnd) return Int(0);
      if (v < 0) return tir::Max(d + Int(v), Int(0));
      return tir::Min(Int(v), d);
    }
    if (v >= kSliceToEnd) return d - 1;
    if (is_end && v <= -kSliceToEnd) return Int(-1);
    if (v < 0) return tir::Max(d + Int(v), Int(-1));
    return tir::Min(Int(v), d - 1);
  };
  PrimExpr b = norm(begin, false);
  PrimExpr e = norm(end, true);
  PrimExpr diff = stride > 0 ? (b.as_int() == 0 ? e : e - b) : b - e;
  const int64_t s = stride > 0 ? stride : -stride;
  PrimExpr len =
      s == 1 ? analyzer.Simplify(diff) : FloorDivDim(diff + Int(s - 1), Int(s), analyzer);
  if (KnownNonNegative(len, analyzer)) return len;
  return analyzer.Simplify(tir::Max(len, Int(0)));
}

absl::StatusOr<StructInfo> InferStridedSlice(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto begin, IntsAttr(call, "begin"));
  KILN_ASSIGN_OR_RETURN(auto end, IntsAttr(call, "end"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, IntsAttr(call, "axes"));
  KILN_ASSIGN_OR_RETURN(auto strides_attr, IntsAttr(call, "strides"));
  if (!begin || !end) return OpError(call, "attributes 'begin' and 'end' are required");
  const size_t n = begin->size();
  std::vector<int64_t> axes_raw;
  if (axes_attr) {
    axes_raw = *axes_attr;
  } else {
    for (size_t i = 0; i < n; ++i) axes_raw.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> strides = strides_attr.value_or(std::vector<int64_t>(n, 1));
  if (end->size() != n || axes_raw.size() != n || strides.size() != n) {
    return OpError(call, "begin, end, axes and strides must have the same length, got ", n, ", ",
                   end->size(), ", ", axes_raw.size(), ", ", strides.size());
  }
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] == 0) return OpError(call, "stride ", i, " is 0");
  }
  if (data->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_raw, data->ndim));
  if (!data->shape) return TensorSInfoOfNdim(data->ndim, data->dtype, data->device);
  std::vector<PrimExpr> out = SimplifyDims(*data->shape, analyzer);
  for (size_t i = 0; i < n; ++i) {
    PrimExpr& d = out[static_cast<size_t>(axes[i])];
    d = SliceLength(d, (*begin)[i], (*end)[i], strides[i], analyzer);
  }
  return TensorSInfo(std::move(out), data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferTake(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1, "indices"));
  if (indices->dtype && !indices->dtype->is_integer()) {
    return OpError(call, "indices must have an integer dtype, got ", indices->dtype->ToString());
  }
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (data->ndim == 0) return OpError(call, "data must have at least 1 dimension");
  if (data->ndim == kUnknownNdim || indices->ndim == kUnknownNdim) {
    return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  }
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), data->ndim));
  const int ndim = data->ndim - 1 + indices->ndim;
  if (!data->shape || !indices->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  std::vector<PrimExpr> out(data->shape->begin(), data->shape->begin() + axis);
  out.insert(out.end(), indices->shape->begin(), indices->shape->end());
  out.insert(out.end(), data->shape->begin() + axis + 1, data->shape->end());
  return TensorSInfo(std::move(out), data->dtype, data->device);
}

}  // namespace

void RegisterManipulateOps(OpRegistry& registry) {
  registry.Register({"reshape", 2, 2, true, {}, InferReshape});
  registry.Register({"permute_dims", 1, 1, true, {"axes"}, InferPermuteDims});
  registry.Register({"broadcast_to", 2, 2, true, {}, InferBroadcastTo});
  registry.Register({"concat", 1, 1, true, {"axis"}, InferConcat});
  registry.Register({"split", 1, 1, true, {"indices_or_sections", "axis"}, InferSplit});
  registry.Register(
      {"strided_slice", 1, 1, true, {"axes", "begin", "end", "strides"}, InferStridedSlice});
  registry.Register({"take", 2, 2, true, {"axis"}, InferTake});
}

}  // namespace kiln::relax::op
