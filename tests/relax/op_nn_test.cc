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

}  // namespace
}  // namespace kiln::relax::testing
