// Channel normalizations (channel axis 1: data is N C D1 ... Dk), as ONNX and PyTorch define
// them for inference. Every one takes floating-point data; parameters share its dtype and
// the result has the data's struct info.
//
// batch_norm (data, scale, bias, mean, var), attribute epsilon (float >= 0, default 1e-5):
//   y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c], the running statistics
//   given (inference). data has ndim >= 2; every parameter is 1-d of C elements.
// group_norm (data, scale, bias), attributes num_groups (int > 0, required) and epsilon:
//   the channels split into num_groups groups of C / num_groups consecutive channels; each
//   (sample, group) is normalized over its channels and all spatial positions with its own
//   mean and biased variance, then y = x_hat * scale[c] + bias[c] (per channel). ndim >= 2;
//   C must be divisible by num_groups (provably not -> error; else checked at run time).
// instance_norm (data, scale, bias), attribute epsilon: group_norm with one channel per
//   group (each (sample, channel) normalized over its spatial positions). ndim >= 3.
// lrn (data), attributes size (int > 0, required), alpha (default 1e-4), beta (default
//   0.75), bias (default 1.0): local response normalization across channels (ONNX LRN):
//   y = x / (bias + alpha / size * sum(x[n, c', ...]^2))^beta over the channels
//   c' in [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] inside [0, C). ndim >= 2.
// NaN and infinities follow IEEE through these formulas (a NaN or inf in a group makes its
// statistics NaN, so the whole group's output is NaN).
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<const TensorStructInfoNode*> ChannelData(const CallNode& call, int min_ndim) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  if (data->dtype && !data->dtype->is_floating()) {
    return OpError(call, "data must have a floating-point dtype, got ", data->dtype->ToString());
  }
  if (data->ndim != kUnknownNdim && data->ndim < min_ndim) {
    return OpError(call, "data must have at least ", min_ndim, " dimensions (N, C, ...), got ndim ", data->ndim);
  }
  return data;
}

// Each of params (arguments 1...) is 1-d with the data's channel count.
absl::StatusOr<std::optional<DataType>> CheckChannelParams(const CallNode& call, const TensorStructInfoNode& data,
                                                           const std::vector<const char*>& names,
                                                           tir::Analyzer& analyzer) {
  std::optional<DataType> dtype = data.dtype;
  for (size_t p = 0; p < names.size(); ++p) {
    KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* param, TensorArg(call, p + 1, names[p]));
    KILN_ASSIGN_OR_RETURN(dtype, UnifyDType(call, dtype, "data", param->dtype, names[p]));
    if (param->ndim != kUnknownNdim && param->ndim != 1) {
      return OpError(call, names[p], " must be 1-d (one value per channel), got ndim ", param->ndim);
    }
    if (!data.shape || !param->shape) continue;
    PrimExpr c = analyzer.Simplify((*data.shape)[1]);
    PrimExpr k = analyzer.Simplify((*param->shape)[0]);
    if (!DimsEqual(c, k, analyzer) && DimsDiffer(c, k, analyzer)) {
      return OpError(call, names[p], " has ", DimStr(k), " elements, data has ", DimStr(c), " channels (dim 1)");
    }
    AssumeEqual(call, k, c, analyzer,
                absl::StrCat(names[p], " has {} elements at run time, data has {} channels (dim 1)"));
  }
  return dtype;
}

absl::StatusOr<StructInfo> InferBatchNorm(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelData(call, 2));
  KILN_RETURN_IF_ERROR(CheckEpsilon(call));
  KILN_ASSIGN_OR_RETURN(auto dtype, CheckChannelParams(call, *data, {"scale", "bias", "mean", "var"}, analyzer));
  return MakeTensor(ShapeOf(*data), dtype, data->device);
}

absl::StatusOr<StructInfo> InferGroupNorm(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelData(call, 2));
  KILN_RETURN_IF_ERROR(CheckEpsilon(call));
  KILN_ASSIGN_OR_RETURN(auto groups, IntAttr(call, "num_groups"));
  if (!groups) return OpError(call, "attribute 'num_groups' is required");
  if (*groups <= 0) return OpError(call, "num_groups must be positive, got ", *groups);
  KILN_ASSIGN_OR_RETURN(auto dtype, CheckChannelParams(call, *data, {"scale", "bias"}, analyzer));
  if (data->shape) {
    PrimExpr c = analyzer.Simplify((*data->shape)[1]);
    if (auto cc = c.as_int(); cc && *cc % *groups != 0) {
      return OpError(call, "data channels (", *cc, ") are not divisible by num_groups (", *groups, ")");
    }
    AssumeDivisible(call, c, Int(*groups), analyzer,
                    "data channels (dim 1) are {} at run time, not divisible by num_groups ({})");
  }
  return MakeTensor(ShapeOf(*data), dtype, data->device);
}

absl::StatusOr<StructInfo> InferInstanceNorm(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelData(call, 3));
  KILN_RETURN_IF_ERROR(CheckEpsilon(call));
  KILN_ASSIGN_OR_RETURN(auto dtype, CheckChannelParams(call, *data, {"scale", "bias"}, analyzer));
  return MakeTensor(ShapeOf(*data), dtype, data->device);
}

absl::StatusOr<StructInfo> InferLrn(const CallNode& call, tir::Analyzer&) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelData(call, 2));
  KILN_ASSIGN_OR_RETURN(auto size, IntAttr(call, "size"));
  if (!size) return OpError(call, "attribute 'size' is required");
  if (*size <= 0) return OpError(call, "size must be positive, got ", *size);
  for (const char* name : {"alpha", "beta", "bias"}) KILN_RETURN_IF_ERROR(FloatAttr(call, name).status());
  return MakeTensor(ShapeOf(*data), data->dtype, data->device);
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  registry.Register({"batch_norm", 5, 5, true, {"epsilon"}, InferBatchNorm});
  registry.Register({"group_norm", 3, 3, true, {"num_groups", "epsilon"}, InferGroupNorm});
  registry.Register({"instance_norm", 3, 3, true, {"epsilon"}, InferInstanceNorm});
  registry.Register({"lrn", 1, 1, true, {"size", "alpha", "beta", "bias"}, InferLrn});
}

}  // namespace kiln::relax::op
