// Neural-network window operators over 1, 2 or 3 spatial dims, channels first (data:
// N C D1 ... Dk, k = the digit in the name). Window attributes (strides, padding, dilation,
// pool_size, output_padding, ceil_mode, count_include_pad) as relax/op/window.h states.
//
// conv1d, conv2d, conv3d (data: N C D..., weight: O I K...), attributes strides, padding,
//   dilation, groups (int, default 1), out_dtype (optional). C must equal I * groups and O
//   be divisible by groups (provably false -> error). Output (N, O, D'...) with
//   D' = floordiv(D + pad_begin + pad_end - dil * (K - 1) - 1, stride) + 1; a constant
//   D' < 1 is an error. data and weight share a dtype. Zero padding takes part in the
//   products (0 * inf is NaN, as np.pad then multiply).
// conv1d_transpose, conv2d_transpose, conv3d_transpose (data: N C D..., weight: C O/groups K..., the layout
//   of PyTorch and ONNX), attributes strides, padding, output_padding, dilation, groups,
//   out_dtype: the gradient of the convolution with respect to its input, out[n, o, y] =
//   sum over the group's channels c and taps k with y = x * stride - pad_begin + k * dil of
//   data[n, c, x] * weight[c, o mod (O/groups), k]. Output (N, O, D') with
//   D' = (D - 1) * stride - pad_begin - pad_end + dil * (K - 1) + output_padding + 1.
//   C must equal weight dim 0 and be divisible by groups.
// max_pool1d/2d/3d, avg_pool1d/2d/3d (data: N C D...), attributes pool_size (required),
//   strides (default pool_size), padding, dilation, ceil_mode; avg pools count_include_pad.
//   Output (N, C, D'...): D' as conv's with K = pool_size; with ceil_mode the division
//   rounds up, but a window must start inside the input or its begin padding (PyTorch and
//   ONNX), so D' = min(ceildiv(span, stride), floordiv(D + pad_begin - 1, stride)) + 1.
//   Max pooling: padding never wins (it reads as -inf) and a window holding a NaN gives NaN
//   (as PyTorch); integer dtypes allowed. Average pooling (floating point): the sum of the
//   window's elements inside the input divided by their count, or with count_include_pad by
//   the count of the window's taps inside the padded input [-pad_begin, D + pad_end) (taps
//   that ceil_mode adds beyond the end padding never count, as PyTorch).
#include "relax/op/op_common.h"
#include "relax/op/window.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

// The name of spatial dim `d` of `rank` in messages.
const char* AxisName(int rank, int d) {
  static const char* const kNames[] = {"depth", "height", "width"};
  return rank <= 3 ? kNames[3 - rank + d] : "spatial";
}

// floordiv(in + pads - dil * (k - 1) - 1, stride) + 1, rounding up under ceil_mode (see the
// top of this file).
absl::StatusOr<PrimExpr> WindowOut(const CallNode& call, const char* axis, const PrimExpr& in, int64_t pad_begin,
                                   int64_t pad_end, const PrimExpr& k, int64_t dil, int64_t stride, bool ceil_mode,
                                   tir::Analyzer& analyzer) {
  const int64_t pad = pad_begin + pad_end;
  PrimExpr span;
  if (auto kc = k.as_int()) {
    span = AddConst(in, pad - dil * (*kc - 1) - 1);
  } else {
    span = AddConst(in - PrimExpr(dil) * AddConst(k, -1), pad - 1);
  }
  PrimExpr out;
  if (stride == 1) {
    out = AddConst(span, 1);
  } else if (!ceil_mode) {
    out = AddConst(FloorDivDim(span, Int(stride), analyzer), 1);
  } else {
    PrimExpr up = FloorDivDim(AddConst(span, stride - 1), Int(stride), analyzer);
    PrimExpr last_start = FloorDivDim(AddConst(in, pad_begin - 1), Int(stride), analyzer);
    out = AddConst(tir::Min(up, last_start), 1);
  }
  out = analyzer.Simplify(out);
  if (auto c = out.as_int(); c && *c < 1) {
    return OpError(call, "window of ", DimStr(k), " (dilation ", dil, ") is larger than the padded ", axis, " dim ",
                   DimStr(in), " + ", pad);
  }
  AssumeAtMost(call, AddConst(PrimExpr(dil) * AddConst(k, -1), 1), AddConst(in, pad), analyzer,
               absl::StrCat("the window spans {} at run time, more than the padded ", axis, " dim (", DimStr(in),
                            " + ", pad, " = {})"));
  return out;
}

absl::StatusOr<const TensorStructInfoNode*> ChannelsFirst(const CallNode& call, size_t index, const char* what,
                                                          int ndim) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, TensorArg(call, index, what));
  if (t->ndim != kUnknownNdim && t->ndim != ndim) {
    return OpError(call, what, " must be ", ndim, "-d, got ndim ", t->ndim);
  }
  return t;
}

absl::StatusOr<StructInfo> InferConv(const CallNode& call, tir::Analyzer& analyzer, int rank) {
  const int ndim = rank + 2;
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelsFirst(call, 0, "data", ndim));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* weight, ChannelsFirst(call, 1, "weight", ndim));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, data->dtype, "data", weight->dtype, "weight"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, DTypeAttr(call, "out_dtype"));
  if (out_dtype) dtype = out_dtype;
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, ReadWindowAttrs(call, rank, WindowKind::kConv));
  KILN_ASSIGN_OR_RETURN(auto groups, IntAttr(call, "groups"));
  const int64_t g = groups.value_or(1);
  if (g <= 0) return OpError(call, "groups must be positive, got ", g);
  KILN_ASSIGN_OR_RETURN(std::string device, UnifyDevice(call, data->device, "data", weight->device, "weight"));
  if (!data->shape || !weight->shape) return TensorSInfoOfNdim(ndim, dtype, device);
  const auto& x = *data->shape;
  const auto& w = *weight->shape;
  PrimExpr c = analyzer.Simplify(x[1]);
  PrimExpr ig = analyzer.Simplify(g == 1 ? w[1] : w[1] * g);
  if (!DimsEqual(c, ig, analyzer) && DimsDiffer(c, ig, analyzer)) {
    return OpError(call, "data channels (dim 1: ", DimStr(c), ") differ from weight in_channels (dim 1: ",
                   DimStr(analyzer.Simplify(w[1])), ") * groups (", g, ")");
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
  std::vector<PrimExpr> out = {x[0], w[0]};
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    KILN_ASSIGN_OR_RETURN(PrimExpr o, WindowOut(call, AxisName(rank, d), analyzer.Simplify(x[i + 2]), win.pad_begin[i],
                                                win.pad_end[i], analyzer.Simplify(w[i + 2]), win.dilation[i],
                                                win.strides[i], false, analyzer));
    out.push_back(o);
  }
  return TensorSInfo(SimplifyDims(out, analyzer), dtype, device);
}

absl::StatusOr<StructInfo> InferConvTranspose(const CallNode& call, tir::Analyzer& analyzer, int rank) {
  const int ndim = rank + 2;
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelsFirst(call, 0, "data", ndim));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* weight, ChannelsFirst(call, 1, "weight", ndim));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, data->dtype, "data", weight->dtype, "weight"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, DTypeAttr(call, "out_dtype"));
  if (out_dtype) dtype = out_dtype;
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, ReadWindowAttrs(call, rank, WindowKind::kConvTranspose));
  KILN_ASSIGN_OR_RETURN(auto groups, IntAttr(call, "groups"));
  const int64_t g = groups.value_or(1);
  if (g <= 0) return OpError(call, "groups must be positive, got ", g);
  KILN_ASSIGN_OR_RETURN(std::string device, UnifyDevice(call, data->device, "data", weight->device, "weight"));
  if (!data->shape || !weight->shape) return TensorSInfoOfNdim(ndim, dtype, device);
  const auto& x = *data->shape;
  const auto& w = *weight->shape;
  PrimExpr c = analyzer.Simplify(x[1]);
  PrimExpr wc = analyzer.Simplify(w[0]);
  if (!DimsEqual(c, wc, analyzer) && DimsDiffer(c, wc, analyzer)) {
    return OpError(call, "data channels (dim 1: ", DimStr(c), ") differ from weight in_channels (dim 0: ", DimStr(wc),
                   ")");
  }
  AssumeEqual(call, c, wc, analyzer, "data channels (dim 1) are {} at run time, weight in_channels (dim 0) are {}");
  if (auto cc = c.as_int(); cc && *cc % g != 0) {
    return OpError(call, "data channels (", *cc, ") are not divisible by groups (", g, ")");
  }
  if (g > 1) {
    AssumeDivisible(call, c, Int(g), analyzer, "data channels (dim 1) are {} at run time, not divisible by groups ({})");
  }
  std::vector<PrimExpr> out = {x[0], analyzer.Simplify(g == 1 ? w[1] : w[1] * g)};
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    const int64_t s = win.strides[i];
    PrimExpr in = analyzer.Simplify(x[i + 2]);
    PrimExpr k = analyzer.Simplify(w[i + 2]);
    PrimExpr span = PrimExpr(win.dilation[i]) * AddConst(k, -1);
    PrimExpr o = analyzer.Simplify(AddConst(AddConst(in, -1) * PrimExpr(s) + span,
                                            win.output_padding[i] + 1 - win.pad_begin[i] - win.pad_end[i]));
    if (auto oc = o.as_int(); oc && *oc < 1) {
      return OpError(call, "the padding (", win.pad_begin[i], " + ", win.pad_end[i], ") leaves no output along the ",
                     AxisName(rank, d), " dim (", DimStr(in), " inputs, window ", DimStr(k), ")");
    }
    AssumeAtMost(call, Int(win.pad_begin[i] + win.pad_end[i]),
                 AddConst(AddConst(in, -1) * PrimExpr(s) + span, win.output_padding[i]), analyzer,
                 absl::StrCat("the padding ({}) leaves no output along the ", AxisName(rank, d),
                              " dim at run time (the full output has {} + 1)"));
    out.push_back(o);
  }
  return TensorSInfo(SimplifyDims(out, analyzer), dtype, device);
}

absl::StatusOr<StructInfo> InferPool(const CallNode& call, tir::Analyzer& analyzer, int rank, WindowKind kind) {
  const int ndim = rank + 2;
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, ChannelsFirst(call, 0, "data", ndim));
  if (kind == WindowKind::kAvgPool && data->dtype && !data->dtype->is_floating()) {
    return OpError(call, "data must have a floating-point dtype, got ", data->dtype->ToString());
  }
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, ReadWindowAttrs(call, rank, kind));
  if (!data->shape) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  const auto& x = *data->shape;
  std::vector<PrimExpr> out = {x[0], x[1]};
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    KILN_ASSIGN_OR_RETURN(PrimExpr o, WindowOut(call, AxisName(rank, d), analyzer.Simplify(x[i + 2]), win.pad_begin[i],
                                                win.pad_end[i], Int(win.pool_size[i]), win.dilation[i],
                                                win.strides[i], win.ceil_mode, analyzer));
    out.push_back(o);
  }
  return TensorSInfo(SimplifyDims(out, analyzer), data->dtype, data->device);
}

}  // namespace

void RegisterNnOps(OpRegistry& registry) {
  for (int rank = 1; rank <= 3; ++rank) {
    registry.Register({absl::StrCat("conv", rank, "d"),
                       2,
                       2,
                       true,
                       {"strides", "padding", "dilation", "groups", "out_dtype"},
                       [rank](const CallNode& call, tir::Analyzer& analyzer) { return InferConv(call, analyzer, rank); }});
    registry.Register({absl::StrCat("max_pool", rank, "d"),
                       1,
                       1,
                       true,
                       {"pool_size", "strides", "padding", "dilation", "ceil_mode"},
                       [rank](const CallNode& call, tir::Analyzer& analyzer) {
                         return InferPool(call, analyzer, rank, WindowKind::kMaxPool);
                       }});
    registry.Register({absl::StrCat("avg_pool", rank, "d"),
                       1,
                       1,
                       true,
                       {"pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad"},
                       [rank](const CallNode& call, tir::Analyzer& analyzer) {
                         return InferPool(call, analyzer, rank, WindowKind::kAvgPool);
                       }});
  }
  for (int rank = 1; rank <= 3; ++rank) {
    registry.Register({absl::StrCat("conv", rank, "d_transpose"),
                       2,
                       2,
                       true,
                       {"strides", "padding", "output_padding", "dilation", "groups", "out_dtype"},
                       [rank](const CallNode& call, tir::Analyzer& analyzer) {
                         return InferConvTranspose(call, analyzer, rank);
                       }});
  }
}

}  // namespace kiln::relax::op
