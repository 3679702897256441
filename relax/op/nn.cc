// Neural-network window operators (NCHW layouts only).
//
// conv2d (data: N C H W, weight: O I KH KW), attributes strides (1 or 2 ints, default 1),
//   padding (1 int = all sides, 2 = (pad_h, pad_w), 4 = (top, left, bottom, right); default
//   0), dilation (1 or 2 ints, default 1), groups (int, default 1), out_dtype (optional).
//   C must equal I * groups and O be divisible by groups (provably false -> error). Output
//   (N, O, H', W') with H' = floordiv(H + top + bottom - dil_h * (KH - 1) - 1, stride_h) + 1
//   (likewise W'); a constant H' < 1 is an error. data and weight share a dtype.
// max_pool2d (data: N C H W), attributes pool_size (1 or 2 ints, required), strides
//   (default: pool_size, as in PyTorch), padding, dilation (as conv2d). Output
//   (N, C, H', W') with the same formula, KH/KW = pool_size. Padding never wins (it reads
//   as -inf); a window holding a NaN gives NaN (as PyTorch).
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

// Reads an int-list attribute of `n` values given as 1 value (repeated) or n values.
absl::StatusOr<std::vector<int64_t>> Pair(const CallNode& call, const std::string& name,
                                          std::optional<std::vector<int64_t>> fallback,
                                          bool positive) {
  KILN_ASSIGN_OR_RETURN(auto v, IntsAttr(call, name));
  if (!v) {
    if (!fallback) return OpError(call, "attribute '", name, "' is required");
    v = fallback;
  }
  if (v->size() == 1) v->push_back((*v)[0]);
  if (v->size() != 2)
    return OpError(call, "attribute '", name, "' needs 1 or 2 values, got ", v->size());
  for (int64_t x : *v) {
    if (positive ? x <= 0 : x < 0) {
      return OpError(call, "attribute '", name, "' values must be ",
                     positive ? "positive" : "non-negative", ", got ", x);
    }
  }
  return *v;
}

// padding as (top, left, bottom, right).
absl::StatusOr<std::vector<int64_t>> Padding(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(auto v, IntsAttr(call, "padding"));
  std::vector<int64_t> p = v.value_or(std::vector<int64_t>{0});
  if (p.size() == 1) p = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) p = {p[0], p[1], p[0], p[1]};
  if (p.size() != 4)
    return OpError(call, "attribute 'padding' needs 1, 2 or 4 values, got ", p.size());
  for (int64_t x : p) {
    if (x < 0) return OpError(call, "attribute 'padding' values must be non-negative, got ", x);
  }
  return p;
}

// floordiv(in + pad - dil * (k - 1) - 1, stride) + 1
absl::StatusOr<PrimExpr> WindowOut(const CallNode& call, const char* axis, const PrimExpr& in,
                                   int64_t pad, const PrimExpr& k, int64_t dil, int64_t stride,
                                   tir::Analyzer& analyzer) {
  PrimExpr span;
  if (auto kc = k.as_int()) {
    span = AddConst(in, pad - dil * (*kc - 1) - 1);
  } else {
    span = AddConst(in - PrimExpr(dil) * AddConst(k, -1), pad - 1);
  }
  PrimExpr out =
      stride == 1 ? AddConst(span, 1) : AddConst(FloorDivDim(span, Int(stride), analyzer), 1);
  out = analyzer.Simplify(out);
  if (auto c = out.as_int(); c && *c < 1) {
    return OpError(call, "window of ", DimStr(k), " (dilation ", dil,
                   ") is larger than the padded ", axis, " dim ", DimStr(in), " + ", pad);
  }
  AssumeAtMost(call, AddConst(PrimExpr(dil) * AddConst(k, -1), 1), AddConst(in, pad), analyzer,
               absl::StrCat("the window spans {} at run time, more than the padded ", axis, " dim (", DimStr(in),
                            " + ", pad, " = {})"));
  return out;
}

absl::StatusOr<const TensorStructInfoNode*> Nchw(const CallNode& call, size_t index,
                                                 const char* what) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, TensorArg(call, index, what));
  if (t->ndim != kUnknownNdim && t->ndim != 4) {
    return OpError(call, what, " must be 4-d, got ndim ", t->ndim);
  }
  return t;
}

absl::StatusOr<StructInfo> InferConv2d(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, Nchw(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* weight, Nchw(call, 1, "weight"));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, data->dtype, "data", weight->dtype, "weight"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, DTypeAttr(call, "out_dtype"));
  if (out_dtype) dtype = out_dtype;
  KILN_ASSIGN_OR_RETURN(auto strides, Pair(call, "strides", std::vector<int64_t>{1}, true));
  KILN_ASSIGN_OR_RETURN(auto dilation, Pair(call, "dilation", std::vector<int64_t>{1}, true));
  KILN_ASSIGN_OR_RETURN(auto padding, Padding(call));
  KILN_ASSIGN_OR_RETURN(auto groups, IntAttr(call, "groups"));
  const int64_t g = groups.value_or(1);
  if (g <= 0) return OpError(call, "groups must be positive, got ", g);
  KILN_ASSIGN_OR_RETURN(std::string device,
                        UnifyDevice(call, data->device, "data", weight->device, "weight"));
  if (!data->shape || !weight->shape) return TensorSInfoOfNdim(4, dtype, device);
  const auto& x = *data->shape;
  const auto& w = *weight->shape;
  PrimExpr c = analyzer.Simplify(x[1]);
  PrimExpr ig = analyzer.Simplify(g == 1 ? w[1] : w[1] * g);
  if (!DimsEqual(c, ig, analyzer) && DimsDiffer(c, ig, analyzer)) {
    return OpError(call, "data channels (dim 1: ", DimStr(c),
                   ") differ from weight in_channels (dim 1: ", DimStr(analyzer.Simplify(w[1])),
                   ") * groups (", g, ")");
  }
  AssumeEqual(call, c, ig, analyzer,
              absl::StrCat("data channels (dim 1) are {} at run time, weight in_channels (dim 1) * groups (", g,
                           ") is {}"));
  if (g > 1) {
    AssumeDivisible(call, w[0], Int(g), analyzer,
                    "weight out_channels (dim 0) are {} at run time, not divisible by groups ({})");
  }
  if (auto o = analyzer.Simplify(w[0]).as_int(); o && *o % g != 0) {
    return OpError(call, "weight out_channels (", *o, ") is not divisible by groups (", g, ")");
  }
  KILN_ASSIGN_OR_RETURN(PrimExpr h,
                        WindowOut(call, "height", analyzer.Simplify(x[2]), padding[0] + padding[2],
                                  analyzer.Simplify(w[2]), dilation[0], strides[0], analyzer));
  KILN_ASSIGN_OR_RETURN(PrimExpr wo,
                        WindowOut(call, "width", analyzer.Simplify(x[3]), padding[1] + padding[3],
                                  analyzer.Simplify(w[3]), dilation[1], strides[1], analyzer));
  return TensorSInfo(SimplifyDims({x[0], w[0], h, wo}, analyzer), dtype, device);
}

absl::StatusOr<StructInfo> InferMaxPool2d(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, Nchw(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto pool, Pair(call, "pool_size", std::nullopt, true));
  KILN_ASSIGN_OR_RETURN(auto strides, Pair(call, "strides", pool, true));
  KILN_ASSIGN_OR_RETURN(auto dilation, Pair(call, "dilation", std::vector<int64_t>{1}, true));
  KILN_ASSIGN_OR_RETURN(auto padding, Padding(call));
  if (!data->shape) return TensorSInfoOfNdim(4, data->dtype, data->device);
  const auto& x = *data->shape;
  KILN_ASSIGN_OR_RETURN(PrimExpr h,
                        WindowOut(call, "height", analyzer.Simplify(x[2]), padding[0] + padding[2],
                                  Int(pool[0]), dilation[0], strides[0], analyzer));
  KILN_ASSIGN_OR_RETURN(PrimExpr wo,
                        WindowOut(call, "width", analyzer.Simplify(x[3]), padding[1] + padding[3],
                                  Int(pool[1]), dilation[1], strides[1], analyzer));
  return TensorSInfo(SimplifyDims({x[0], x[1], h, wo}, analyzer), data->dtype, data->device);
}

}  // namespace

void RegisterNnOps(OpRegistry& registry) {
  registry.Register({"conv2d",
                     2,
                     2,
                     true,
                     {"strides", "padding", "dilation", "groups", "out_dtype"},
                     InferConv2d});
  registry.Register(
      {"max_pool2d", 1, 1, true, {"pool_size", "strides", "padding", "dilation"}, InferMaxPool2d});
}

}  // namespace kiln::relax::op
