// MaxPool's Indices output (max_pool_indices.h), from the pooled maximum y:
//   1. X padded with -inf (pads, plus at the end whatever ceil_mode's last windows reach);
//   2. per kernel tap, the strided slice of padded X that the tap sees for every output
//      element, and the constant flat spatial position of that element in X;
//   3. taps scanned from the last to the first, each replacing the index where its value
//      equals y, so the first maximum in window order wins;
//   4. plus (n * C + c) * the spatial size, the offset of each (n, c) plane.
// Needs static shapes; the taps are unrolled (kernel volume at most 4096).
#include "frontends/onnx/converters/max_pool_indices.h"

#include <algorithm>
#include <limits>
#include <string>

#include "frontends/onnx/converters/common.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {

using relax::Expr;
using tir::DataType;

namespace {
constexpr int64_t kMaxTaps = 4096;
}  // namespace

absl::StatusOr<Expr> MaxPoolIndices(NodeContext& c, const Expr& x, const std::vector<PrimExpr>& in, const Expr& y,
                                    const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads,
                                    bool column_major) {
  const size_t rank = kernel.size();
  std::vector<int64_t> dims;
  for (const PrimExpr& d : in) {
    dims.push_back(StaticDim(d));
    if (dims.back() < 0) return c.Unsupported("the Indices output needs a static input shape");
  }
  const auto* y_info = y.struct_info().as<relax::TensorStructInfoNode>();
  if (y_info == nullptr || !y_info->shape) return c.Error("the pooled output has no shape");
  std::vector<int64_t> out;
  for (size_t d = 0; d < rank; ++d) out.push_back(StaticDim((*y_info->shape)[2 + d]));
  int64_t taps = 1;
  for (int64_t k : kernel) taps *= k;
  if (taps > kMaxTaps) return c.Unsupported("the Indices output of a window of ", taps, " taps (at most ", kMaxTaps, ")");

  // 1. Padded with -inf, far enough for the last window of every axis.
  std::vector<int64_t> pad_width(2 * (rank + 2), 0);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t reach = (out[d] - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1;
    pad_width[2 + d] = pads[d];
    pad_width[rank + 2 + 2 + d] = std::max<int64_t>(pads[rank + d], reach - pads[d] - dims[2 + d]);
  }
  KILN_ASSIGN_OR_RETURN(Expr padded, c.Call("pad", {x}, {{"pads", pad_width}, {"mode", std::string("constant")},
                                                         {"pad_value", -std::numeric_limits<double>::infinity()}}));

  // The flat spatial position of X's element at `position` (row- or column-major).
  std::vector<int64_t> spatial_stride(rank, 1);
  if (column_major) {
    for (size_t d = 1; d < rank; ++d) spatial_stride[d] = spatial_stride[d - 1] * dims[2 + d - 1];
  } else {
    for (size_t d = rank - 1; d > 0; --d) spatial_stride[d - 1] = spatial_stride[d] * dims[2 + d];
  }
  int64_t out_count = 1;
  for (int64_t o : out) out_count *= o;
  std::vector<int64_t> out_shape = {1, 1};
  out_shape.insert(out_shape.end(), out.begin(), out.end());

  // 2.-3. Each tap, last to first.
  Expr index;
  for (int64_t tap = taps - 1; tap >= 0; --tap) {
    std::vector<int64_t> offset(rank);
    for (size_t d = rank, rest = static_cast<size_t>(tap); d-- > 0;) {
      offset[d] = static_cast<int64_t>(rest % static_cast<size_t>(kernel[d]));
      rest /= static_cast<size_t>(kernel[d]);
    }
    std::vector<int64_t> begin, end, axes, step;
    for (size_t d = 0; d < rank; ++d) {
      begin.push_back(offset[d] * dilations[d]);
      end.push_back(begin.back() + (out[d] - 1) * strides[d] + 1);
      axes.push_back(static_cast<int64_t>(2 + d));
      step.push_back(strides[d]);
    }
    KILN_ASSIGN_OR_RETURN(Expr seen, c.Call("strided_slice", {padded},
                                            {{"begin", begin}, {"end", end}, {"axes", axes}, {"strides", step}}));
    std::vector<double> positions(static_cast<size_t>(out_count));
    for (int64_t e = 0; e < out_count; ++e) {
      int64_t flat = 0;
      for (size_t d = rank, rest = static_cast<size_t>(e); d-- > 0;) {
        const int64_t o = static_cast<int64_t>(rest % static_cast<size_t>(out[d]));
        rest /= static_cast<size_t>(out[d]);
        // A padded position never holds the maximum unless the whole window is padding.
        const int64_t at = std::clamp<int64_t>(o * strides[d] - pads[d] + offset[d] * dilations[d], 0, dims[2 + d] - 1);
        flat += at * spatial_stride[d];
      }
      positions[static_cast<size_t>(e)] = static_cast<double>(flat);
    }
    const Expr position = relax::Constant(DataFromDoubles(positions, DataType::Int64(), out_shape));
    if (!index.defined()) {
      index = position;
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Expr hit, c.Call("equal", {seen, y}));
    KILN_ASSIGN_OR_RETURN(index, c.Call("where", {hit, position, index}));
  }

  // 4. The (n, c) plane's offset.
  std::vector<double> planes(static_cast<size_t>(dims[0] * dims[1]));
  int64_t spatial = 1;
  for (size_t d = 0; d < rank; ++d) spatial *= dims[2 + d];
  for (size_t p = 0; p < planes.size(); ++p) planes[p] = static_cast<double>(static_cast<int64_t>(p) * spatial);
  std::vector<int64_t> plane_shape = {dims[0], dims[1]};
  plane_shape.resize(rank + 2, 1);
  const Expr plane = relax::Constant(DataFromDoubles(planes, DataType::Int64(), plane_shape));
  KILN_ASSIGN_OR_RETURN(index, c.Call("add", {index, plane}));
  return index;
}

}  // namespace kiln::frontends::onnx
