// resize, written from ONNX's Resize definition as a separable computation: the resized axes
// one after another, each output position along the axis a weighted sum of input positions
// (one for nearest, two for linear, four for cubic), in double. Weights that are exactly 0
// are skipped (so a NaN reaches only the outputs it contributes to), taps are clamped to the
// edge, exclude_outside drops and renormalizes cubic taps outside the input, and under
// tf_crop_and_resize a coordinate outside [0, in - 1] gives extrapolation_value.
#include <cmath>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

struct Tap {
  int64_t index;
  double weight;
};

// The taps of one output position along one axis; empty means "extrapolate".
struct AxisPlan {
  std::vector<std::vector<Tap>> taps;  // per output position
};

absl::StatusOr<std::string> StringAttr(const KernelCall& call, const std::string& name, const char* fallback) {
  auto it = call.call.attrs.find(name);
  if (it == call.call.attrs.end()) return std::string(fallback);
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return call.Error("attribute ", name, " must be a string");
}

double Cubic(double a, double t) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

absl::StatusOr<RefValue> Resize(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> size, call.Shape(1, "size"));
  if (static_cast<int>(size.size()) != x->ndim()) return call.Error("size and data ranks differ");
  KILN_ASSIGN_OR_RETURN(auto axes_attr, call.IntsAttr("axes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_attr, x->ndim()));
  KILN_ASSIGN_OR_RETURN(std::string method, StringAttr(call, "method", "nearest"));
  KILN_ASSIGN_OR_RETURN(std::string mode, StringAttr(call, "coordinate_transformation_mode", "half_pixel"));
  KILN_ASSIGN_OR_RETURN(std::string nearest, StringAttr(call, "nearest_mode", "round_prefer_floor"));
  KILN_ASSIGN_OR_RETURN(auto coeff, call.FloatAttr("cubic_coeff_a"));
  KILN_ASSIGN_OR_RETURN(auto exclude, call.BoolAttr("exclude_outside"));
  KILN_ASSIGN_OR_RETURN(auto extrapolation, call.FloatAttr("extrapolation_value"));
  KILN_ASSIGN_OR_RETURN(auto scales, call.FloatsAttr("scales"));
  KILN_ASSIGN_OR_RETURN(auto roi, call.FloatsAttr("roi"));
  if (method != "nearest" && method != "linear" && method != "cubic") return call.Error("unknown method ", method);
  if (method != "nearest" && !x->dtype().is_floating()) return call.Error("linear/cubic need floating-point data");
  if (scales && scales->size() != axes.size()) return call.Error("scales must have one value per resized axis");
  const bool crop = mode == "tf_crop_and_resize";
  if (crop && (!roi || roi->size() != 2 * axes.size())) return call.Error("tf_crop_and_resize needs roi");
  const double a = coeff.value_or(-0.75);
  KILN_RETURN_IF_ERROR(call.CheckElementCount(size));
  for (int d = 0; d < x->ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end() && size[static_cast<size_t>(d)] != x->shape()[static_cast<size_t>(d)]) {
      return call.Error("size dim ", d, " differs from the data's, which is not resized");
    }
  }

  std::vector<int64_t> shape = x->shape();
  std::vector<double> values(static_cast<size_t>(x->numel()));
  for (int64_t i = 0; i < x->numel(); ++i) values[static_cast<size_t>(i)] = x->GetDouble(i);
  const double fill = extrapolation.value_or(0.0);

  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = static_cast<size_t>(axes[k]);
    const int64_t in = shape[d], out = size[d];
    const double scale = scales ? (*scales)[k] : static_cast<double>(out) / static_cast<double>(in);
    AxisPlan plan;
    for (int64_t y = 0; y < out; ++y) {
      const double yf = static_cast<double>(y), inf = static_cast<double>(in);
      // The resized length: in * scale unrounded when scales are given (ONNX's reference).
      const double outf = scales ? inf * scale : static_cast<double>(out);
      double c = 0;
      if (mode == "half_pixel") {
        c = (yf + 0.5) / scale - 0.5;
      } else if (mode == "half_pixel_symmetric") {
        const double adjustment = static_cast<double>(out) / outf;
        c = inf / 2 * (1 - adjustment) + (yf + 0.5) / scale - 0.5;
      } else if (mode == "pytorch_half_pixel") {
        c = outf > 1 ? (yf + 0.5) / scale - 0.5 : 0;
      } else if (mode == "align_corners") {
        c = outf > 1 ? yf * (inf - 1) / (outf - 1) : 0;
      } else if (mode == "asymmetric") {
        c = yf / scale;
      } else if (mode == "tf_half_pixel_for_nn") {
        c = (yf + 0.5) / scale;
      } else if (crop) {
        const double start = (*roi)[k], end = (*roi)[k + axes.size()];
        c = outf > 1 ? start * (inf - 1) + yf * (end - start) * (inf - 1) / (outf - 1) : 0.5 * (start + end) * (inf - 1);
      } else {
        return call.Error("unknown coordinate_transformation_mode ", mode);
      }
      std::vector<Tap> taps;
      if (crop && (c < 0 || c > inf - 1)) {
        plan.taps.push_back(taps);
        continue;
      }
      auto clamp = [&](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
      if (method == "nearest") {
        double r;
        if (nearest == "round_prefer_floor") {
          r = c == std::floor(c) + 0.5 ? std::floor(c) : std::round(c);
        } else if (nearest == "round_prefer_ceil") {
          r = c == std::floor(c) + 0.5 ? std::ceil(c) : std::round(c);
        } else if (nearest == "floor") {
          r = std::floor(c);
        } else if (nearest == "ceil") {
          r = std::ceil(c);
        } else {
          return call.Error("unknown nearest_mode ", nearest);
        }
        r = std::min(std::max(r, 0.0), inf - 1);
        taps.push_back({static_cast<int64_t>(r), 1.0});
      } else if (method == "linear") {
        const double lo = std::floor(c);
        const auto i = static_cast<int64_t>(lo);
        taps.push_back({clamp(i), 1 - (c - lo)});
        taps.push_back({clamp(i + 1), c - lo});
      } else {
        const double lo = std::floor(c);
        const auto i = static_cast<int64_t>(lo);
        double total = 0;
        for (int64_t j = -1; j <= 2; ++j) {
          double w = Cubic(a, static_cast<double>(j) - (c - lo));
          if (exclude.value_or(false) && (i + j < 0 || i + j >= in)) w = 0;
          taps.push_back({clamp(i + j), w});
          total += w;
        }
        if (exclude.value_or(false)) {
          for (Tap& t : taps) t.weight /= total;
        }
      }
      plan.taps.push_back(taps);
    }
    std::vector<int64_t> next_shape = shape;
    next_shape[d] = out;
    std::vector<double> next(static_cast<size_t>(NumElements(next_shape)));
    for (int64_t i = 0; i < NumElements(next_shape); ++i) {
      std::vector<int64_t> index = Unravel(i, next_shape);
      const std::vector<Tap>& taps = plan.taps[static_cast<size_t>(index[d])];
      if (taps.empty()) {
        next[static_cast<size_t>(i)] = fill;
        continue;
      }
      double sum = 0;
      for (const Tap& t : taps) {
        if (t.weight == 0) continue;
        index[d] = t.index;
        sum += t.weight * values[static_cast<size_t>(Ravel(index, shape))];
      }
      next[static_cast<size_t>(i)] = sum;
    }
    shape = next_shape;
    values = std::move(next);
  }
  HostTensor result(x->dtype(), shape);
  for (int64_t i = 0; i < result.numel(); ++i) {
    if (ComputesInInt(x->dtype())) {
      result.SetInt(i, static_cast<int64_t>(values[static_cast<size_t>(i)]));
    } else {
      result.SetDouble(i, values[static_cast<size_t>(i)]);
    }
  }
  return RefValue(std::move(result));
}

}  // namespace

void AddResizeKernels(KernelTable& t) { t["resize"] = Resize; }

}  // namespace kiln::reference
