// RoiAlign (opsets 10, 16): for each region of interest r (rois (R, 4): x1, y1, x2, y2 in
// X's coordinates times spatial_scale; batch_indices (R) pick its image), an output_height x
// output_width grid of bins, each the average (mode "avg") or maximum ("max") of
// sampling_ratio^2 bilinear samples at the bin's sub-cell centres; half_pixel (16's default)
// shifts the corners by -0.5, output_half_pixel (opset 10's behaviour) makes a region at
// least 1 x 1 instead. Samples outside [-1, H] x [-1, W] count as 0, as ONNX's reference.
//
// Bilinear sampling is separable: per region, a (P*S, H) matrix Ay whose row holds the two
// row weights (hy at y_low, ly at y_high, 0 for a sample outside) and a (Q*S, W) matrix Ax
// likewise; Ay @ X[b] @ Ax^T is every sample of every channel. "avg" is the mean of each
// S x S block of that. "max" takes the maximum of the four corner terms per sample (ONNX's
// reference), so Ay and Ax are kept as their low and high halves: four matrix products, one
// per corner. sampling_ratio 0 (a grid that depends on the regions' run-time sizes) is not
// supported; H, W, C and the output size must be static.
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

struct AxisWeights {
  Expr low, high;  // (R, samples, extent): the weight at the lower / upper neighbour
};

absl::StatusOr<std::vector<Value>> ConvertRoiAlign(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> x_shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> roi_shape, c.InputShape(1));
  if (x_shape.size() != 4) return c.Error("X must be 4-D (N, C, H, W), got ", x_shape.size(), " dims");
  if (roi_shape.size() != 2 || StaticDim(roi_shape[1]) != 4) return c.Error("rois must have shape (num_rois, 4)");
  const int64_t channels = StaticDim(x_shape[1]), height = StaticDim(x_shape[2]), width = StaticDim(x_shape[3]);
  if (channels < 0 || height < 0 || width < 0) return c.Unsupported("needs static C, H and W");
  const int64_t out_h = c.AttrInt("output_height", 1), out_w = c.AttrInt("output_width", 1);
  const int64_t ratio = c.AttrInt("sampling_ratio", 0);
  if (out_h < 1 || out_w < 1) return c.Error("output_height and output_width must be >= 1");
  if (ratio < 0) return c.Error("sampling_ratio must be >= 0 (got ", ratio, ")");
  if (ratio == 0) return c.Unsupported("sampling_ratio 0 (a sampling grid sized by each region at run time)");
  const std::string mode = c.AttrString("mode", "avg");
  if (mode != "avg" && mode != "max") return c.Error("mode must be 'avg' or 'max' (got '", mode, "')");
  const std::string transform =
      c.AttrString("coordinate_transformation_mode", c.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    return c.Error("coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel' (got '", transform, "')");
  }
  const bool half_pixel = transform == "half_pixel";
  const double scale = c.AttrFloat("spatial_scale", 1.0);
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_floating()) return c.Error("X must be floating-point (got ", dtype.ToString(), ")");
  const DataType compute = dtype == DataType::Float(64) ? dtype : DataType::Float32();
  auto op = [&](const std::string& name, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c.Call(name, std::move(args), std::move(attrs));
  };
  auto scalar = [&](double v) { return ScalarConstant(v, compute); };

  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr rois, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr batch_indices, c.Input(2));
  KILN_ASSIGN_OR_RETURN(DataType index_dtype, c.InputDType(2));
  if (!index_dtype.is_integer()) return c.Error("batch_indices must be integers");
  KILN_ASSIGN_OR_RETURN(x, op("astype", {x}, {{"dtype", compute}}));
  KILN_ASSIGN_OR_RETURN(rois, op("astype", {rois}, {{"dtype", compute}}));
  const PrimExpr r = roi_shape[0];
  const PrimExpr one(int64_t{1});

  // Per axis (0: y from columns 1 and 3, 1: x from columns 0 and 2): the sample weights.
  auto axis_weights = [&](int64_t start_column, int64_t bins, int64_t extent) -> absl::StatusOr<AxisWeights> {
    KILN_ASSIGN_OR_RETURN(Expr start, TakeIndex(c, rois, {r, PrimExpr(4)}, 1, start_column));
    KILN_ASSIGN_OR_RETURN(Expr end, TakeIndex(c, rois, {r, PrimExpr(4)}, 1, start_column + 2));
    const double offset = half_pixel ? 0.5 : 0.0;
    KILN_ASSIGN_OR_RETURN(start, op("multiply", {start, scalar(scale)}));
    KILN_ASSIGN_OR_RETURN(start, op("subtract", {start, scalar(offset)}));
    KILN_ASSIGN_OR_RETURN(end, op("multiply", {end, scalar(scale)}));
    KILN_ASSIGN_OR_RETURN(end, op("subtract", {end, scalar(offset)}));
    KILN_ASSIGN_OR_RETURN(Expr size, op("subtract", {end, start}));
    if (!half_pixel) {
      KILN_ASSIGN_OR_RETURN(size, op("maximum", {size, scalar(1.0)}));  // malformed regions made 1 x 1
    }
    KILN_ASSIGN_OR_RETURN(Expr bin, op("divide", {size, scalar(static_cast<double>(bins))}));
    // Sample k of bin b sits at start + b * bin + (k + 0.5) * bin / S.
    std::vector<double> bin_index, sub_cell;
    for (int64_t b = 0; b < bins; ++b) {
      for (int64_t k = 0; k < ratio; ++k) {
        bin_index.push_back(static_cast<double>(b));
        sub_cell.push_back((static_cast<double>(k) + 0.5) / static_cast<double>(ratio));
      }
    }
    const int64_t samples = bins * ratio;
    KILN_ASSIGN_OR_RETURN(start, Reshape(c, start, {r, one}));
    KILN_ASSIGN_OR_RETURN(bin, Reshape(c, bin, {r, one}));
    const Expr bin_k = relax::Constant(DataFromDoubles(bin_index, compute, {1, samples}));
    const Expr sub_k = relax::Constant(DataFromDoubles(sub_cell, compute, {1, samples}));
    KILN_ASSIGN_OR_RETURN(Expr whole, op("multiply", {bin_k, bin}));
    KILN_ASSIGN_OR_RETURN(Expr part, op("multiply", {sub_k, bin}));
    KILN_ASSIGN_OR_RETURN(Expr at, op("add", {start, whole}));
    KILN_ASSIGN_OR_RETURN(at, op("add", {at, part}));  // (R, samples)
    // Inside [-1, extent]; clamped to [0, extent - 1] for the neighbours.
    KILN_ASSIGN_OR_RETURN(Expr above, op("greater_equal", {at, scalar(-1.0)}));
    KILN_ASSIGN_OR_RETURN(Expr below, op("less_equal", {at, scalar(static_cast<double>(extent))}));
    KILN_ASSIGN_OR_RETURN(Expr inside, op("logical_and", {above, below}));
    KILN_ASSIGN_OR_RETURN(Expr valid, op("astype", {inside}, {{"dtype", compute}}));
    KILN_ASSIGN_OR_RETURN(at, op("maximum", {at, scalar(0.0)}));
    KILN_ASSIGN_OR_RETURN(Expr low, op("floor", {at}));
    const double last = static_cast<double>(extent - 1);
    KILN_ASSIGN_OR_RETURN(Expr at_edge, op("greater_equal", {low, scalar(last)}));
    KILN_ASSIGN_OR_RETURN(low, op("where", {at_edge, scalar(last), low}));
    KILN_ASSIGN_OR_RETURN(at, op("where", {at_edge, scalar(last), at}));
    KILN_ASSIGN_OR_RETURN(Expr high, op("add", {low, scalar(1.0)}));
    KILN_ASSIGN_OR_RETURN(high, op("minimum", {high, scalar(last)}));
    KILN_ASSIGN_OR_RETURN(Expr frac, op("subtract", {at, low}));        // l
    KILN_ASSIGN_OR_RETURN(Expr rest, op("subtract", {scalar(1.0), frac}));  // h = 1 - l
    KILN_ASSIGN_OR_RETURN(frac, op("multiply", {frac, valid}));
    KILN_ASSIGN_OR_RETURN(rest, op("multiply", {rest, valid}));
    auto weighted_one_hot = [&](const Expr& index, const Expr& weight) -> absl::StatusOr<Expr> {
      KILN_ASSIGN_OR_RETURN(Expr i, op("astype", {index}, {{"dtype", DataType::Int64()}}));
      KILN_ASSIGN_OR_RETURN(Expr hot, op("one_hot", {i}, {{"depth", extent}, {"axis", int64_t{-1}}, {"dtype", compute}}));
      KILN_ASSIGN_OR_RETURN(Expr w, Reshape(c, weight, {r, PrimExpr(samples), one}));
      return op("multiply", {hot, w});  // (R, samples, extent)
    };
    AxisWeights out;
    KILN_ASSIGN_OR_RETURN(out.low, weighted_one_hot(low, rest));
    KILN_ASSIGN_OR_RETURN(out.high, weighted_one_hot(high, frac));
    return out;
  };
  KILN_ASSIGN_OR_RETURN(AxisWeights ay, axis_weights(1, out_h, height));
  KILN_ASSIGN_OR_RETURN(AxisWeights ax, axis_weights(0, out_w, width));

  // Each region's image (R, C, H, W).
  KILN_ASSIGN_OR_RETURN(batch_indices, op("astype", {batch_indices}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr image, op("take", {x, batch_indices}, {{"axis", int64_t{0}}}));
  const int64_t sy = out_h * ratio, sx = out_w * ratio;
  // Ay (R, 1, sy, H) @ image (R, C, H, W) @ Ax^T (R, 1, W, sx) -> (R, C, sy, sx).
  auto sample = [&](const Expr& wy, const Expr& wx) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr rows, Reshape(c, wy, {r, one, PrimExpr(sy), PrimExpr(height)}));
    KILN_ASSIGN_OR_RETURN(Expr cols, op("permute_dims", {wx}, {{"axes", std::vector<int64_t>{0, 2, 1}}}));
    KILN_ASSIGN_OR_RETURN(cols, Reshape(c, cols, {r, one, PrimExpr(width), PrimExpr(sx)}));
    KILN_ASSIGN_OR_RETURN(Expr t, op("matmul", {rows, image}));
    return op("matmul", {t, cols});
  };
  Expr samples;
  if (mode == "avg") {
    KILN_ASSIGN_OR_RETURN(Expr wy, op("add", {ay.low, ay.high}));
    KILN_ASSIGN_OR_RETURN(Expr wx, op("add", {ax.low, ax.high}));
    KILN_ASSIGN_OR_RETURN(samples, sample(wy, wx));
  } else {
    for (const Expr* wy : {&ay.low, &ay.high}) {
      for (const Expr* wx : {&ax.low, &ax.high}) {
        KILN_ASSIGN_OR_RETURN(Expr corner, sample(*wy, *wx));
        if (samples.defined()) {
          KILN_ASSIGN_OR_RETURN(samples, op("maximum", {samples, corner}));
        } else {
          samples = corner;
        }
      }
    }
  }
  // The S x S samples of each bin reduced.
  KILN_ASSIGN_OR_RETURN(samples, Reshape(c, samples, {r, PrimExpr(channels), PrimExpr(out_h), PrimExpr(ratio),
                                                      PrimExpr(out_w), PrimExpr(ratio)}));
  KILN_ASSIGN_OR_RETURN(Expr y, op(mode == "avg" ? "mean" : "max", {samples},
                                   {{"axis", std::vector<int64_t>{3, 5}}, {"keepdims", false}}));
  KILN_ASSIGN_OR_RETURN(y, op("astype", {y}, {{"dtype", dtype}}));
  return Outputs(y);
}

}  // namespace

void RegisterRoiAlignConverters(ConverterRegistry& r) { r.Register("RoiAlign", ConvertRoiAlign, 10); }

}  // namespace kiln::frontends::onnx
