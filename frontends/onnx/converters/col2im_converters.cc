// Col2Im (opset 18): the inverse of im2col, summing every column of `input`
// (N, C * prod(block_shape), L) back into its block of an image (N, C, *image_shape), with
// strides, dilations and pads (pads crop the image that the blocks tile).
//
// That sum is a grouped transposed convolution: channel c k (block offset k of image channel
// c) spread over the block through a one-hot kernel (weight[c K + k, 0, k'] = [k == k']),
// groups = C, over the blocks laid out as their grid (L_1, ..., L_r), where
//   L_i = (image_i + pad_begin_i + pad_end_i - dilation_i (block_i - 1) - 1) / stride_i + 1.
// Kiln's conv<r>d_transpose does the rest (r = 1..3); output_padding covers image rows past
// the last block. One-hot products are exact, so the result is the plain sum. image_shape
// and block_shape give the output's shape: they must be known at import time (constants, or
// graph inputs bound as Reshape's shape).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;

// One-hot kernels larger than this are refused (channels * block elements^2).
constexpr int64_t kMaxKernelElements = int64_t{1} << 24;

absl::StatusOr<std::vector<Value>> ConvertCol2Im(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> image, c.InputInts(1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> block, c.InputInts(2));
  const size_t r = image.size();
  if (r < 1 || r > 3) return c.Unsupported(r, " spatial dims are not supported (1 to 3)");
  if (block.size() != r) return c.Error("block_shape has ", block.size(), " values, image_shape ", r);
  const std::vector<int64_t> strides = c.AttrInts("strides", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> dilations = c.AttrInts("dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = c.AttrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r || dilations.size() != r || pads.size() != 2 * r) {
    return c.Error("strides and dilations need ", r, " values and pads ", 2 * r);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  if (in.size() != 3) return c.Error("input must be 3-D (N, C * prod(block_shape), L), got ", in.size(), " dims");
  std::vector<int64_t> dims;  // (C K, L)
  if (!AllConstant({in[1], in[2]}, &dims)) return c.Unsupported("needs a static input shape (but the batch)");
  int64_t block_elements = 1, blocks = 1;
  std::vector<int64_t> grid(r), output_padding(r);
  for (size_t i = 0; i < r; ++i) {
    if (image[i] <= 0 || block[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0 || pads[i] < 0 || pads[r + i] < 0) {
      return c.Error("image_shape, block_shape, strides and dilations must be positive and pads non-negative");
    }
    block_elements *= block[i];
    const int64_t span = image[i] + pads[i] + pads[r + i] - dilations[i] * (block[i] - 1) - 1;
    if (span < 0) return c.Error("block ", block[i], " (dilation ", dilations[i], ") exceeds the padded image");
    grid[i] = span / strides[i] + 1;
    blocks *= grid[i];
    // Image rows after the last block's reach: the transposed convolution's output_padding.
    output_padding[i] = span % strides[i];
  }
  if (dims[0] % block_elements != 0) {
    return c.Error("input's dim 1 (", dims[0], ") is not a multiple of prod(block_shape) (", block_elements, ")");
  }
  if (dims[1] != blocks) return c.Error("input has ", dims[1], " blocks; the image and block shapes give ", blocks);
  const int64_t channels = dims[0] / block_elements;
  if (channels * block_elements * block_elements > kMaxKernelElements) {
    return c.Unsupported("a block of ", block_elements, " elements over ", channels, " channels is too large");
  }
  KILN_ASSIGN_OR_RETURN(tir::DataType dtype, c.InputDType(0));
  // weight (C K, 1, *block): channel c K + k holds 1 at block position k.
  std::vector<double> one_hot(static_cast<size_t>(channels * block_elements * block_elements), 0.0);
  for (int64_t ch = 0; ch < channels * block_elements; ++ch) {
    one_hot[ch * block_elements + ch % block_elements] = 1.0;
  }
  std::vector<int64_t> weight_shape = {channels * block_elements, 1};
  weight_shape.insert(weight_shape.end(), block.begin(), block.end());
  const Expr weight = relax::Constant(DataFromDoubles(one_hot, dtype, weight_shape));

  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  std::vector<PrimExpr> grid_shape = {in[0], PrimExpr(dims[0])};
  for (int64_t g : grid) grid_shape.push_back(PrimExpr(g));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, grid_shape));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call(absl::StrCat("conv", r, "d_transpose"), {x, weight},
                                       {{"strides", strides},
                                        {"padding", pads},
                                        {"output_padding", output_padding},
                                        {"dilation", dilations},
                                        {"groups", channels}}));
  return Outputs(y);
}

}  // namespace

void RegisterCol2ImConverters(ConverterRegistry& r) { r.Register("Col2Im", ConvertCol2Im, 18); }

}  // namespace kiln::frontends::onnx
