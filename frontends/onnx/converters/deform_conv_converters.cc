// DeformConv (19): a 2-D convolution whose every kernel tap reads the input at its regular
// position moved by a learned offset, bilinearly interpolated, optionally scaled by a mask.
// As ONNX's reference (onnx.reference.ops.op_deform_conv), which samples with GridSample at
// align_corners 1 and zeros padding:
//   Y[n, o, i, j] = B[o] + sum over c in o's group, tap (kh, kw):
//       W[o, c, kh, kw] * mask[n, g, kh, kw, i, j] * X[n, c](y, x),
//   y = -pad_top + stride_h * i + dilation_h * kh + offset[n, g, kh, kw, 0, i, j], x likewise,
// with g = c's offset group and X[n, c](y, x) the bilinear interpolation of the four
// neighbours, a neighbour outside the image reading 0.
// Decomposed per tap: the four neighbours' flat indices and weights (elementwise), one
// gather_elements each from X flattened to (N, G, C/G, H*W); the sampled columns
// (N, C, taps, OH*OW) then meet W in one grouped matmul. Computed in float32; static channel,
// spatial and output dims.
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

Expr F32(double v) { return ScalarConstant(v, DataType::Float32()); }

absl::StatusOr<Expr> AsFloat32(NodeContext& c, int i) {
  KILN_ASSIGN_OR_RETURN(Expr e, c.Input(i));
  KILN_ASSIGN_OR_RETURN(DataType t, c.InputDType(i));
  if (!t.is_float()) return c.Error("input '", c.input_name(i), "' must be a float tensor");
  if (t == DataType::Float32()) return e;
  return c.Call("astype", {e}, {{"dtype", DataType::Float32()}});
}

absl::StatusOr<std::vector<Value>> ConvertDeformConv(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ws, c.InputShape(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> os, c.InputShape(2));
  if (xs.size() != 4 || ws.size() != 4 || os.size() != 4) {
    return c.Unsupported("only 2-D DeformConv (X, W and offset of rank 4) is supported");
  }
  const PrimExpr n = xs[0];
  const int64_t channels = StaticDim(xs[1]), height = StaticDim(xs[2]), width = StaticDim(xs[3]);
  const int64_t out_channels = StaticDim(ws[0]), group_channels = StaticDim(ws[1]);
  const int64_t offset_channels = StaticDim(os[1]), out_h = StaticDim(os[2]), out_w = StaticDim(os[3]);
  if (channels < 0 || height < 0 || width < 0 || out_channels < 0 || group_channels < 0 || offset_channels < 0 ||
      out_h < 0 || out_w < 0 || StaticDim(ws[2]) < 0 || StaticDim(ws[3]) < 0) {
    return c.Unsupported("needs static channel, spatial and output dims");
  }
  const std::vector<int64_t> kernel = c.AttrInts("kernel_shape", {StaticDim(ws[2]), StaticDim(ws[3])});
  const std::vector<int64_t> strides = c.AttrInts("strides", {1, 1});
  const std::vector<int64_t> dilations = c.AttrInts("dilations", {1, 1});
  const std::vector<int64_t> pads = c.AttrInts("pads", {0, 0, 0, 0});
  const int64_t group = c.AttrInt("group", 1), offset_group = c.AttrInt("offset_group", 1);
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) {
    return c.Error("kernel_shape, strides and dilations need 2 values, pads 4");
  }
  if (kernel[0] != StaticDim(ws[2]) || kernel[1] != StaticDim(ws[3])) {
    return c.Error("kernel_shape (", kernel[0], ", ", kernel[1], ") does not match W's spatial dims");
  }
  for (int64_t v : {strides[0], strides[1], dilations[0], dilations[1]}) {
    if (v < 1) return c.Error("strides and dilations must be positive");
  }
  if (group < 1 || offset_group < 1 || channels != group_channels * group || out_channels % group != 0 ||
      channels % offset_group != 0) {
    return c.Error("channels (X ", channels, ", W ", out_channels, " x ", group_channels, ") do not fit group ",
                   group, " and offset_group ", offset_group);
  }
  const int64_t taps = kernel[0] * kernel[1], points = out_h * out_w;
  if (offset_channels != offset_group * taps * 2) {
    return c.Error("offset has ", offset_channels, " channels, expected offset_group * kernel taps * 2 = ",
                   offset_group * taps * 2);
  }
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t in = axis == 0 ? height : width, out = axis == 0 ? out_h : out_w;
    const int64_t span = (kernel[axis] - 1) * dilations[axis] + 1;
    const int64_t expected = (in + pads[axis] + pads[axis + 2] - span) / strides[axis] + 1;
    if (out != expected) {
      return c.Error("offset's spatial dim ", axis, " is ", out, ", the convolution gives ", expected);
    }
  }
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr x, AsFloat32(c, 0));
  KILN_ASSIGN_OR_RETURN(Expr w, AsFloat32(c, 1));
  KILN_ASSIGN_OR_RETURN(Expr offset, AsFloat32(c, 2));
  const int64_t per_offset_group = channels / offset_group;
  const PrimExpr g(offset_group), cg(per_offset_group), p(points);
  KILN_ASSIGN_OR_RETURN(Expr flat, Reshape(c, x, {n, g, cg, PrimExpr(height * width)}));
  KILN_ASSIGN_OR_RETURN(offset, Reshape(c, offset, {n, g, PrimExpr(taps), PrimExpr(2), p}));
  const std::vector<PrimExpr> offset_shape = {n, g, PrimExpr(taps), PrimExpr(2), p};
  Expr mask;
  if (c.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ms, c.InputShape(4));
    if (ms.size() != 4 || StaticDim(ms[1]) != offset_group * taps) {
      return c.Error("mask must have offset_group * kernel taps = ", offset_group * taps, " channels");
    }
    KILN_ASSIGN_OR_RETURN(mask, AsFloat32(c, 4));
    KILN_ASSIGN_OR_RETURN(mask, Reshape(c, mask, {n, g, PrimExpr(taps), p}));
  }
  const std::vector<PrimExpr> mask_shape = {n, g, PrimExpr(taps), p};
  const std::vector<PrimExpr> tap_shape = {n, g, PrimExpr(2), p};

  std::vector<Expr> columns;
  for (int64_t k = 0; k < taps; ++k) {
    const int64_t kh = k / kernel[1], kw = k % kernel[1];
    // The regular sampling positions of this tap at each output point.
    std::vector<double> base_y(static_cast<size_t>(points)), base_x(static_cast<size_t>(points));
    for (int64_t q = 0; q < points; ++q) {
      base_y[q] = static_cast<double>(-pads[0] + strides[0] * (q / out_w) + dilations[0] * kh);
      base_x[q] = static_cast<double>(-pads[1] + strides[1] * (q % out_w) + dilations[1] * kw);
    }
    KILN_ASSIGN_OR_RETURN(Expr tap_offset, TakeIndex(c, offset, offset_shape, 2, k));
    KILN_ASSIGN_OR_RETURN(Expr dy, TakeIndex(c, tap_offset, tap_shape, 2, 0));
    KILN_ASSIGN_OR_RETURN(Expr dx, TakeIndex(c, tap_offset, tap_shape, 2, 1));
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("add", {dy, relax::Constant(DataFromDoubles(base_y, DataType::Float32(), {points}))}));
    KILN_ASSIGN_OR_RETURN(Expr xx, c.Call("add", {dx, relax::Constant(DataFromDoubles(base_x, DataType::Float32(), {points}))}));
    KILN_ASSIGN_OR_RETURN(Expr y0, c.Call("floor", {y}));
    KILN_ASSIGN_OR_RETURN(Expr x0, c.Call("floor", {xx}));
    KILN_ASSIGN_OR_RETURN(Expr ty, c.Call("subtract", {y, y0}));
    KILN_ASSIGN_OR_RETURN(Expr tx, c.Call("subtract", {xx, x0}));
    KILN_ASSIGN_OR_RETURN(Expr uy, c.Call("subtract", {F32(1), ty}));
    KILN_ASSIGN_OR_RETURN(Expr ux, c.Call("subtract", {F32(1), tx}));
    Expr sum;
    for (int corner = 0; corner < 4; ++corner) {
      const int cy = corner / 2, cx = corner % 2;
      KILN_ASSIGN_OR_RETURN(Expr yi, c.Call("add", {y0, F32(cy)}));
      KILN_ASSIGN_OR_RETURN(Expr xi, c.Call("add", {x0, F32(cx)}));
      // Inside the image, else the neighbour reads 0 (its weight is dropped).
      KILN_ASSIGN_OR_RETURN(Expr y_low, c.Call("greater_equal", {yi, F32(0)}));
      KILN_ASSIGN_OR_RETURN(Expr y_high, c.Call("less", {yi, F32(static_cast<double>(height))}));
      KILN_ASSIGN_OR_RETURN(Expr x_low, c.Call("greater_equal", {xi, F32(0)}));
      KILN_ASSIGN_OR_RETURN(Expr x_high, c.Call("less", {xi, F32(static_cast<double>(width))}));
      KILN_ASSIGN_OR_RETURN(Expr inside, c.Call("logical_and", {y_low, y_high}));
      KILN_ASSIGN_OR_RETURN(inside, c.Call("logical_and", {inside, x_low}));
      KILN_ASSIGN_OR_RETURN(inside, c.Call("logical_and", {inside, x_high}));
      KILN_ASSIGN_OR_RETURN(Expr weight, c.Call("multiply", {cy ? ty : uy, cx ? tx : ux}));
      KILN_ASSIGN_OR_RETURN(weight, c.Call("where", {inside, weight, F32(0)}));
      // The flat index, clamped so that the read stays inside.
      KILN_ASSIGN_OR_RETURN(Expr yc, c.Call("maximum", {yi, F32(0)}));
      KILN_ASSIGN_OR_RETURN(yc, c.Call("minimum", {yc, F32(static_cast<double>(height - 1))}));
      KILN_ASSIGN_OR_RETURN(Expr xc, c.Call("maximum", {xi, F32(0)}));
      KILN_ASSIGN_OR_RETURN(xc, c.Call("minimum", {xc, F32(static_cast<double>(width - 1))}));
      KILN_ASSIGN_OR_RETURN(Expr row, c.Call("multiply", {yc, F32(static_cast<double>(width))}));
      KILN_ASSIGN_OR_RETURN(Expr index, c.Call("add", {row, xc}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("astype", {index}, {{"dtype", DataType::Int64()}}));
      KILN_ASSIGN_OR_RETURN(index, Reshape(c, index, {n, g, PrimExpr(1), p}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("broadcast_to", {index, relax::ShapeExpr({n, g, cg, p})}));
      KILN_ASSIGN_OR_RETURN(Expr value, c.Call("gather_elements", {flat, index}, {{"axis", int64_t{3}}}));
      KILN_ASSIGN_OR_RETURN(weight, Reshape(c, weight, {n, g, PrimExpr(1), p}));
      KILN_ASSIGN_OR_RETURN(value, c.Call("multiply", {value, weight}));
      if (sum.defined()) {
        KILN_ASSIGN_OR_RETURN(sum, c.Call("add", {sum, value}));
      } else {
        sum = value;
      }
    }
    if (mask.defined()) {
      KILN_ASSIGN_OR_RETURN(Expr m, TakeIndex(c, mask, mask_shape, 2, k));
      KILN_ASSIGN_OR_RETURN(m, Reshape(c, m, {n, g, PrimExpr(1), p}));
      KILN_ASSIGN_OR_RETURN(sum, c.Call("multiply", {sum, m}));
    }
    KILN_ASSIGN_OR_RETURN(sum, Reshape(c, sum, {n, PrimExpr(channels), PrimExpr(1), p}));
    columns.push_back(sum);
  }
  Expr cols = columns[0];
  if (columns.size() > 1) {
    KILN_ASSIGN_OR_RETURN(cols, c.Call("concat", {relax::Tuple(columns)}, {{"axis", int64_t{2}}}));
  }
  // (N, C, taps, P) -> (N, group, C/group * taps, P): a group's channels and taps in W's order.
  KILN_ASSIGN_OR_RETURN(cols, Reshape(c, cols, {n, PrimExpr(group), PrimExpr(group_channels * taps), p}));
  KILN_ASSIGN_OR_RETURN(w, Reshape(c, w, {PrimExpr(1), PrimExpr(group), PrimExpr(out_channels / group),
                                          PrimExpr(group_channels * taps)}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("matmul", {w, cols}));
  KILN_ASSIGN_OR_RETURN(out, Reshape(c, out, {n, PrimExpr(out_channels), PrimExpr(out_h), PrimExpr(out_w)}));
  if (c.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(Expr b, AsFloat32(c, 3));
    KILN_ASSIGN_OR_RETURN(b, Reshape(c, b, {PrimExpr(1), PrimExpr(out_channels), PrimExpr(1), PrimExpr(1)}));
    KILN_ASSIGN_OR_RETURN(out, c.Call("add", {out, b}));
  }
  if (dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(out, c.Call("astype", {out}, {{"dtype", dtype}}));
  }
  return Outputs(out);
}

}  // namespace

void RegisterDeformConvConverters(ConverterRegistry& r) { r.Register("DeformConv", ConvertDeformConv, 19); }

}  // namespace kiln::frontends::onnx
