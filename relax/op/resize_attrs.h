// The attributes of resize (semantics in relax/op/resize.cc), read and checked in one place
// for inference and legalization.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"

namespace kiln::relax::op {

enum class ResizeMethod { kNearest, kLinear, kCubic };
enum class CoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs {
  std::vector<int> axes;  // resized axes, normalized, in the order given
  ResizeMethod method = ResizeMethod::kNearest;
  CoordinateMode coordinate_mode = CoordinateMode::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
  std::optional<std::vector<double>> scales;  // one per resized axis
  std::vector<double> roi_start, roi_end;     // tf_crop_and_resize: one per resized axis
};

absl::StatusOr<ResizeAttrs> ReadResizeAttrs(const CallNode& call, int ndim);

}  // namespace kiln::relax::op
