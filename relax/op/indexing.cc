// Indexing operators: gathers and scatters whose positions come from an index tensor, and
// one_hot. Index tensors have an integer dtype; a negative index counts from the end of its
// dim (ONNX); an index outside [-dim, dim) is a run-time error naming the buffer and the
// index (tir/transform/insert_index_checks.h), never an out-of-bounds access.
//
// gather_elements (data, indices), attribute axis (default 0). ONNX GatherElements,
//   np.take_along_axis: data and indices have the same ndim; the result has indices' shape
//   and data's dtype; out[i0, ..., ik] = data[i0, ..., indices[i0, ..., ik], ..., ik] with
//   the index at `axis`. Off the axis each indices dim must be at most data's dim.
// gather_nd (data, indices), attribute batch_dims (default 0). ONNX GatherND: the last
//   indices dim k (a constant, 1 <= k <= data.ndim - batch_dims) holds positions into data
//   dims [batch_dims, batch_dims + k); the first batch_dims dims of data and indices are
//   shared batch dims. Result shape: indices.shape[:-1] + data.shape[batch_dims + k:].
// scatter_elements (data, indices, updates), attributes axis (default 0) and reduction
//   ("none", the default, "add", "mul", "max", "min"). ONNX ScatterElements (and the older
//   Scatter): a copy of data where, for every element of updates (indices' shape),
//   out[..., indices[i], ...] (the index at `axis`) is set to, or combined with, updates[i].
//   Updates apply in row-major order, so with "none" and repeated positions the last wins.
//   Result: data's struct info.
// scatter_nd (data, indices, updates), attribute reduction (as scatter_elements). ONNX
//   ScatterND: indices' last dim k (a constant <= data.ndim) addresses data dims [0, k);
//   updates has shape indices.shape[:-1] + data.shape[k:]. Result: data's struct info.
// one_hot (indices), attributes depth (int > 0, required), on_value (default 1), off_value
//   (default 0), axis (default -1: the new dim is last) and dtype (default float32). The
//   result has a new dim of size depth at `axis` (in [-(r + 1), r] for indices of ndim r)
//   holding on_value where its position equals the index (negative indices add depth) and
//   off_value elsewhere; an index outside [-depth, depth) gives a row of off_value (ONNX).
#include <string>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::Status CheckIndexDType(const CallNode& call, const TensorStructInfoNode& indices) {
  if (indices.dtype && !indices.dtype->is_integer()) {
    return OpError(call, "indices must have an integer dtype, got ", indices.dtype->ToString());
  }
  return absl::OkStatus();
}

// Two dims that must be equal: provably different is an error, undecided is checked at run time.
absl::Status RequireEqual(const CallNode& call, const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer,
                          const std::string& what) {
  if (DimsEqual(a, b, analyzer)) return absl::OkStatus();
  if (DimsDiffer(a, b, analyzer)) return OpError(call, what, " (", DimStr(a), " vs ", DimStr(b), ")");
  AssumeEqual(call, a, b, analyzer, absl::StrCat(what, " at run time ({} vs {})"));
  return absl::OkStatus();
}

// a <= b, or an error / a run-time check.
absl::Status RequireAtMost(const CallNode& call, const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer,
                           const std::string& what) {
  auto ca = a.as_int();
  auto cb = b.as_int();
  if (ca && cb) {
    if (*ca > *cb) return OpError(call, what, " (", *ca, " > ", *cb, ")");
    return absl::OkStatus();
  }
  if (DimsEqual(a, b, analyzer)) return absl::OkStatus();
  AssumeAtMost(call, a, b, analyzer, absl::StrCat(what, " at run time ({} > {})"));
  return absl::OkStatus();
}

absl::Status CheckReduction(const CallNode& call) {
  auto it = call.attrs.find("reduction");
  if (it == call.attrs.end()) return absl::OkStatus();
  const auto* name = std::get_if<std::string>(&it->second);
  if (name == nullptr || (*name != "none" && *name != "add" && *name != "mul" && *name != "max" && *name != "min")) {
    return OpError(call, "attribute reduction must be \"none\", \"add\", \"mul\", \"max\" or \"min\"");
  }
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferGatherElements(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1, "indices"));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, *indices));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (data->ndim == 0) return OpError(call, "data must have at least 1 dimension");
  if (data->ndim != kUnknownNdim && indices->ndim != kUnknownNdim && data->ndim != indices->ndim) {
    return OpError(call, "data and indices must have the same ndim, got ", data->ndim, " and ", indices->ndim);
  }
  const int ndim = data->ndim != kUnknownNdim ? data->ndim : indices->ndim;
  if (ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), ndim));
  if (!indices->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  if (data->shape) {
    for (int d = 0; d < ndim; ++d) {
      if (d == axis) continue;
      KILN_RETURN_IF_ERROR(RequireAtMost(call, (*indices->shape)[d], (*data->shape)[d], analyzer,
                                         absl::StrCat("indices dim ", d, " exceeds data dim ", d)));
    }
  }
  return TensorSInfo(*indices->shape, data->dtype, data->device);
}

// The constant last dim of indices (gather_nd, scatter_nd), checked against `limit`.
absl::StatusOr<std::optional<int64_t>> IndexDepth(const CallNode& call, const TensorStructInfoNode& indices,
                                                  int limit) {
  if (indices.ndim == 0) return OpError(call, "indices must have at least 1 dimension");
  if (!indices.shape) return std::optional<int64_t>();
  auto k = indices.shape->back().as_int();
  if (!k) return OpError(call, "the last dim of indices (", DimStr(indices.shape->back()), ") must be a constant");
  if (*k < 1 || (limit >= 0 && *k > limit)) {
    return OpError(call, "the last dim of indices (", *k, ") must be in [1, ", limit, "]");
  }
  return k;
}

absl::StatusOr<StructInfo> InferGatherNd(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1, "indices"));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, *indices));
  KILN_ASSIGN_OR_RETURN(auto batch_attr, IntAttr(call, "batch_dims"));
  const int64_t b = batch_attr.value_or(0);
  if (b < 0) return OpError(call, "batch_dims must be non-negative, got ", b);
  if (data->ndim != kUnknownNdim && b >= data->ndim) {
    return OpError(call, "batch_dims (", b, ") must be less than data's ndim (", data->ndim, ")");
  }
  if (indices->ndim != kUnknownNdim && b >= indices->ndim) {
    return OpError(call, "batch_dims (", b, ") must be less than indices' ndim (", indices->ndim, ")");
  }
  const int limit = data->ndim == kUnknownNdim ? -1 : data->ndim - static_cast<int>(b);
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> k, IndexDepth(call, *indices, limit));
  if (!k || data->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, data->dtype, data->device);
  const int ndim = indices->ndim - 1 + data->ndim - static_cast<int>(b + *k);
  if (!data->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  for (int64_t d = 0; d < b; ++d) {
    KILN_RETURN_IF_ERROR(RequireEqual(call, (*data->shape)[d], (*indices->shape)[d], analyzer,
                                      absl::StrCat("batch dim ", d, " of data and indices differ")));
  }
  std::vector<PrimExpr> out(indices->shape->begin(), indices->shape->end() - 1);
  out.insert(out.end(), data->shape->begin() + b + *k, data->shape->end());
  return TensorSInfo(std::move(out), data->dtype, data->device);
}

absl::StatusOr<StructInfo> InferScatterElements(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* updates, TensorArg(call, 2, "updates"));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, *indices));
  KILN_RETURN_IF_ERROR(CheckReduction(call));
  KILN_RETURN_IF_ERROR(UnifyDType(call, data->dtype, "data", updates->dtype, "updates").status());
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (data->ndim == 0) return OpError(call, "data must have at least 1 dimension");
  for (const TensorStructInfoNode* t : {indices, updates}) {
    if (data->ndim != kUnknownNdim && t->ndim != kUnknownNdim && t->ndim != data->ndim) {
      return OpError(call, "data, indices and updates must have the same ndim, got ", data->ndim, ", ",
                     indices->ndim, " and ", updates->ndim);
    }
  }
  if (data->ndim != kUnknownNdim) {
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), data->ndim));
    if (indices->shape && updates->shape) {
      for (int d = 0; d < data->ndim; ++d) {
        KILN_RETURN_IF_ERROR(RequireEqual(call, (*indices->shape)[d], (*updates->shape)[d], analyzer,
                                          absl::StrCat("indices and updates differ in dim ", d)));
        if (data->shape && d != axis) {
          KILN_RETURN_IF_ERROR(RequireAtMost(call, (*indices->shape)[d], (*data->shape)[d], analyzer,
                                             absl::StrCat("indices dim ", d, " exceeds data dim ", d)));
        }
      }
    }
  }
  return call.args[0].struct_info();
}

absl::StatusOr<StructInfo> InferScatterNd(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* updates, TensorArg(call, 2, "updates"));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, *indices));
  KILN_RETURN_IF_ERROR(CheckReduction(call));
  KILN_RETURN_IF_ERROR(UnifyDType(call, data->dtype, "data", updates->dtype, "updates").status());
  if (data->ndim == 0) return OpError(call, "data must have at least 1 dimension");
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> k, IndexDepth(call, *indices, data->ndim));
  if (k && data->shape && updates->ndim != kUnknownNdim) {
    const size_t want = indices->shape->size() - 1 + data->shape->size() - static_cast<size_t>(*k);
    if (static_cast<size_t>(updates->ndim) != want) {
      return OpError(call, "updates must have ndim ", want, " (indices.shape[:-1] + data.shape[k:]), got ",
                     updates->ndim);
    }
    if (updates->shape) {
      std::vector<PrimExpr> expect(indices->shape->begin(), indices->shape->end() - 1);
      expect.insert(expect.end(), data->shape->begin() + *k, data->shape->end());
      for (size_t d = 0; d < want; ++d) {
        KILN_RETURN_IF_ERROR(RequireEqual(call, (*updates->shape)[d], expect[d], analyzer,
                                          absl::StrCat("updates dim ", d, " differs from indices.shape[:-1] + data.shape[k:]")));
      }
    }
  }
  return call.args[0].struct_info();
}

absl::StatusOr<StructInfo> InferOneHot(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 0, "indices"));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, *indices));
  KILN_ASSIGN_OR_RETURN(auto depth, IntAttr(call, "depth"));
  if (!depth) return OpError(call, "attribute 'depth' is required");
  if (*depth <= 0) return OpError(call, "depth must be positive, got ", *depth);
  KILN_RETURN_IF_ERROR(FloatAttr(call, "on_value").status());
  KILN_RETURN_IF_ERROR(FloatAttr(call, "off_value").status());
  KILN_ASSIGN_OR_RETURN(auto dtype_attr, DTypeAttr(call, "dtype"));
  const DataType dtype = dtype_attr.value_or(DataType::Float32());
  KILN_ASSIGN_OR_RETURN(auto axis_attr, IntAttr(call, "axis"));
  if (indices->ndim == kUnknownNdim) return TensorSInfoOfNdim(kUnknownNdim, dtype, indices->device);
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(-1), indices->ndim + 1));
  if (!indices->shape) return TensorSInfoOfNdim(indices->ndim + 1, dtype, indices->device);
  std::vector<PrimExpr> out = *indices->shape;
  out.insert(out.begin() + axis, Int(*depth));
  return TensorSInfo(std::move(out), dtype, indices->device);
}

}  // namespace

void RegisterIndexingOps(OpRegistry& registry) {
  registry.Register({"gather_elements", 2, 2, true, {"axis"}, InferGatherElements});
  registry.Register({"gather_nd", 2, 2, true, {"batch_dims"}, InferGatherNd});
  registry.Register({"scatter_elements", 3, 3, true, {"axis", "reduction"}, InferScatterElements});
  registry.Register({"scatter_nd", 3, 3, true, {"reduction"}, InferScatterNd});
  registry.Register({"one_hot", 1, 1, true, {"depth", "on_value", "off_value", "axis", "dtype"}, InferOneHot});
}

}  // namespace kiln::relax::op
