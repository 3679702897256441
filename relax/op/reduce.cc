// Reductions, normalizations and casts.
//
// sum, mean, max, min, prod (data), attributes axis (int list; absent = all axes) and
//   keepdims (bool, default false). Reduced axes are dropped, or kept as 1 with keepdims.
//   The dtype is the data's. mean requires a floating-point dtype.
//   max/min of floats containing a NaN is NaN (np.max); sum/mean/prod follow IEEE (inf +
//   -inf and 0 * inf are NaN). prod of nothing is 1 (np.prod), sum 0, mean NaN (0 / 0); max
//   (min) of nothing is -inf (+inf), for integers the type's lowest (highest) value, as ONNX's
//   ReduceMax (ReduceMin) defines it (NumPy refuses an empty max instead).
// variance (data), attributes axis, keepdims (as sum) and correction (int >= 0, default 0):
//   sum((x - mean)^2) / (count - correction), np.var's ddof: 0 is the population variance,
//   1 the sample variance. Floating point. count <= correction divides by zero, as NumPy's
//   max(count - ddof, 0): inf, or NaN where the squared deviations sum to 0.
// argmax, argmin (data), attributes axis (int; absent = over all elements, flattened) and
//   keepdims. The result dtype is int64. The first maximum (minimum) wins ties; the first
//   NaN wins over every number (np.argmax). An empty axis (or empty data, without axis) is an
//   error, at compile time when its dim is 0 and else when the call runs, as in np.argmax.
// softmax (data), attribute axis (int, default -1). Floating-point; the result has the
//   data's struct info. A row holding a NaN or +inf gives NaN (as PyTorch: the row's max
//   is subtracted first, and inf - inf is NaN).
// log_softmax (data), attribute axis as softmax: x - max - log(sum(exp(x - max))), stable
//   for large |x| (no exp of a positive number); NaN and +inf rows as softmax, a -inf
//   element gives -inf.
// layer_norm (data, gamma, beta), attributes axes (int list, default [-1]) and epsilon
//   (float, default 1e-5). gamma and beta have ndim == len(axes) and, dim by dim, the
//   normalized axes' dims (provably different -> error); all share the data's dtype
//   (floating point). The result has the data's struct info.
// rms_norm (data, weight), attributes axes and epsilon as layer_norm, and numerics ("default" or
//   "ggml": llama.cpp's arithmetic over the last axis, relax/op/ggml_numerics.h).
// astype (data), attribute dtype (required). The data's shape with the new dtype.
#include <algorithm>

#include "relax/op/ggml_numerics.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> ReduceResult(const CallNode& call, const TensorStructInfoNode& data,
                                        const std::optional<std::vector<int64_t>>& axes_attr,
                                        bool keepdims, std::optional<DataType> dtype) {
  if (data.ndim == kUnknownNdim) {
    // Reducing all axes without keepdims gives a scalar whatever the rank.
    if (!axes_attr && !keepdims) return TensorSInfo({}, dtype, data.device);
    return TensorSInfoOfNdim(kUnknownNdim, dtype, data.device);
  }
  std::vector<bool> reduced(static_cast<size_t>(data.ndim), !axes_attr.has_value());
  if (axes_attr) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> axes,
                          NormalizeAxes(call, *axes_attr, data.ndim, "axis"));
    for (int a : axes) reduced[static_cast<size_t>(a)] = true;
  }
  int out_ndim = 0;
  for (int i = 0; i < data.ndim; ++i)
    out_ndim += (keepdims || !reduced[static_cast<size_t>(i)]) ? 1 : 0;
  if (!data.shape) return TensorSInfoOfNdim(out_ndim, dtype, data.device);
  std::vector<PrimExpr> out;
  for (int i = 0; i < data.ndim; ++i) {
    if (!reduced[static_cast<size_t>(i)]) {
      out.push_back((*data.shape)[static_cast<size_t>(i)]);
    } else if (keepdims) {
      out.push_back(Int(1));
    }
  }
  return TensorSInfo(std::move(out), dtype, data.device);
}

absl::Status RequireFloat(const CallNode& call, const TensorStructInfoNode& t, const char* what) {
  if (t.dtype && !t.dtype->is_floating()) {
    return OpError(call, what, " must have a floating-point dtype, got ", t.dtype->ToString());
  }
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferReduce(const CallNode& call, tir::Analyzer&, bool needs_float) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  if (needs_float) KILN_RETURN_IF_ERROR(RequireFloat(call, *data, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes, IntsAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(auto keepdims, BoolAttr(call, "keepdims"));
  return ReduceResult(call, *data, axes, keepdims.value_or(false), data->dtype);
}

absl::StatusOr<StructInfo> InferVariance(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(auto correction, IntAttr(call, "correction"));
  if (correction && *correction < 0) return OpError(call, "correction must be non-negative, got ", *correction);
  return InferReduce(call, analyzer, /*needs_float=*/true);
}

absl::StatusOr<StructInfo> InferArgReduce(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(auto keepdims, BoolAttr(call, "keepdims"));
  std::optional<std::vector<int64_t>> axes;
  if (axis) axes = std::vector<int64_t>{*axis};
  KILN_ASSIGN_OR_RETURN(StructInfo result,
                        ReduceResult(call, *data, axes, keepdims.value_or(false), DataType::Int64()));
  // An empty axis has no first maximum: np.argmax refuses it, and the kernel returned an index
  // it never wrote. A count of 0 known here is an error; a symbolic one is checked at run time.
  if (data->shape && !data->shape->empty()) {
    std::string what = "the data";
    std::string along;
    PrimExpr count = Int(1);
    if (axis) {
      KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, *axis, data->ndim));
      count = (*data->shape)[static_cast<size_t>(a)];
      what = absl::StrCat("data dim ", a);
      along = absl::StrCat(" along dim ", a);
    } else {
      for (const PrimExpr& d : *data->shape) count = count * d;
    }
    count = analyzer.Simplify(count);
    if (count.as_int() == 0) {
      return OpError(call, "data ", DimsStr(*data->shape), " is empty", along, ": an empty axis has no first ",
                     OpName(call) == "argmax" ? "maximum" : "minimum");
    }
    AssumeAtMost(call, Int(1), count, analyzer,
                 absl::StrCat("an empty axis has no index to return: at least {} element needed along ", what, " (",
                              DimStr(count), "), got {} at run time"));
  }
  return result;
}

absl::StatusOr<StructInfo> InferSoftmax(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_RETURN_IF_ERROR(RequireFloat(call, *data, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, IntAttr(call, "axis"));
  if (data->ndim != kUnknownNdim) {
    if (data->ndim == 0) return OpError(call, "data must have at least 1 dimension");
    KILN_RETURN_IF_ERROR(NormalizeAxis(call, axis.value_or(-1), data->ndim).status());
  }
  return MakeTensor(ShapeOf(*data), data->dtype, data->device);
}

// layer_norm / rms_norm: `params` are the scale/shift arguments (1.. of the call).
absl::StatusOr<StructInfo> InferNorm(const CallNode& call, tir::Analyzer& analyzer,
                                     std::vector<const char*> param_names) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_RETURN_IF_ERROR(RequireFloat(call, *data, "data"));
  KILN_ASSIGN_OR_RETURN(auto axes_attr, IntsAttr(call, "axes"));
  KILN_RETURN_IF_ERROR(CheckEpsilon(call));
  std::vector<int64_t> axes_raw = axes_attr.value_or(std::vector<int64_t>{-1});
  if (axes_raw.empty()) return OpError(call, "axes must not be empty");
  std::optional<std::vector<int>> axes;
  if (data->ndim != kUnknownNdim) {
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, axes_raw, data->ndim));
  }
  std::optional<DataType> dtype = data->dtype;
  for (size_t p = 0; p < param_names.size(); ++p) {
    const char* name = param_names[p];
    KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* param, TensorArg(call, p + 1, name));
    KILN_ASSIGN_OR_RETURN(dtype, UnifyDType(call, dtype, "data", param->dtype, name));
    if (param->ndim != kUnknownNdim && param->ndim != static_cast<int>(axes_raw.size())) {
      return OpError(call, name, " has ndim ", param->ndim, ", expected ", axes_raw.size(),
                     " (one per normalized axis)");
    }
    if (!axes || !data->shape || !param->shape) continue;
    for (size_t i = 0; i < axes->size(); ++i) {
      PrimExpr d = analyzer.Simplify((*data->shape)[static_cast<size_t>((*axes)[i])]);
      PrimExpr g = analyzer.Simplify((*param->shape)[i]);
      if (!DimsEqual(d, g, analyzer) && DimsDiffer(d, g, analyzer)) {
        return OpError(call, name, " dim ", i, " (", DimStr(g), ") differs from data dim ",
                       (*axes)[i], " (", DimStr(d), ")");
      }
      AssumeEqual(call, g, d, analyzer,
                  absl::StrCat(name, " dim ", i, " is {} at run time, data dim ", (*axes)[i],
                               " (a normalized axis) is {}"));
    }
  }
  return MakeTensor(ShapeOf(*data), dtype, data->device);
}

// bitcast: the bits of each element read as `dtype`, which must have the same width (bool
// counts as its 8-bit storage).
absl::StatusOr<StructInfo> InferBitcast(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto dtype, DTypeAttr(call, "dtype"));
  if (!dtype) return OpError(call, "attribute 'dtype' is required");
  auto storage_bits = [](DataType t) { return t.is_bool() ? 8 : t.bits() * t.lanes(); };
  if (data->dtype && storage_bits(*data->dtype) != storage_bits(*dtype)) {
    return OpError(call, "cannot reinterpret ", data->dtype->ToString(), " (", storage_bits(*data->dtype),
                   " bits) as ", dtype->ToString(), " (", storage_bits(*dtype), " bits)");
  }
  return MakeTensor(ShapeOf(*data), dtype, data->device);
}

absl::StatusOr<StructInfo> InferAstype(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto dtype, DTypeAttr(call, "dtype"));
  if (!dtype) return OpError(call, "attribute 'dtype' is required");
  return MakeTensor(ShapeOf(*data), dtype, data->device);
}

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  for (const char* name : {"sum", "max", "min", "prod"}) {
    registry.Register(
        {name, 1, 1, true, {"axis", "keepdims"}, [](const CallNode& call, tir::Analyzer& analyzer) {
           return InferReduce(call, analyzer, /*needs_float=*/false);
         }});
  }
  registry.Register(
      {"mean", 1, 1, true, {"axis", "keepdims"}, [](const CallNode& call, tir::Analyzer& analyzer) {
         return InferReduce(call, analyzer, /*needs_float=*/true);
       }});
  registry.Register({"argmax", 1, 1, true, {"axis", "keepdims"}, InferArgReduce});
  registry.Register({"argmin", 1, 1, true, {"axis", "keepdims"}, InferArgReduce});
  registry.Register({"softmax", 1, 1, true, {"axis"}, InferSoftmax});
  registry.Register({"log_softmax", 1, 1, true, {"axis"}, InferSoftmax});
  registry.Register({"variance", 1, 1, true, {"axis", "keepdims", "correction"}, InferVariance});
  registry.Register({"layer_norm",
                     3,
                     3,
                     true,
                     {"axes", "epsilon"},
                     [](const CallNode& call, tir::Analyzer& analyzer) {
                       return InferNorm(call, analyzer, {"gamma", "beta"});
                     }});
  registry.Register({"rms_norm",
                     2,
                     2,
                     true,
                     {"axes", "epsilon", "numerics"},
                     [](const CallNode& call, tir::Analyzer& analyzer) -> absl::StatusOr<StructInfo> {
                       KILN_RETURN_IF_ERROR(GgmlNumericsAttr(call).status());
                       return InferNorm(call, analyzer, {"weight"});
                     }});
  registry.Register({"astype", 1, 1, true, {"dtype"}, InferAstype});
  registry.Register({"bitcast", 1, 1, true, {"dtype"}, InferBitcast});
}

}  // namespace kiln::relax::op
