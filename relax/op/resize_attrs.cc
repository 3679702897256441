#include "relax/op/resize_attrs.h"

#include <cmath>
#include <string>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<std::string> StringAttr(const CallNode& call, const std::string& name, const std::string& fallback) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return OpError(call, "attribute '", name, "' must be a string");
}

}  // namespace

absl::StatusOr<ResizeAttrs> ReadResizeAttrs(const CallNode& call, int ndim) {
  ResizeAttrs a;
  KILN_ASSIGN_OR_RETURN(auto axes, IntsAttr(call, "axes"));
  if (axes) {
    KILN_ASSIGN_OR_RETURN(a.axes, NormalizeAxes(call, *axes, ndim));
  } else {
    for (int d = 0; d < ndim; ++d) a.axes.push_back(d);
  }
  KILN_ASSIGN_OR_RETURN(std::string method, StringAttr(call, "method", "nearest"));
  if (method == "nearest") {
    a.method = ResizeMethod::kNearest;
  } else if (method == "linear") {
    a.method = ResizeMethod::kLinear;
  } else if (method == "cubic") {
    a.method = ResizeMethod::kCubic;
  } else {
    return OpError(call, "unknown method \"", method, "\" (nearest, linear or cubic)");
  }
  KILN_ASSIGN_OR_RETURN(std::string mode, StringAttr(call, "coordinate_transformation_mode", "half_pixel"));
  if (mode == "half_pixel") {
    a.coordinate_mode = CoordinateMode::kHalfPixel;
  } else if (mode == "half_pixel_symmetric") {
    a.coordinate_mode = CoordinateMode::kHalfPixelSymmetric;
  } else if (mode == "pytorch_half_pixel") {
    a.coordinate_mode = CoordinateMode::kPytorchHalfPixel;
  } else if (mode == "align_corners") {
    a.coordinate_mode = CoordinateMode::kAlignCorners;
  } else if (mode == "asymmetric") {
    a.coordinate_mode = CoordinateMode::kAsymmetric;
  } else if (mode == "tf_half_pixel_for_nn") {
    a.coordinate_mode = CoordinateMode::kTfHalfPixelForNn;
  } else if (mode == "tf_crop_and_resize") {
    a.coordinate_mode = CoordinateMode::kTfCropAndResize;
  } else {
    return OpError(call, "unknown coordinate_transformation_mode \"", mode, "\"");
  }
  KILN_ASSIGN_OR_RETURN(std::string nearest, StringAttr(call, "nearest_mode", "round_prefer_floor"));
  if (nearest == "round_prefer_floor") {
    a.nearest_mode = NearestMode::kRoundPreferFloor;
  } else if (nearest == "round_prefer_ceil") {
    a.nearest_mode = NearestMode::kRoundPreferCeil;
  } else if (nearest == "floor") {
    a.nearest_mode = NearestMode::kFloor;
  } else if (nearest == "ceil") {
    a.nearest_mode = NearestMode::kCeil;
  } else {
    return OpError(call, "unknown nearest_mode \"", nearest, "\"");
  }
  KILN_ASSIGN_OR_RETURN(auto coeff, FloatAttr(call, "cubic_coeff_a"));
  a.cubic_coeff_a = coeff.value_or(-0.75);
  KILN_ASSIGN_OR_RETURN(auto exclude, BoolAttr(call, "exclude_outside"));
  a.exclude_outside = exclude.value_or(false);
  KILN_ASSIGN_OR_RETURN(auto extrapolation, FloatAttr(call, "extrapolation_value"));
  a.extrapolation_value = extrapolation.value_or(0.0);
  KILN_ASSIGN_OR_RETURN(a.scales, FloatsAttr(call, "scales"));
  if (a.scales) {
    if (a.scales->size() != a.axes.size()) {
      return OpError(call, "scales has ", a.scales->size(), " values, expected one per resized axis (",
                     a.axes.size(), ")");
    }
    for (double s : *a.scales) {
      if (!(s > 0) || std::isinf(s)) return OpError(call, "scales must be positive and finite, got ", s);
    }
  }
  KILN_ASSIGN_OR_RETURN(auto roi, FloatsAttr(call, "roi"));
  if (a.coordinate_mode == CoordinateMode::kTfCropAndResize) {
    if (!roi) return OpError(call, "coordinate_transformation_mode tf_crop_and_resize needs the attribute 'roi'");
    if (roi->size() != 2 * a.axes.size()) {
      return OpError(call, "roi has ", roi->size(), " values, expected ", 2 * a.axes.size(),
                     " (the starts, then the ends, of the resized axes)");
    }
    for (double v : *roi) {
      if (!std::isfinite(v)) return OpError(call, "roi values must be finite, got ", v);
    }
    a.roi_start.assign(roi->begin(), roi->begin() + static_cast<std::ptrdiff_t>(a.axes.size()));
    a.roi_end.assign(roi->begin() + static_cast<std::ptrdiff_t>(a.axes.size()), roi->end());
  }
  return a;
}

}  // namespace kiln::relax::op
