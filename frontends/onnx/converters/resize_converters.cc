// ONNX Resize (opset 10-19) and Upsample (7-9) to Kiln's resize (relax/op/resize.cc).
//
// Version differences: Upsample and Resize-10 take (X, scales) and behave as asymmetric
// coordinates with nearest rounding down (mode nearest or linear); Resize-11+ takes (X, roi,
// scales, sizes) with the coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
// exclude_outside and extrapolation_value attributes; 13+ makes roi and scales optional; 18
// adds axes (the inputs then describe only those axes), keep_aspect_ratio_policy (with
// constant sizes) and antialias (linear / cubic with static dims: AntialiasResize). scales, sizes and roi must be known
// at import time (constants or bound inputs); sizes may be symbolic shape values.
//
// Output dims: sizes, or floor(input dim * scale) computed from static dims (a symbolic dim
// needs an integral scale). Axes whose output equals the input with scale 1 are not resized
// (every mode maps them to themselves) unless tf_crop_and_resize crops them.
#include <algorithm>
#include <cmath>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;

// Input i's elements as doubles; empty when the input is absent or has no elements.
absl::StatusOr<std::vector<double>> OptionalFloats(NodeContext& c, int i) {
  std::vector<double> values;
  if (!c.has_input(i)) return values;
  KILN_ASSIGN_OR_RETURN(relax::ConstantData data, c.InputData(i));
  int64_t n = 1;
  for (int64_t d : data.shape) n *= d;
  for (int64_t k = 0; k < n; ++k) values.push_back(ElementAsDouble(data, k));
  return values;
}

// Antialias (18): linear and cubic resizing that, when downsampling, widens the filter by
// 1 / scale so that every input pixel contributes (ONNX's reference,
// _interpolate_1d_along_axis with _linear_coeffs_antialias / _cubic_coeffs_antialias).
// Resizing is separable and, with static dims, each axis is a fixed linear map: the
// (output x input) matrix of the reference's taps (indices clamped as its edge padding,
// coefficients normalized to sum 1, zeroed outside with exclude_outside) is built here and
// applied as one matmul per resized axis, in float32.

// The taps' coefficients for an output whose source coordinate has fraction `ratio` (in (0, 1]).
std::vector<double> AntialiasCoefficients(const std::string& method, double ratio, double scale, double a) {
  scale = std::min(scale, 1.0);
  std::vector<double> coeffs;
  if (method == "linear") {
    const int64_t start = static_cast<int64_t>(std::floor(-1 / scale) + 1), footprint = 2 - 2 * start;
    for (int64_t i = start; i < start + footprint; ++i) {
      coeffs.push_back(std::clamp(1 - std::fabs((static_cast<double>(i) - ratio) * scale), 0.0, 1.0));
    }
  } else {
    const int64_t start = static_cast<int64_t>(std::floor(-2 / scale) + 1), end = 2 - start;
    for (int64_t i = start; i < end; ++i) {
      const double x = std::fabs(scale * (static_cast<double>(i) - ratio));
      const double x2 = x * x, x3 = x2 * x;
      coeffs.push_back(x <= 1 ? (a + 2) * x3 - (a + 3) * x2 + 1
                              : x < 2 ? a * x3 - 5 * a * x2 + 8 * a * x - 4 * a : 0.0);
    }
  }
  double sum = 0;
  for (double v : coeffs) sum += v;
  for (double& v : coeffs) v /= sum;
  return coeffs;
}

// The source coordinate of output index y (every mode but tf_crop_and_resize).
double SourceCoordinate(const std::string& mode, double y, double scale, int64_t in_dim, int64_t out_dim) {
  const double out_width = scale * static_cast<double>(in_dim);
  if (mode == "align_corners") return out_width == 1 ? 0.0 : y * static_cast<double>(in_dim - 1) / (out_width - 1);
  if (mode == "asymmetric") return y / scale;
  if (mode == "pytorch_half_pixel") return out_width == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out_dim) / out_width;
    return static_cast<double>(in_dim) / 2 * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5;  // half_pixel
}

// The (out_dim x in_dim) matrix of one axis, row-major.
std::vector<double> AntialiasMatrix(const std::string& method, const std::string& mode, double scale, int64_t in_dim,
                                    int64_t out_dim, double a, bool exclude_outside) {
  std::vector<double> m(static_cast<size_t>(out_dim * in_dim), 0.0);
  for (int64_t y = 0; y < out_dim; ++y) {
    const double x = SourceCoordinate(mode, static_cast<double>(y), scale, in_dim, out_dim);
    const double x_floor = std::floor(x);
    std::vector<double> coeffs = AntialiasCoefficients(method, x == x_floor ? 1.0 : x - x_floor, scale, a);
    const int64_t n = static_cast<int64_t>(coeffs.size()), pad = (n + 1) / 2;
    // The n indices nearest x, ties to the smaller (the reference's _get_neighbor_idxes).
    const double padded = x + static_cast<double>(pad), p = std::floor(padded), frac = padded - p;
    int64_t offset = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1)
                                : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
    const int64_t first = static_cast<int64_t>(p) + offset - pad;
    if (exclude_outside) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (first + i < 0 || first + i >= in_dim) coeffs[i] = 0;
        sum += coeffs[i];
      }
      if (sum != 0) {
        for (double& v : coeffs) v /= sum;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t index = std::clamp<int64_t>(first + i, 0, in_dim - 1);
      m[static_cast<size_t>(y * in_dim + index)] += coeffs[i];
    }
  }
  return m;
}

absl::StatusOr<Expr> AntialiasResize(NodeContext& c, Expr x, const std::vector<PrimExpr>& in_shape,
                                     const std::vector<PrimExpr>& out_shape, const std::vector<int64_t>& axes,
                                     const std::vector<double>& scales, const std::string& method,
                                     const std::string& mode, double a, bool exclude_outside) {
  KILN_ASSIGN_OR_RETURN(tir::DataType dtype, c.InputDType(0));
  if (!dtype.is_float()) return c.Unsupported("antialias needs a float input");
  if (dtype != tir::DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("astype", {x}, {{"dtype", tir::DataType::Float32()}}));
  }
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t d = axes[k], in_dim = StaticDim(in_shape[d]), out_dim = StaticDim(out_shape[d]);
    const std::vector<double> m = AntialiasMatrix(method, mode, scales[k], in_dim, out_dim, a, exclude_outside);
    // Transposed to (in, out): x with axis d last, times it.
    std::vector<double> mt(m.size());
    for (int64_t i = 0; i < in_dim; ++i) {
      for (int64_t o = 0; o < out_dim; ++o) mt[static_cast<size_t>(i * out_dim + o)] = m[static_cast<size_t>(o * in_dim + i)];
    }
    std::vector<int64_t> perm, inverse(static_cast<size_t>(rank));
    for (int64_t j = 0; j < rank; ++j) {
      if (j != d) perm.push_back(j);
    }
    perm.push_back(d);
    for (int64_t j = 0; j < rank; ++j) inverse[static_cast<size_t>(perm[j])] = j;
    if (d != rank - 1) {
      KILN_ASSIGN_OR_RETURN(x, c.Call("permute_dims", {x}, {{"axes", perm}}));
    }
    KILN_ASSIGN_OR_RETURN(x, c.Call("matmul", {x, relax::Constant(DataFromDoubles(mt, tir::DataType::Float32(),
                                                                                     {in_dim, out_dim}))}));
    if (d != rank - 1) {
      KILN_ASSIGN_OR_RETURN(x, c.Call("permute_dims", {x}, {{"axes", inverse}}));
    }
  }
  if (dtype != tir::DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("astype", {x}, {{"dtype", dtype}}));
  }
  return x;
}

absl::StatusOr<std::vector<Value>> ConvertResize(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  const int64_t ndim = static_cast<int64_t>(in.size());
  if (ndim == 0) return c.Error("needs an input of rank >= 1");
  const bool legacy = c.op_type() == "Upsample" || c.opset() < 11;
  std::string method = c.AttrString("mode", "nearest");
  if (method == "bilinear" || method == "trilinear") method = "linear";  // Upsample-7's spellings
  if (legacy && method != "nearest" && method != "linear") return c.Error("unknown mode '", method, "'");
  std::string coordinate_mode = legacy ? "asymmetric" : c.AttrString("coordinate_transformation_mode", "half_pixel");
  std::string nearest_mode = legacy ? "floor" : c.AttrString("nearest_mode", "round_prefer_floor");
  const bool antialias = c.opset() >= 18 && c.AttrInt("antialias", 0) != 0;
  if (antialias && method == "nearest") return c.Error("antialias needs mode linear or cubic");
  const std::string policy = c.opset() >= 18 ? c.AttrString("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    return c.Error("keep_aspect_ratio_policy '", policy, "' is not stretch, not_larger or not_smaller");
  }
  // The axes the scales / sizes / roi inputs describe.
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < ndim; ++d) axes.push_back(d);
  if (c.opset() >= 18 && c.HasAttr("axes")) {
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(c, c.AttrInts("axes"), ndim));
  }
  const size_t n = axes.size();

  std::vector<double> scales, roi;
  std::vector<PrimExpr> sizes;
  if (c.op_type() == "Upsample" && c.opset() < 9) {
    scales = c.AttrFloats("scales");
  } else if (legacy) {
    KILN_ASSIGN_OR_RETURN(scales, OptionalFloats(c, 1));
  } else {
    KILN_ASSIGN_OR_RETURN(roi, OptionalFloats(c, 1));
    KILN_ASSIGN_OR_RETURN(scales, OptionalFloats(c, 2));
    if (c.has_input(3)) {
      KILN_ASSIGN_OR_RETURN(sizes, c.InputElements(3));
    }
  }
  if (scales.empty() == sizes.empty()) return c.Error("exactly one of scales and sizes must be given");
  if (!scales.empty() && scales.size() != n) return c.Error("scales has ", scales.size(), " values for ", n, " axes");
  if (!sizes.empty() && sizes.size() != n) return c.Error("sizes has ", sizes.size(), " values for ", n, " axes");

  // keep_aspect_ratio_policy (18) with sizes: one scale for every axis, the smallest
  // (not_larger) or largest (not_smaller) of sizes / input dims, and each output dim
  // round_half_up(scale * input dim), as ONNX's reference; the resize then uses that scale.
  std::vector<int64_t> kept_dims;
  if (policy != "stretch" && !sizes.empty()) {
    std::vector<int64_t> wanted;
    if (!AllConstant(sizes, &wanted)) return c.Unsupported("keep_aspect_ratio_policy needs constant sizes");
    double scale = 0;
    std::vector<int64_t> dims;
    for (size_t k = 0; k < n; ++k) {
      std::vector<int64_t> dim;
      if (!AllConstant({in[static_cast<size_t>(axes[k])]}, &dim) || dim[0] == 0) {
        return c.Unsupported("keep_aspect_ratio_policy needs static, non-zero input dims");
      }
      const double ratio = static_cast<double>(wanted[k]) / static_cast<double>(dim[0]);
      scale = k == 0 ? ratio : policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
      dims.push_back(dim[0]);
    }
    if (!(scale > 0)) return c.Error("sizes must be positive");
    for (int64_t d : dims) kept_dims.push_back(static_cast<int64_t>(scale * static_cast<double>(d) + 0.5));
    scales.assign(n, scale);
    sizes.clear();
  }

  std::vector<PrimExpr> out = in;
  std::vector<int64_t> resized;
  std::vector<double> resized_scales, roi_start, roi_end;
  const bool crop = coordinate_mode == "tf_crop_and_resize";
  if (crop && roi.size() != 2 * n) return c.Error("tf_crop_and_resize needs roi with ", 2 * n, " values");
  for (size_t k = 0; k < n; ++k) {
    const size_t d = static_cast<size_t>(axes[k]);
    bool identity;
    if (!scales.empty()) {
      const double s = scales[k];
      if (!(s > 0) || !std::isfinite(s)) return c.Error("scales must be positive, got ", s);
      std::vector<int64_t> dim;
      if (!kept_dims.empty()) {
        out[d] = PrimExpr(kept_dims[k]);
      } else if (AllConstant({in[d]}, &dim)) {
        out[d] = PrimExpr(static_cast<int64_t>(std::floor(static_cast<double>(dim[0]) * s)));
      } else if (s == std::floor(s)) {
        out[d] = Simplify(in[d] * PrimExpr(static_cast<int64_t>(s)));
      } else {
        return c.Unsupported("a non-integral scale (", s, ") of the symbolic dim ", d, " is not supported");
      }
      identity = s == 1.0;
    } else {
      out[d] = sizes[k];
      tir::Analyzer analyzer;
      identity = analyzer.CanProveEqual(sizes[k], in[d]);
    }
    if (identity && !crop) continue;
    resized.push_back(static_cast<int64_t>(d));
    if (!scales.empty()) resized_scales.push_back(scales[k]);
    if (crop) {
      roi_start.push_back(roi[k]);
      roi_end.push_back(roi[k + n]);
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  if (resized.empty()) return Outputs(x);
  if (antialias) {
    if (crop) return c.Unsupported("antialias with tf_crop_and_resize is not supported");
    std::vector<double> axis_scales;
    for (size_t k = 0; k < resized.size(); ++k) {
      const size_t d = static_cast<size_t>(resized[k]);
      const int64_t in_dim = StaticDim(in[d]), out_dim = StaticDim(out[d]);
      if (in_dim <= 0 || out_dim < 0) return c.Unsupported("antialias needs static input and output dims");
      // Given sizes, the reference's scale is output / input.
      axis_scales.push_back(!resized_scales.empty() ? resized_scales[k]
                                                    : static_cast<double>(out_dim) / static_cast<double>(in_dim));
    }
    KILN_ASSIGN_OR_RETURN(Expr y, AntialiasResize(c, x, in, out, resized, axis_scales, method, coordinate_mode,
                                                  c.AttrFloat("cubic_coeff_a", -0.75),
                                                  c.AttrInt("exclude_outside", 0) != 0));
    return Outputs(y);
  }
  relax::Attrs attrs = {{"axes", resized},
                        {"method", method},
                        {"coordinate_transformation_mode", coordinate_mode},
                        {"nearest_mode", nearest_mode},
                        {"cubic_coeff_a", c.AttrFloat("cubic_coeff_a", -0.75)},
                        {"exclude_outside", c.AttrInt("exclude_outside", 0) != 0},
                        {"extrapolation_value", c.AttrFloat("extrapolation_value", 0.0)}};
  if (!resized_scales.empty()) attrs["scales"] = resized_scales;
  if (crop) {
    roi_start.insert(roi_start.end(), roi_end.begin(), roi_end.end());
    attrs["roi"] = roi_start;
  }
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("resize", {x, relax::ShapeExpr(out)}, attrs));
  return Outputs(y);
}

}  // namespace

void RegisterResizeConverters(ConverterRegistry& r) {
  r.Register("Resize", ConvertResize, 10);
  r.Register("Upsample", ConvertResize, 7, 9);
}

}  // namespace kiln::frontends::onnx
