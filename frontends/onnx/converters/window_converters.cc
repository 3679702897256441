// ONNX window operators over 1-3 spatial dims: Conv, ConvInteger, QLinearConv, ConvTranspose,
// MaxPool, AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool.
//
// Padding: explicit `pads` (begin..., end...) or auto_pad: VALID (none), SAME_UPPER /
// SAME_LOWER (output = ceil(input / stride), the odd pad at the end / at the begin), which
// need static spatial dims. Version differences: MaxPool's dilations and ceil_mode exist
// from opset 10 (absent before: their defaults), AveragePool's count_include_pad from 7,
// ceil_mode from 10, dilations from 19; Conv/ConvTranspose are the same from opset 1 on.
// ConvTranspose with output_shape derives the padding from it as ONNX states (the odd pad at
// the begin unless SAME_UPPER); a negative end padding (an output larger than the inputs
// reach) becomes output_padding, whose positions nothing reaches.
// MaxPool's Indices output: max_pool_indices.cc. Global pools are mean / max over the
// spatial axes, keeping them as 1.
#include <algorithm>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/converters/max_pool_indices.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;

struct Window {
  int rank = 0;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins, then ends
};

// Python's floor division (ONNX's formulas are written with //).
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

absl::StatusOr<int> SpatialRank(NodeContext& c, const std::vector<PrimExpr>& in, int max_rank) {
  const int rank = static_cast<int>(in.size()) - 2;
  if (rank < 1 || rank > max_rank) {
    return c.Unsupported("supports 1 to ", max_rank, " spatial dims (input of rank 3 to ", max_rank + 2, "), got rank ",
                         in.size());
  }
  return rank;
}

absl::StatusOr<Window> ReadWindow(NodeContext& c, const std::vector<PrimExpr>& in, std::vector<int64_t> kernel,
                                  bool has_dilations) {
  Window w;
  w.rank = static_cast<int>(in.size()) - 2;
  const size_t r = static_cast<size_t>(w.rank);
  w.kernel = std::move(kernel);
  w.strides = c.AttrInts("strides", std::vector<int64_t>(r, 1));
  w.dilations = has_dilations ? c.AttrInts("dilations", std::vector<int64_t>(r, 1)) : std::vector<int64_t>(r, 1);
  w.pads = c.AttrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (w.kernel.size() != r || w.strides.size() != r || w.dilations.size() != r || w.pads.size() != 2 * r) {
    return c.Error("kernel_shape, strides and dilations need ", r, " values and pads ", 2 * r, " for a ", r,
                   "-D input");
  }
  for (size_t i = 0; i < r; ++i) {
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1) {
      return c.Error("strides, dilations and kernel_shape must be >= 1");
    }
  }
  for (int64_t p : w.pads) {
    if (p < 0) return c.Unsupported("negative pads are not supported");
  }
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < r; ++i) {
      std::vector<int64_t> dim;
      if (!AllConstant({in[2 + i]}, &dim)) return c.Unsupported("auto_pad ", auto_pad, " needs static spatial dims");
      const int64_t out = (dim[0] + w.strides[i] - 1) / w.strides[i];
      const int64_t total =
          std::max<int64_t>((out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - dim[0], 0);
      const int64_t small = total / 2, large = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pads[r + i] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET") {
    return c.Error("unknown auto_pad '", auto_pad, "'");
  }
  return w;
}

// The kernel's spatial dims: kernel_shape, else the weight's (which must be static).
absl::StatusOr<std::vector<int64_t>> KernelShape(NodeContext& c, const std::vector<PrimExpr>& weight) {
  std::vector<int64_t> kernel = c.AttrInts("kernel_shape");
  if (!kernel.empty()) return kernel;
  std::vector<PrimExpr> spatial(weight.begin() + 2, weight.end());
  if (!AllConstant(spatial, &kernel)) return c.Unsupported("needs a kernel of static shape");
  return kernel;
}

// y + bias reshaped to (1, C, 1, ...).
absl::StatusOr<Expr> AddChannelBias(NodeContext& c, Expr y, Expr bias, const PrimExpr& channels, int rank) {
  std::vector<PrimExpr> shape = {PrimExpr(1), channels};
  for (int i = 0; i < rank; ++i) shape.push_back(PrimExpr(1));
  KILN_ASSIGN_OR_RETURN(bias, Reshape(c, bias, shape));
  return c.Call("add", {y, bias});
}

// conv<rank>d of x and wt (inputs 0 and `weight_input`, possibly transformed) with the
// node's window.
absl::StatusOr<Expr> ConvOf(NodeContext& c, Expr x, Expr wt, int* rank_out = nullptr, int weight_input = 1) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> weight, c.InputShape(weight_input));
  KILN_ASSIGN_OR_RETURN(int rank, SpatialRank(c, in, 3));
  if (weight.size() != in.size()) return c.Error("the weight's rank (", weight.size(), ") differs from the input's");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, KernelShape(c, weight));
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(c, in, kernel, true));
  if (rank_out != nullptr) *rank_out = rank;
  return c.Call(absl::StrCat("conv", rank, "d"), {std::move(x), std::move(wt)},
                {{"strides", w.strides},
                 {"padding", w.pads},
                 {"dilation", w.dilations},
                 {"groups", c.AttrInt("group", 1)}});
}

absl::StatusOr<std::vector<Value>> ConvertConv(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr wt, c.Input(1));
  int rank = 0;
  KILN_ASSIGN_OR_RETURN(Expr y, ConvOf(c, x, wt, &rank));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> weight, c.InputShape(1));
    KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(2));
    KILN_ASSIGN_OR_RETURN(y, AddChannelBias(c, y, bias, weight[0], rank));
  }
  return Outputs(y);
}

// Input `value` (x or w) minus its zero point (when present) in float64, where the integer
// products of a convolution stay exact for 8-bit operands. x's zero point is per tensor; w's
// per tensor or, 1-D, per output channel (its dim 0).
absl::StatusOr<Expr> ShiftedByZeroPoint(NodeContext& c, int value, int zero_point) {
  const tir::DataType f64 = tir::DataType::Float(64);
  KILN_ASSIGN_OR_RETURN(Expr v, c.Input(value));
  KILN_ASSIGN_OR_RETURN(v, c.Call("astype", {v}, {{"dtype", f64}}));
  if (!c.has_input(zero_point)) return v;
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> zp_shape, c.InputShape(zero_point));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> v_shape, c.InputShape(value));
  KILN_ASSIGN_OR_RETURN(Expr zp, c.Input(zero_point));
  KILN_ASSIGN_OR_RETURN(zp, c.Call("astype", {zp}, {{"dtype", f64}}));
  const bool weight = value != 0;
  if (zp_shape.size() == 1 && weight) {
    std::vector<PrimExpr> per_channel(v_shape.size(), PrimExpr(1));
    per_channel[0] = zp_shape[0];
    KILN_ASSIGN_OR_RETURN(zp, Reshape(c, zp, per_channel));
  } else if (!zp_shape.empty()) {
    std::vector<int64_t> dims;
    if (!AllConstant(zp_shape, &dims) || dims.size() != 1 || dims[0] != 1) {
      return c.Unsupported("zero point '", c.input_name(zero_point), "' of this shape");
    }
    KILN_ASSIGN_OR_RETURN(zp, Reshape(c, zp, {}));
  }
  return c.Call("subtract", {v, zp});
}

// ConvInteger (10): Conv of (x - x_zero_point) and (w - w_zero_point; per output channel
// when 1-D) as int32, the padding zero after the shift (as ONNX's reference). Computed in
// float64, exact for 8-bit operands.
absl::StatusOr<std::vector<Value>> ConvertConvInteger(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, ShiftedByZeroPoint(c, 0, 2));
  KILN_ASSIGN_OR_RETURN(Expr wt, ShiftedByZeroPoint(c, 1, 3));
  KILN_ASSIGN_OR_RETURN(Expr y, ConvOf(c, x, wt));
  KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", tir::DataType::Int32()}}));
  return Outputs(y);
}

// QLinearConv (10): inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B. As ONNX's reference: the convolution of the zero-point-shifted operands
// (ConvInteger's, exact in float64) plus the int32 bias B, times x_scale * w_scale / y_scale
// (computed in the scales' float32; w_scale per tensor or per output channel), plus
// y_zero_point, rounded half to even and saturated to y's type (y_zero_point's, else x's:
// uint8 or int8).
absl::StatusOr<std::vector<Value>> ConvertQLinearConv(NodeContext& c) {
  const tir::DataType f64 = tir::DataType::Float(64);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> weight, c.InputShape(3));
  if (weight.size() < 3) return c.Error("w must have rank >= 3 (M, C / group, kernel...), got rank ", weight.size());
  const int64_t out_channels = StaticDim(weight[0]);
  // A scalar (per tensor) or, for w_scale, one value per output channel: as (1, M, 1, ...).
  auto scale_or_zero_point = [&](int i, bool per_channel_allowed) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(i));
    KILN_ASSIGN_OR_RETURN(Expr v, c.Input(i));
    std::vector<int64_t> dims;
    if (!AllConstant(shape, &dims)) return c.Unsupported("input '", c.input_name(i), "' of run-time shape");
    int64_t numel = 1;
    for (int64_t d : dims) numel *= d;
    if (numel == 1) return Reshape(c, v, {});
    if (!per_channel_allowed || dims.size() != 1 || dims[0] != out_channels) {
      return c.Error("input '", c.input_name(i), "' must be a scalar",
                     per_channel_allowed ? " or 1-D with one value per output channel" : "", ", got ", numel,
                     " values");
    }
    std::vector<PrimExpr> channel_shape(weight.size(), PrimExpr(1));
    channel_shape[1] = PrimExpr(out_channels);
    return Reshape(c, v, channel_shape);
  };
  KILN_ASSIGN_OR_RETURN(Expr x_scale, scale_or_zero_point(1, false));
  KILN_ASSIGN_OR_RETURN(Expr w_scale, scale_or_zero_point(4, true));
  KILN_ASSIGN_OR_RETURN(Expr y_scale, scale_or_zero_point(6, false));
  for (int i : {1, 4, 6}) {
    KILN_ASSIGN_OR_RETURN(tir::DataType scale_dtype, c.InputDType(i));
    if (scale_dtype != tir::DataType::Float32()) {
      return c.Error("scale '", c.input_name(i), "' must be float32, got ", scale_dtype.ToString());
    }
  }
  KILN_ASSIGN_OR_RETURN(tir::DataType x_dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(tir::DataType y_dtype, c.has_input(7) ? c.InputDType(7) : c.InputDType(0));
  if (y_dtype != tir::DataType::UInt(8) && y_dtype != tir::DataType::Int(8)) {
    return c.Error("y must be uint8 or int8, got ", y_dtype.ToString());
  }
  if (x_dtype != tir::DataType::UInt(8) && x_dtype != tir::DataType::Int(8)) {
    return c.Error("x must be uint8 or int8, got ", x_dtype.ToString());
  }

  KILN_ASSIGN_OR_RETURN(Expr x, ShiftedByZeroPoint(c, 0, 2));
  KILN_ASSIGN_OR_RETURN(Expr wt, ShiftedByZeroPoint(c, 3, 5));
  int rank = 0;
  // ConvOf reads the geometry from inputs 0 and 1: here x and w are inputs 0 and 3.
  KILN_ASSIGN_OR_RETURN(Expr acc, ConvOf(c, x, wt, &rank, /*weight_input=*/3));
  if (c.has_input(8)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bias_shape, c.InputShape(8));
    if (bias_shape.size() != 1) return c.Error("B must be 1-D, got rank ", bias_shape.size());
    KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(8));
    KILN_ASSIGN_OR_RETURN(bias, c.Call("astype", {bias}, {{"dtype", f64}}));
    KILN_ASSIGN_OR_RETURN(acc, AddChannelBias(c, acc, bias, bias_shape[0], rank));
  }
  KILN_ASSIGN_OR_RETURN(Expr factor, c.Call("multiply", {x_scale, w_scale}));
  KILN_ASSIGN_OR_RETURN(factor, c.Call("divide", {factor, y_scale}));
  KILN_ASSIGN_OR_RETURN(factor, c.Call("astype", {factor}, {{"dtype", f64}}));
  KILN_ASSIGN_OR_RETURN(Expr r, c.Call("multiply", {acc, factor}));
  if (c.has_input(7)) {
    KILN_ASSIGN_OR_RETURN(Expr zp, scale_or_zero_point(7, false));
    KILN_ASSIGN_OR_RETURN(zp, c.Call("astype", {zp}, {{"dtype", f64}}));
    KILN_ASSIGN_OR_RETURN(r, c.Call("add", {r, zp}));
  }
  const bool is_signed = y_dtype == tir::DataType::Int(8);
  KILN_ASSIGN_OR_RETURN(r, c.Call("round", {r}));
  KILN_ASSIGN_OR_RETURN(r, c.Call("maximum", {r, ScalarConstant(is_signed ? -128 : 0, f64)}));
  KILN_ASSIGN_OR_RETURN(r, c.Call("minimum", {r, ScalarConstant(is_signed ? 127 : 255, f64)}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("astype", {r}, {{"dtype", y_dtype}}));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertConvTranspose(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> weight, c.InputShape(1));
  KILN_ASSIGN_OR_RETURN(int rank, SpatialRank(c, in, 3));
  const size_t r = static_cast<size_t>(rank);
  if (weight.size() != in.size()) return c.Error("the weight's rank (", weight.size(), ") differs from the input's");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, KernelShape(c, weight));
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  Window w;
  w.kernel = kernel;
  w.strides = c.AttrInts("strides", std::vector<int64_t>(r, 1));
  w.dilations = c.AttrInts("dilations", std::vector<int64_t>(r, 1));
  w.pads = c.AttrInts("pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> output_padding = c.AttrInts("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> output_shape = c.AttrInts("output_shape");
  if (w.kernel.size() != r || w.strides.size() != r || w.dilations.size() != r || w.pads.size() != 2 * r ||
      output_padding.size() != r) {
    return c.Error("kernel_shape, strides, dilations and output_padding need ", r, " values and pads ", 2 * r);
  }
  if (output_shape.size() > r) output_shape.erase(output_shape.begin(), output_shape.end() - rank);
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < r; ++i) {
      std::vector<int64_t> dim;
      if (!AllConstant({in[2 + i]}, &dim)) return c.Unsupported("output_shape and auto_pad need static spatial dims");
      const int64_t target = output_shape.empty() ? dim[0] * w.strides[i] : output_shape[i];
      const int64_t total = w.strides[i] * (dim[0] - 1) + output_padding[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 -
                            target;
      const bool upper = auto_pad == "SAME_UPPER";
      w.pads[i] = upper ? FloorDiv(total, 2) : total - FloorDiv(total, 2);
      w.pads[r + i] = upper ? total - FloorDiv(total, 2) : FloorDiv(total, 2);
      if (w.pads[r + i] < 0) {
        output_padding[i] -= w.pads[r + i];
        w.pads[r + i] = 0;
      }
    }
  } else if (auto_pad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  }
  for (int64_t p : w.pads) {
    if (p < 0) return c.Unsupported("a negative begin padding is not supported");
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr wt, c.Input(1));
  const int64_t groups = c.AttrInt("group", 1);
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call(absl::StrCat("conv", rank, "d_transpose"), {x, wt},
                                       {{"strides", w.strides},
                                        {"padding", w.pads},
                                        {"output_padding", output_padding},
                                        {"dilation", w.dilations},
                                        {"groups", groups}}));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(2));
    KILN_ASSIGN_OR_RETURN(y, AddChannelBias(c, y, bias, Simplify(weight[1] * PrimExpr(groups)), rank));
  }
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertPool(NodeContext& c, bool average) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(int rank, SpatialRank(c, in, 3));
  const int64_t storage_order = average ? 0 : c.AttrInt("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) return c.Error("storage_order must be 0 or 1 (got ", storage_order, ")");
  const bool has_dilations = average ? c.opset() >= 19 : c.opset() >= 10;
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(c, in, c.AttrInts("kernel_shape"), has_dilations));
  relax::Attrs attrs = {{"pool_size", w.kernel},
                        {"strides", w.strides},
                        {"padding", w.pads},
                        {"dilation", w.dilations},
                        {"ceil_mode", c.opset() >= 10 && c.AttrInt("ceil_mode", 0) != 0}};
  if (average) attrs["count_include_pad"] = c.opset() >= 7 && c.AttrInt("count_include_pad", 0) != 0;
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call(absl::StrCat(average ? "avg_pool" : "max_pool", rank, "d"), {x}, attrs));
  if (average || !c.has_output(1)) return Outputs(y);
  // storage_order only changes the Indices output.
  KILN_ASSIGN_OR_RETURN(Expr indices, MaxPoolIndices(c, x, in, y, w.kernel, w.strides, w.dilations, w.pads,
                                                     /*column_major=*/storage_order == 1));
  return std::vector<Value>{Value::Of(y), Value::Of(indices)};
}

// LpPool: (sum over the window of |x|^p)^(1/p), padding adding zeros: the average of |x|^p
// over the whole window (count_include_pad), times the kernel's size, as ONNX's reference. Dilations and ceil_mode exist from opset 18.
absl::StatusOr<std::vector<Value>> ConvertLpPool(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(int rank, SpatialRank(c, in, 3));
  KILN_ASSIGN_OR_RETURN(tir::DataType dtype, c.InputDType(0));
  if (!dtype.is_floating()) return c.Error("needs a float input, got ", dtype.ToString());
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(c, in, c.AttrInts("kernel_shape"), c.opset() >= 18));
  const int64_t p = c.AttrInt("p", 2);
  if (p < 1) return c.Error("p must be >= 1, got ", p);
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr magnitude, c.Call("abs", {x}));
  KILN_ASSIGN_OR_RETURN(Expr powered, c.Call("power", {magnitude, ScalarConstant(static_cast<double>(p), dtype)}));
  relax::Attrs attrs = {{"pool_size", w.kernel},
                        {"strides", w.strides},
                        {"padding", w.pads},
                        {"dilation", w.dilations},
                        {"ceil_mode", c.opset() >= 18 && c.AttrInt("ceil_mode", 0) != 0},
                        {"count_include_pad", true}};
  KILN_ASSIGN_OR_RETURN(Expr average, c.Call(absl::StrCat("avg_pool", rank, "d"), {powered}, attrs));
  int64_t kernel_size = 1;
  for (int64_t k : w.kernel) kernel_size *= k;
  KILN_ASSIGN_OR_RETURN(Expr sum, c.Call("multiply", {average, ScalarConstant(static_cast<double>(kernel_size), dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("power", {sum, ScalarConstant(1.0 / static_cast<double>(p), dtype)}));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertGlobalPool(NodeContext& c, const char* reduction) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  if (in.size() < 3) return c.Error("needs an input of rank >= 3 (N, C, spatial...), got rank ", in.size());
  std::vector<int64_t> axes;
  for (size_t d = 2; d < in.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call(reduction, {x}, {{"axis", axes}, {"keepdims", true}}));
  return Outputs(y);
}

}  // namespace

void RegisterWindowConverters(ConverterRegistry& r) {
  r.Register("Conv", ConvertConv);
  r.Register("ConvTranspose", ConvertConvTranspose);
  r.Register("ConvInteger", ConvertConvInteger, 10);
  r.Register("QLinearConv", ConvertQLinearConv, 10);
  r.Register("MaxPool", [](NodeContext& c) { return ConvertPool(c, false); });
  r.Register("AveragePool", [](NodeContext& c) { return ConvertPool(c, true); });
  r.Register("GlobalAveragePool", [](NodeContext& c) { return ConvertGlobalPool(c, "mean"); });
  r.Register("LpPool", ConvertLpPool, 2);
  r.Register("GlobalMaxPool", [](NodeContext& c) { return ConvertGlobalPool(c, "max"); });
}

}  // namespace kiln::frontends::onnx
