#include <gtest/gtest.h>

#include <cstdint>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

using Ints = std::vector<int64_t>;

TEST(ReshapeTest, InfersMinusOneSymbolically) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("reshape", {T({n, 4, 8}), ShapeExpr({-1, 32})}), "Tensor((n, 32), float32)");
  EXPECT_EQ(Infer("reshape", {T({n, 4, 8}), ShapeExpr({n, -1})}), "Tensor((n, 32), float32)");
  EXPECT_EQ(Infer("reshape", {T({n, 4, 8}), ShapeExpr({-1})}), "Tensor((32 * n,), float32)");
  EXPECT_EQ(Infer("reshape", {T({n, m, 6}), ShapeExpr({m, 3, -1})}),
            "Tensor((m, 3, 2 * n), float32)");
  EXPECT_EQ(Infer("reshape", {T({n + 1, 4}), ShapeExpr({2, -1})}),
            "Tensor((2, 2 * n + 2), float32)");
  // Factors that do not cancel: the quotient stays a floordiv.
  EXPECT_EQ(Infer("reshape", {T({n, 4}), ShapeExpr({m, -1})}),
            "Tensor((m, floordiv(4 * n, m)), float32)");
  EXPECT_EQ(Infer("reshape", {T({2, 3, 4}), ShapeExpr({-1, 4})}), "Tensor((6, 4), float32)");
}

TEST(ReshapeTest, ChecksElementCounts) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("reshape", {T({n, 4}), ShapeExpr({4, n})}), "Tensor((4, n), float32)");
  EXPECT_EQ(Infer("reshape", {T({n, 4}), ShapeExpr({m, 4})}), "Tensor((m, 4), float32)");
  EXPECT_EQ(Infer("reshape", {T({n, 4, 8}), ShapeExpr({n, 33})}),
            "error: reshape: cannot reshape (n, 4, 8) (32 * n elements) into (n, 33)");
  EXPECT_EQ(Infer("reshape", {T({2, 3}), ShapeExpr({-1, 4})}),
            "error: reshape: cannot reshape (2, 3) (6 elements) into (-1, 4)");
  // A remainder that is the same for every n is an error now, not at every run; one that
  // depends on n is checked at run time.
  EXPECT_EQ(Infer("reshape", {T({2 * n + 1}), ShapeExpr({-1, 2})}),
            "error: reshape: cannot infer the -1 dim: data (2 * n + 1) has 2 * n + 1 elements, which leave remainder 1 "
            "when divided by the other dims of (-1, 2) (2 elements) for every value of its symbols");
  EXPECT_EQ(Infer("reshape", {T({n, 4}), ShapeExpr({-1, 8})}), "Tensor((floordiv(n, 2), 8), float32)");
  EXPECT_EQ(Infer("reshape", {T({n}), ShapeExpr({-1, -1})}),
            "error: reshape: at most one -1 in the new shape, got dims 0 and 1");
  EXPECT_EQ(Infer("reshape", {T({n}), ShapeExpr({-2})}),
            "error: reshape: new shape dim 0 is negative (-2)");
  // Found by the ONNX importer's fuzzing under UBSan: the constant product overflowed.
  EXPECT_EQ(Infer("reshape", {T({n, 4}), ShapeExpr({INT64_MAX, 4})}),
            "error: reshape: the element count of (9223372036854775807, 4) does not fit in int64");
  EXPECT_EQ(Infer("reshape", {T({n}), T({n})}),
            "error: reshape: shape (argument 1) must be a Shape, got Tensor((n,), float32)");
}

TEST(ReshapeTest, UnknownInputs) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("reshape", {TNdim(kUnknownNdim), ShapeExpr({n, 4})}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("reshape", {TNdim(2), ShapeExpr({n, -1})}), "Tensor(ndim=2, float32)");
  EXPECT_EQ(Infer("reshape", {T({n, 4}), Var("s", ShapeSInfoOfNdim(3))}),
            "Tensor(ndim=3, float32)");
}

TEST(PermuteDimsTest, Axes) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("permute_dims", {T({n, 4, n + 1})}), "Tensor((n + 1, 4, n), float32)");
  EXPECT_EQ(Infer("permute_dims", {T({n, 4, 8})}, {{"axes", Ints{0, 2, 1}}}),
            "Tensor((n, 8, 4), float32)");
  EXPECT_EQ(Infer("permute_dims", {T({n, 4, 8})}, {{"axes", Ints{-1, 0, 1}}}),
            "Tensor((8, n, 4), float32)");
  EXPECT_EQ(Infer("permute_dims", {T({n, 4, 8})}, {{"axes", Ints{0, 0, 1}}}),
            "error: permute_dims: axes names axis 0 twice (0 and 0)");
  EXPECT_EQ(Infer("permute_dims", {T({n, 4, 8})}, {{"axes", Ints{0, 1}}}),
            "error: permute_dims: axes has 2 entries for a tensor of ndim 3");
  EXPECT_EQ(Infer("permute_dims", {T({n, 4})}, {{"axes", Ints{0, 2}}}),
            "error: permute_dims: axes 2 is out of range for a tensor of ndim 2");
  EXPECT_EQ(Infer("permute_dims", {TNdim(kUnknownNdim)}), "Tensor(float32)");
  EXPECT_EQ(Infer("permute_dims", {TNdim(kUnknownNdim)}, {{"axes", Ints{1, 0}}}),
            "Tensor(ndim=2, float32)");
}

TEST(BroadcastToTest, Shapes) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("broadcast_to", {T({1, 4}), ShapeExpr({n, 3, 4})}), "Tensor((n, 3, 4), float32)");
  EXPECT_EQ(Infer("broadcast_to", {T({n + 1, 1}), ShapeExpr({n + 1, 8})}),
            "Tensor((n + 1, 8), float32)");
  EXPECT_EQ(Infer("broadcast_to", {T({n, 1}), ShapeExpr({n + 1, 8})}),
            "error: broadcast_to: cannot broadcast dim 0 (n) to target dim 0 (n + 1)");
  EXPECT_EQ(Infer("broadcast_to", {T({2, 3, 4}), ShapeExpr({3, 4})}),
            "error: broadcast_to: cannot broadcast a tensor of ndim 3 to ndim 2");
  EXPECT_EQ(Infer("broadcast_to", {TNdim(kUnknownNdim), ShapeExpr({n, 4})}),
            "Tensor((n, 4), float32)");
}

TEST(ConcatTest, SumsAlongAxis) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("concat", {TupleOf({T({n, 4}), T({m, 4}), T({2, 4})})}),
            "Tensor((m + n + 2, 4), float32)");
  EXPECT_EQ(Infer("concat", {TupleOf({T({3, n}), T({3, n + 1})})}, {{"axis", int64_t{-1}}}),
            "Tensor((3, 2 * n + 1), float32)");
  EXPECT_EQ(Infer("concat", {TupleOf({T({3, n}), T({4, n})})}, {{"axis", int64_t{1}}}),
            "error: concat: field 1 dim 0 (4) differs from field 0 (3)");
  EXPECT_EQ(Infer("concat", {TupleOf({T({3, n}), T({3}, f32)})}),
            "error: concat: fields differ in ndim: 2 vs 1 (field 1)");
  EXPECT_EQ(Infer("concat", {TupleOf({T({3}), T({3}, i64)})}),
            "error: concat: dtypes differ: field 0 is float32, field 1 is int64");
  EXPECT_EQ(Infer("concat", {TupleOf({T({3}), TNdim(1)})}), "Tensor(ndim=1, float32)");
  EXPECT_EQ(Infer("concat", {TupleOf({TNdim(kUnknownNdim), T({n, 2})})}),
            "Tensor(ndim=2, float32)");
  EXPECT_EQ(Infer("concat", {TupleOf({T({3}), T({tir::Var("k", i32)})})}),
            "error: concat: field 1 dim 0 (k) must be an int64 expression, got int32");
  EXPECT_EQ(Infer("reshape", {T({n}), ShapeExpr({tir::Var("k", i32)})}),
            "error: reshape: shape (argument 1) dim 0 (k) must be an int64 expression, got int32");
  EXPECT_EQ(Infer("concat", {T({3})}),
            "error: concat: expects a Tuple of tensors, got Tensor((3,), float32)");
}

TEST(SplitTest, SectionsAndIndices) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(
      Infer("split", {T({n, 6})}, {{"indices_or_sections", int64_t{3}}, {"axis", int64_t{1}}}),
      "Tuple(Tensor((n, 2), float32), Tensor((n, 2), float32), Tensor((n, 2), float32))");
  EXPECT_EQ(Infer("split", {T({n, 6})}, {{"indices_or_sections", int64_t{2}}}),
            "Tuple(Tensor((floordiv(n, 2), 6), float32), Tensor((floordiv(n, 2), 6), float32))");
  EXPECT_EQ(
      Infer("split", {T({n, 6})}, {{"indices_or_sections", Ints{2, 5}}, {"axis", int64_t{1}}}),
      "Tuple(Tensor((n, 2), float32), Tensor((n, 3), float32), Tensor((n, 1), float32))");
  EXPECT_EQ(Infer("split", {T({n})}, {{"indices_or_sections", Ints{2}}}),
            "Tuple(Tensor((2,), float32), Tensor((n - 2,), float32))");
  // A constant dim clamps the split points (numpy).
  EXPECT_EQ(Infer("split", {T({4})}, {{"indices_or_sections", Ints{2, 9}}}),
            "Tuple(Tensor((2,), float32), Tensor((2,), float32), Tensor((0,), float32))");
  EXPECT_EQ(
      Infer("split", {T({n, 7})}, {{"indices_or_sections", int64_t{2}}, {"axis", int64_t{1}}}),
      "error: split: dim 1 (7) does not split into 2 equal sections");
  EXPECT_EQ(Infer("split", {T({n})}, {}),
            "error: split: attribute 'indices_or_sections' is required");
  EXPECT_EQ(Infer("split", {TNdim(kUnknownNdim)}, {{"indices_or_sections", int64_t{2}}}),
            "Tuple(Tensor(float32), Tensor(float32))");
  EXPECT_EQ(Infer("split", {T({n})}, {{"indices_or_sections", Ints{3, 2}}}),
            "error: split: split indices must be non-negative and increasing");
}

TEST(StridedSliceTest, ConstantAndSymbolicDims) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("strided_slice", {T({10, 8})},
                  {{"axes", Ints{0}}, {"begin", Ints{2}}, {"end", Ints{7}}, {"strides", Ints{2}}}),
            "Tensor((3, 8), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({10, 8})}, {{"begin", Ints{-3, 0}}, {"end", Ints{100, 4}}}),
            "Tensor((3, 4), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({10})},
                  {{"begin", Ints{-1}}, {"end", Ints{-11}}, {"strides", Ints{-1}}}),
            "Tensor((10,), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({10})}, {{"begin", Ints{7}}, {"end", Ints{2}}}),
            "Tensor((0,), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({10})},
                  {{"begin", Ints{8}}, {"end", Ints{INT64_MIN}}, {"strides", Ints{-3}}}),
            "Tensor((3,), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({10})},
                  {{"begin", Ints{2}}, {"end", Ints{INT64_MAX}}, {"strides", Ints{-1}}}),
            "Tensor((0,), float32)");
  // Symbolic dim: "to the end" gives n - begin; clamps stay as min/max.
  EXPECT_EQ(Infer("strided_slice", {T({n})},
                  {{"begin", Ints{INT64_MAX}}, {"end", Ints{INT64_MIN}}, {"strides", Ints{-1}}}),
            "Tensor((n,), float32)");
  EXPECT_EQ(
      Infer("strided_slice", {T({n, 4})}, {{"begin", Ints{0}}, {"end", Ints{int64_t{1} << 40}}}),
      "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({n + 1, 4})},
                  {{"axes", Ints{1}}, {"begin", Ints{1}}, {"end", Ints{3}}}),
            "Tensor((n + 1, 2), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({n})}, {{"begin", Ints{0}}, {"end", Ints{2}}}),
            "Tensor((min(n, 2),), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({n})}, {{"begin", Ints{1}}, {"end", Ints{int64_t{1} << 40}}}),
            "Tensor((max(n - 1, 0),), float32)");
  EXPECT_EQ(Infer("strided_slice", {T({n})},
                  {{"begin", Ints{0}}, {"end", Ints{2}}, {"strides", Ints{0}}}),
            "error: strided_slice: stride 0 is 0");
  EXPECT_EQ(Infer("strided_slice", {T({n})}, {{"begin", Ints{0, 1}}, {"end", Ints{2}}}),
            "error: strided_slice: begin, end, axes and strides must have the same length, got 2, "
            "1, 2, 2");
  EXPECT_EQ(Infer("strided_slice", {T({n})}, {{"end", Ints{2}}}),
            "error: strided_slice: attributes 'begin' and 'end' are required");
  EXPECT_EQ(Infer("strided_slice", {TNdim(kUnknownNdim)}, {{"begin", Ints{0}}, {"end", Ints{2}}}),
            "Tensor(float32)");
}

TEST(TakeTest, GathersAlongAxis) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var k = tir::Var::Shape("k");
  EXPECT_EQ(Infer("take", {T({n, 16}), T({k}, i64)}), "Tensor((k, 16), float32)");
  EXPECT_EQ(Infer("take", {T({n, 16, 3}), T({2, k}, i32)}, {{"axis", int64_t{1}}}),
            "Tensor((n, 2, k, 3), float32)");
  EXPECT_EQ(Infer("take", {T({n, 16}), T({k}, f32)}),
            "error: take: indices must have an integer dtype, got float32");
  EXPECT_EQ(Infer("take", {T({n, 16}), T({k}, i64)}, {{"axis", int64_t{2}}}),
            "error: take: axis 2 is out of range for a tensor of ndim 2");
  EXPECT_EQ(Infer("take", {T({n, 16}), TNdim(kUnknownNdim, i64)}), "Tensor(float32)");
  EXPECT_EQ(Infer("take", {TNdim(2), TNdim(1, i64)}), "Tensor(ndim=2, float32)");
}

}  // namespace
}  // namespace kiln::relax::testing
