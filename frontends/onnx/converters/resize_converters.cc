// ONNX Resize (opset 10-19) and Upsample (7-9) to Kiln's resize (relax/op/resize.cc).
//
// Version differences: Upsample and Resize-10 take (X, scales) and behave as asymmetric
// coordinates with nearest rounding down (mode nearest or linear); Resize-11+ takes (X, roi,
// scales, sizes) with the coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
// exclude_outside and extrapolation_value attributes; 13+ makes roi and scales optional; 18
// adds axes (the inputs then describe only those axes), keep_aspect_ratio_policy (with
// constant sizes) and antialias (only 0 is supported). scales, sizes and roi must be known
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
  if (c.opset() >= 18) {
    if (c.AttrInt("antialias", 0) != 0) return c.Unsupported("antialias is not supported");
  }
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
