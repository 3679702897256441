// Symbolic struct-info inference of the data-movement operators (relax/op/indexing.cc,
// rearrange.cc, sort.cc, einsum.cc, dynamic_shape.cc). Their numerics are the op harness's
// and the reference kernels' tests; errors with concrete shapes are in
// tests/reference/kernels_data_test.cc.
#include <gtest/gtest.h>

#include <cstdint>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

using Ints = std::vector<int64_t>;

TEST(DataOpsInferenceTest, Indexing) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("gather_elements", {T({n, 5}), T({n, m}, i64)}, {{"axis", int64_t{1}}}), "Tensor((n, m), float32)");
  EXPECT_EQ(Infer("gather_nd", {T({n, 3, 4}), T({n, m, 1}, i32)}, {{"batch_dims", int64_t{1}}}),
            "Tensor((n, m, 4), float32)");
  EXPECT_EQ(Infer("gather_nd", {T({n, 3}), T({m, 3}, i64)}), "error: gather_nd: the last dim of indices (3) must be in [1, 2]");
  EXPECT_EQ(Infer("scatter_nd", {T({4, n}), T({m, 1}, i64), T({m, n})}, {{"reduction", std::string("mul")}}),
            "Tensor((4, n), float32)");
  EXPECT_EQ(Infer("scatter_elements", {T({4, n}), T({m, n}, i64), T({m, n}, f16)}),
            "error: scatter_elements: dtypes differ: data is float32, updates is float16");
  EXPECT_EQ(Infer("one_hot", {T({n, m}, i64)}, {{"depth", int64_t{7}}, {"axis", int64_t{1}}}),
            "Tensor((n, 7, m), float32)");
  EXPECT_EQ(Infer("one_hot", {T({n}, i64)}), "error: one_hot: attribute 'depth' is required");
}

TEST(DataOpsInferenceTest, Rearrange) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("pad", {T({n, 4})}, {{"pads", Ints{1, -1, 2, 3}}}), "Tensor((n + 3, 6), float32)");
  EXPECT_EQ(Infer("tile", {T({n, 3})}, {{"repeats", Ints{2, 1, 3}}}), "Tensor((2, n, 9), float32)");
  EXPECT_EQ(Infer("squeeze", {T({1, n, 1})}), "Tensor((n,), float32)");
  EXPECT_EQ(Infer("squeeze", {T({1, n, 1})}, {{"axis", Ints{1}}}), "Tensor((1, 1), float32)");
  EXPECT_EQ(Infer("expand_dims", {T({n, 4})}, {{"axis", Ints{0, -1}}}), "Tensor((1, n, 4, 1), float32)");
  EXPECT_EQ(Infer("flip", {T({n, 4})}, {{"axis", Ints{2}}}), "error: flip: axes 2 is out of range for a tensor of ndim 2");
}

TEST(DataOpsInferenceTest, SortAndEinsum) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("topk", {T({n, m})}, {{"k", int64_t{3}}, {"axis", int64_t{0}}}),
            "Tuple(Tensor((3, m), float32), Tensor((3, m), int64))");
  EXPECT_EQ(Infer("argsort", {T({n, m})}, {{"dtype", i32}}), "Tensor((n, m), int32)");
  EXPECT_EQ(Infer("cumsum", {T({n, m})}), "error: cumsum: attribute 'axis' is required");
  EXPECT_EQ(Infer("einsum", {TupleOf({T({2, n, 4}), T({2, 4, m})})}, {{"subscripts", std::string("bij,bjk->bik")}}),
            "Tensor((2, n, m), float32)");
  EXPECT_EQ(Infer("einsum", {TupleOf({T({n, 1, 3}), T({m, 3, 2}), T({2})})}, {{"subscripts", std::string("...j,...jk,k")}}),
            "Tensor((n, m), float32)");
  EXPECT_EQ(Infer("einsum", {TupleOf({T({n, 5, 5})})}, {{"subscripts", std::string("...ii->...i")}}),
            "Tensor((n, 5), float32)");
}

TEST(DataOpsInferenceTest, ShapesFromData) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("dynamic_strided_slice", {T({n, 4}), T({1}, i64), T({1}, i64), T({1}, i64)}),
            "Tensor(ndim=2, float32)");
  EXPECT_EQ(Infer("dynamic_strided_slice", {T({n, 4}), T({3}, i64), T({3}, i64), T({3}, i64)}),
            "error: dynamic_strided_slice: slices 3 axes of a tensor of ndim 2");
  EXPECT_EQ(Infer("tensor_to_shape", {T({3}, i64)}), "Shape(ndim=3)");
  EXPECT_EQ(Infer("tensor_to_shape", {T({3}, i32)}), "error: tensor_to_shape: data must be int64, got int32");
}

}  // namespace
}  // namespace kiln::relax::testing
