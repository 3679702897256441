#include <gtest/gtest.h>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

TEST(MatmulTest, BatchedWithBroadcastBatchDims) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var b = tir::Var::Shape("b");
  EXPECT_EQ(Infer("matmul", {T({n, 4}), T({4, 8})}), "Tensor((n, 8), float32)");
  EXPECT_EQ(Infer("matmul", {T({b, n, 4}), T({4, n + 1})}), "Tensor((b, n, n + 1), float32)");
  EXPECT_EQ(Infer("matmul", {T({b, 1, n, 4}), T({3, 4, 8})}), "Tensor((b, 3, n, 8), float32)");
  EXPECT_EQ(Infer("matmul", {T({1, n, n + 1}), T({b, n + 1, 2})}), "Tensor((b, n, 2), float32)");
}

TEST(MatmulTest, OneDimensionalOperandsAsNumpy) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("matmul", {T({4}), T({4})}), "Tensor((), float32)");
  EXPECT_EQ(Infer("matmul", {T({4}), T({2, 4, n})}), "Tensor((2, n), float32)");
  EXPECT_EQ(Infer("matmul", {T({2, n, 4}), T({4})}), "Tensor((2, n), float32)");
  EXPECT_EQ(
      Infer("matmul", {T({}), T({4})}),
      "error: matmul: operands must have at least 1 dimension, got lhs ndim 0 and rhs ndim 1");
}

TEST(MatmulTest, InnerDimsMustMatch) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("matmul", {T({2, 3}), T({4, 5})}),
            "error: matmul: inner dimensions differ: lhs dim 1 is 3, rhs dim 0 is 4");
  EXPECT_EQ(Infer("matmul", {T({2, n}), T({n + 1, 5})}),
            "error: matmul: inner dimensions differ: lhs dim 1 is n, rhs dim 0 is n + 1");
  EXPECT_EQ(Infer("matmul", {T({2, n}), T({m, 5})}), "Tensor((2, 5), float32)");
  EXPECT_EQ(Infer("matmul", {T({2, 2, 3}), T({3, 3, 5})}),
            "error: matmul: cannot broadcast dim 0 (2) against dim 0 (3)");
}

TEST(MatmulTest, DtypesAndUnknowns) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("matmul", {T({n, 4}, f16), T({4, 4}, f16)}, {{"out_dtype", f32}}),
            "Tensor((n, 4), float32)");
  EXPECT_EQ(
      Infer("matmul", {T({n, 4}, f16), T({4, 4}, f16)}, {{"out_dtype", std::string("float32")}}),
      "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("matmul", {T({n, 4}, f16), T({4, 4}, f32)}),
            "error: matmul: dtypes differ: lhs is float16, rhs is float32");
  EXPECT_EQ(Infer("matmul", {T({n, 4}), T({4, 4})}, {{"out_dtype", int64_t{3}}}),
            "error: matmul: attribute 'out_dtype' must be a dtype, got int");
  EXPECT_EQ(Infer("matmul", {TNdim(kUnknownNdim), T({4, 4})}), "Tensor(float32)");
  EXPECT_EQ(Infer("matmul", {TNdim(3), T({4, 4})}), "Tensor(ndim=3, float32)");
  EXPECT_EQ(Infer("matmul", {TNdim(1), TNdim(1)}), "Tensor(ndim=0, float32)");
}

}  // namespace
}  // namespace kiln::relax::testing
