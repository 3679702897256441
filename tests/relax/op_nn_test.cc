#include <gtest/gtest.h>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

using Ints = std::vector<int64_t>;

TEST(Conv2dTest, OutputSizes) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var h = tir::Var::Shape("h");
  tir::Var w = tir::Var::Shape("w");
  // 3x3, stride 1, pad 1: same size.
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 32, 32}), T({16, 3, 3, 3})}, {{"padding", Ints{1}}}),
            "Tensor((n, 16, 32, 32), float32)");
  // Reference by hand: floor((224 + 3 + 3 - 1*(7-1) - 1) / 2) + 1 = 112.
  EXPECT_EQ(Infer("conv2d", {T({1, 3, 224, 224}), T({64, 3, 7, 7})},
                  {{"strides", Ints{2, 2}}, {"padding", Ints{3, 3, 3, 3}}}),
            "Tensor((1, 64, 112, 112), float32)");
  // Symbolic H/W, no padding, stride 1: h - 2.
  EXPECT_EQ(Infer("conv2d", {T({n, 8, h, w}), T({8, 8, 3, 3})}),
            "Tensor((n, 8, h - 2, w - 2), float32)");
  EXPECT_EQ(Infer("conv2d", {T({n, 8, h, w + 1}), T({4, 4, 3, 3})},
                  {{"strides", Ints{2}},
                   {"padding", Ints{1, 0}},
                   {"dilation", Ints{2}},
                   {"groups", int64_t{2}}}),
            "Tensor((n, 4, floordiv(h + 1, 2) - 1, floordiv(w, 2) - 1), float32)");
}

TEST(Conv2dTest, Errors) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var c = tir::Var::Shape("c");
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 8, 8}), T({16, 4, 3, 3})}),
            "error: conv2d: data channels (dim 1: 3) differ from weight in_channels (dim 1: 4) * "
            "groups (1)");
  EXPECT_EQ(Infer("conv2d", {T({n, c, 8, 8}), T({16, c + 1, 3, 3})}),
            "error: conv2d: data channels (dim 1: c) differ from weight in_channels (dim 1: c + 1) "
            "* groups (1)");
  EXPECT_EQ(Infer("conv2d", {T({n, 4, 8, 8}), T({3, 2, 3, 3})}, {{"groups", int64_t{2}}}),
            "error: conv2d: weight out_channels (3) is not divisible by groups (2)");
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 2, 8}), T({4, 3, 3, 3})}),
            "error: conv2d: window of 3 (dilation 1) is larger than the padded height dim 2 + 0");
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 8}), T({4, 3, 3, 3})}),
            "error: conv2d: data must be 4-d, got ndim 3");
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 8, 8}), T({4, 3, 3, 3})}, {{"padding", Ints{1, 2, 3}}}),
            "error: conv2d: attribute 'padding' needs 1, 2 or 4 values, got 3");
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 8, 8}), T({4, 3, 3, 3})}, {{"strides", Ints{0}}}),
            "error: conv2d: attribute 'strides' values must be positive, got 0");
  EXPECT_EQ(Infer("conv2d", {T({n, 3, 8, 8}), T({4, 3, 3, 3}, f16)}),
            "error: conv2d: dtypes differ: data is float32, weight is float16");
  EXPECT_EQ(Infer("conv2d", {TNdim(kUnknownNdim), T({4, 3, 3, 3})}), "Tensor(ndim=4, float32)");
}

TEST(MaxPool2dTest, OutputSizes) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var h = tir::Var::Shape("h");
  // Strides default to the pool size.
  EXPECT_EQ(Infer("max_pool2d", {T({n, 16, 32, 32})}, {{"pool_size", Ints{2}}}),
            "Tensor((n, 16, 16, 16), float32)");
  // Reference by hand: floor((112 + 1 + 1 - 3) / 2) + 1 = 56.
  EXPECT_EQ(Infer("max_pool2d", {T({1, 64, 112, 112})},
                  {{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", Ints{1}}}),
            "Tensor((1, 64, 56, 56), float32)");
  EXPECT_EQ(Infer("max_pool2d", {T({n, 16, h, 32})}, {{"pool_size", Ints{2}}}),
            "Tensor((n, 16, floordiv(h, 2), 16), float32)");
  EXPECT_EQ(Infer("max_pool2d", {T({n, 16, h, 32})}),
            "error: max_pool2d: attribute 'pool_size' is required");
}

TEST(ConvNdTest, OneAndThreeSpatialDims) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var l = tir::Var::Shape("l");
  // floor((l + 1 + 2 - 2 * (3 - 1) - 1) / 2) + 1 = floordiv(l - 2, 2) + 1; l = 9: 4.
  EXPECT_EQ(Infer("conv1d", {T({n, 4, l}), T({6, 2, 3})},
                  {{"strides", Ints{2}}, {"padding", Ints{1, 2}}, {"dilation", Ints{2}}, {"groups", int64_t{2}}}),
            "Tensor((n, 6, floordiv(l, 2)), float32)");
  EXPECT_EQ(Infer("conv1d", {T({n, 4, 9}), T({6, 2, 3})},
                  {{"strides", Ints{2}}, {"padding", Ints{1, 2}}, {"dilation", Ints{2}}, {"groups", int64_t{2}}}),
            "Tensor((n, 6, 4), float32)");
  // Pads (begin d, h, w) = (1, 0, 1), (end) = (0, 1, 1).
  EXPECT_EQ(Infer("conv3d", {T({1, 2, 4, 5, 3}), T({3, 2, 2, 3, 2})},
                  {{"strides", Ints{1, 2, 1}}, {"padding", Ints{1, 0, 1, 0, 1, 1}}}),
            "Tensor((1, 3, 4, 2, 4), float32)");
  EXPECT_EQ(Infer("conv1d", {T({n, 3, 8}), T({4, 3, 3, 3})}), "error: conv1d: weight must be 3-d, got ndim 4");
  EXPECT_EQ(Infer("conv1d", {T({n, 3, 8}), T({4, 3, 3})}, {{"padding", Ints{1, 2, 3}}}),
            "error: conv1d: attribute 'padding' needs 1 or 2 values, got 3");
  EXPECT_EQ(Infer("conv3d", {T({n, 3, 8, 8, 8}), T({4, 3, 3, 3, 3})}, {{"dilation", Ints{1, 2}}}),
            "error: conv3d: attribute 'dilation' needs 1 or 3 values, got 2");
  EXPECT_EQ(Infer("conv1d", {T({n, 3, 2}), T({4, 3, 3})}),
            "error: conv1d: window of 3 (dilation 1) is larger than the padded width dim 2 + 0");
}

TEST(ConvTransposeTest, OutputSizes) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var l = tir::Var::Shape("l");
  // (5 - 1) * 2 - 1 - 1 + 1 * (3 - 1) + 1 + 1 = 10 (as PyTorch's ConvTranspose1d).
  EXPECT_EQ(Infer("conv1d_transpose", {T({1, 4, 5}), T({4, 3, 3})},
                  {{"strides", Ints{2}}, {"padding", Ints{1}}, {"output_padding", Ints{1}}}),
            "Tensor((1, 3, 10), float32)");
  EXPECT_EQ(Infer("conv1d_transpose", {T({n, 4, l}), T({4, 3, 3})}, {{"strides", Ints{2}}}),
            "Tensor((n, 3, 2 * l + 1), float32)");
  // Groups: out channels = weight dim 1 * groups.
  EXPECT_EQ(Infer("conv2d_transpose", {T({2, 4, 3, 4}), T({4, 3, 3, 2})},
                  {{"strides", Ints{2, 3}},
                   {"padding", Ints{1, 0, 0, 1}},
                   {"output_padding", Ints{1, 0}},
                   {"dilation", Ints{1, 2}},
                   {"groups", int64_t{2}}}),
            "Tensor((2, 6, 7, 11), float32)");
  EXPECT_EQ(Infer("conv2d_transpose", {T({n, 4, 3, 3}), T({5, 3, 3, 3})}),
            "error: conv2d_transpose: data channels (dim 1: 4) differ from weight in_channels (dim 0: 5)");
  EXPECT_EQ(Infer("conv1d_transpose", {T({n, 4, 3}), T({4, 3, 3})}, {{"strides", Ints{2}}, {"output_padding", Ints{2}}}),
            "error: conv1d_transpose: output_padding (2) must be smaller than the stride (2) or the dilation (1) "
            "of spatial dim 0");
  EXPECT_EQ(Infer("conv1d_transpose", {T({n, 3, 3}), T({3, 3, 3})}, {{"groups", int64_t{2}}}),
            "error: conv1d_transpose: data channels (3) are not divisible by groups (2)");
  EXPECT_EQ(Infer("conv1d_transpose", {T({n, 3, 1}), T({3, 3, 1})}, {{"padding", Ints{1}}}),
            "error: conv1d_transpose: the padding (1 + 1) leaves no output along the width dim (1 inputs, window 1)");
}

TEST(PoolTest, CeilModeAndAverage) {
  tir::Var n = tir::Var::Shape("n");
  // ceil((8 + 2 - 3) / 2) + 1 = 5; the last window starts at 8 - 1 = 7 < 8 + 1.
  EXPECT_EQ(Infer("max_pool1d", {T({n, 3, 8})},
                  {{"pool_size", Ints{3}}, {"strides", Ints{2}}, {"padding", Ints{1}}, {"ceil_mode", true}}),
            "Tensor((n, 3, 5), float32)");
  // ONNX's test_maxpool_2d_ceil_output_size_reduce_by_one: ceil((2 - 1) / 2) + 1 = 2, but a
  // second window would start at 2, past the input: 1.
  EXPECT_EQ(Infer("max_pool2d", {T({1, 1, 2, 2})}, {{"pool_size", Ints{1}}, {"strides", Ints{2}}, {"ceil_mode", true}}),
            "Tensor((1, 1, 1, 1), float32)");
  EXPECT_EQ(Infer("avg_pool3d", {T({n, 2, 3, 4, 5})}, {{"pool_size", Ints{2}}, {"strides", Ints{1}}}),
            "Tensor((n, 2, 2, 3, 4), float32)");
  EXPECT_EQ(Infer("avg_pool2d", {T({n, 2, 3, 4}, i32)}, {{"pool_size", Ints{2}}}),
            "error: avg_pool2d: data must have a floating-point dtype, got int32");
  EXPECT_EQ(Infer("max_pool3d", {T({n, 2, 3, 4})}, {{"pool_size", Ints{2}}}),
            "error: max_pool3d: data must be 5-d, got ndim 4");
}

}  // namespace
}  // namespace kiln::relax::testing
