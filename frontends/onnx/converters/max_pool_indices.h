// MaxPool's second output, Indices: for each output element, the flat position in X (over
// (N, C, D1, ...), row-major, or with storage_order 1 the spatial dims column-major) of the
// window element that gave the maximum; the first one in window order on ties, as ONNX's
// reference.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/node_context.h"
#include "relax/expr.h"

namespace kiln::frontends::onnx {

// x (N, C, D1, ...) of static shape `in`, y = max_pool of it with the window (kernel,
// strides, dilations, pads: begins then ends); the Indices tensor of y's shape (int64).
absl::StatusOr<relax::Expr> MaxPoolIndices(NodeContext& c, const relax::Expr& x, const std::vector<PrimExpr>& in,
                                           const relax::Expr& y, const std::vector<int64_t>& kernel,
                                           const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                                           const std::vector<int64_t>& pads, bool column_major);

}  // namespace kiln::frontends::onnx
