// resize (data, size: Shape): ONNX Resize (opset 10-19, without antialias) over any rank.
// The result has shape `size` (one dim per data dim) and the data's dtype.
//
// Attributes:
//   axes         the resized axes (int list, default every axis); the other dims of `size`
//                must equal the data's (provably not -> error, else checked at run time)
//                and are copied through.
//   method       "nearest" (default), "linear" (multilinear) or "cubic" (tensor-product
//                cubic convolution). linear and cubic need floating-point data.
//   coordinate_transformation_mode   how output index x maps to input coordinate x' along a
//                resized axis of input extent in, scale s and resized length out (the output
//                extent; in * s, unrounded, when scales are given, as ONNX's reference):
//                  half_pixel (default)   x' = (x + 0.5) / s - 0.5
//                  half_pixel_symmetric   as half_pixel, shifted by in / 2 * (1 - extent / out)
//                  pytorch_half_pixel     x' = out > 1 ? (x + 0.5) / s - 0.5 : 0
//                  align_corners          x' = out > 1 ? x * (in - 1) / (out - 1) : 0
//                  asymmetric             x' = x / s
//                  tf_half_pixel_for_nn   x' = (x + 0.5) / s (ONNX opset 11-12)
//                  tf_crop_and_resize     x' = out > 1 ? start * (in - 1) + x * (end - start) *
//                                         (in - 1) / (out - 1) : (start + end) / 2 * (in - 1),
//                                         with (start, end) from roi; an x' outside [0, in - 1]
//                                         on any axis gives extrapolation_value.
//   scales       one number per resized axis: s above (ONNX's scales input). Absent: s = out / in
//                (ONNX's sizes input). Positive.
//   roi          tf_crop_and_resize only (required there): the starts of the resized axes,
//                then their ends, as fractions of the input (ONNX's roi input).
//   nearest_mode how nearest rounds x': "round_prefer_floor" (default; ties go down),
//                "round_prefer_ceil", "floor", "ceil"; the index is then clamped into the input.
//   cubic_coeff_a   the cubic kernel's a (default -0.75).
//   exclude_outside (bool, default false): cubic taps outside the input get weight 0 and the
//                other weights are renormalized; otherwise such taps read the edge element.
//   extrapolation_value (default 0.0).
// Coordinates and weights are computed in float64 (as ONNX's reference implementation);
// linear taps are the two neighbours of x', cubic taps the four, both clamped into the input
// (edge padding). A tap whose weight is exactly 0 is skipped, so a NaN or inf reaches only the
// outputs it contributes to (x' exactly on an input element reads that element alone).
#include <algorithm>

#include "relax/op/op_common.h"
#include "relax/op/resize_attrs.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> InferResize(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ShapeStructInfoNode* size, ShapeArg(call, 1, "size"));
  if (data->ndim != kUnknownNdim && size->ndim != kUnknownNdim && data->ndim != size->ndim) {
    return OpError(call, "size has ", size->ndim, " dims, data has ", data->ndim);
  }
  const int ndim = data->ndim != kUnknownNdim ? data->ndim : size->ndim;
  if (ndim == 0) return OpError(call, "data must have at least 1 dimension");
  if (ndim != kUnknownNdim) {
    KILN_ASSIGN_OR_RETURN(ResizeAttrs attrs, ReadResizeAttrs(call, ndim));
    if (attrs.method != ResizeMethod::kNearest && data->dtype && !data->dtype->is_floating()) {
      return OpError(call, "linear and cubic resizing need a floating-point dtype, got ", data->dtype->ToString());
    }
    if (data->shape && size->values) {
      for (int d = 0; d < ndim; ++d) {
        if (std::find(attrs.axes.begin(), attrs.axes.end(), d) != attrs.axes.end()) continue;
        PrimExpr in = analyzer.Simplify((*data->shape)[static_cast<size_t>(d)]);
        PrimExpr out = analyzer.Simplify((*size->values)[static_cast<size_t>(d)]);
        if (!DimsEqual(in, out, analyzer) && DimsDiffer(in, out, analyzer)) {
          return OpError(call, "size dim ", d, " (", DimStr(out), ") differs from data dim ", d, " (", DimStr(in),
                         "), which is not a resized axis");
        }
        AssumeEqual(call, out, in, analyzer,
                    absl::StrCat("size dim ", d, " is {} at run time, data dim ", d, " (not resized) is {}"));
      }
    }
  }
  if (!size->values) return TensorSInfoOfNdim(ndim, data->dtype, data->device);
  return TensorSInfo(SimplifyDims(*size->values, analyzer), data->dtype, data->device);
}

}  // namespace

void RegisterResizeOps(OpRegistry& registry) {
  registry.Register({"resize",
                     2,
                     2,
                     true,
                     {"axes", "method", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                      "exclude_outside", "extrapolation_value", "scales", "roi"},
                     InferResize});
}

}  // namespace kiln::relax::op
