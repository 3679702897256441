#include <gtest/gtest.h>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

TEST(BatchNormTest, InferenceAndErrors) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var c = tir::Var::Shape("c");
  EXPECT_EQ(Infer("batch_norm", {T({n, 3, 5}), T({3}), T({3}), T({3}), T({3})}, {{"epsilon", 1e-3}}),
            "Tensor((n, 3, 5), float32)");
  EXPECT_EQ(Infer("batch_norm", {T({n, c}), T({c}), T({c}), T({c}), T({c})}), "Tensor((n, c), float32)");
  EXPECT_EQ(Infer("batch_norm", {T({n, 3, 5}), T({3}), T({4}), T({3}), T({3})}),
            "error: batch_norm: bias has 4 elements, data has 3 channels (dim 1)");
  EXPECT_EQ(Infer("batch_norm", {T({n, 3, 5}), T({3}), T({3}), T({3, 1}), T({3})}),
            "error: batch_norm: mean must be 1-d (one value per channel), got ndim 2");
  EXPECT_EQ(Infer("batch_norm", {T({n}), T({3}), T({3}), T({3}), T({3})}),
            "error: batch_norm: data must have at least 2 dimensions (N, C, ...), got ndim 1");
  EXPECT_EQ(Infer("batch_norm", {T({n, 3}, i32), T({3}), T({3}), T({3}), T({3})}),
            "error: batch_norm: data must have a floating-point dtype, got int32");
  EXPECT_EQ(Infer("batch_norm", {T({n, 3}), T({3}, f16), T({3}), T({3}), T({3})}),
            "error: batch_norm: dtypes differ: data is float32, scale is float16");
  EXPECT_EQ(Infer("batch_norm", {T({n, 3}), T({3}), T({3}), T({3}), T({3})}, {{"epsilon", -1.0}}),
            "error: batch_norm: epsilon must be finite and non-negative, got -1");
}

TEST(GroupNormTest, InferenceAndErrors) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("group_norm", {T({n, 6, 4, 4}), T({6}), T({6})}, {{"num_groups", int64_t{3}}}),
            "Tensor((n, 6, 4, 4), float32)");
  EXPECT_EQ(Infer("group_norm", {T({n, 6, 4}), T({6}), T({6})}, {{"num_groups", int64_t{4}}}),
            "error: group_norm: data channels (6) are not divisible by num_groups (4)");
  EXPECT_EQ(Infer("group_norm", {T({n, 6, 4}), T({6}), T({6})}),
            "error: group_norm: attribute 'num_groups' is required");
  EXPECT_EQ(Infer("group_norm", {T({n, 6, 4}), T({6}), T({6})}, {{"num_groups", int64_t{0}}}),
            "error: group_norm: num_groups must be positive, got 0");
  EXPECT_EQ(Infer("instance_norm", {T({n, 3, 7}), T({3}), T({3})}), "Tensor((n, 3, 7), float32)");
  EXPECT_EQ(Infer("instance_norm", {T({n, 3}), T({3}), T({3})}),
            "error: instance_norm: data must have at least 3 dimensions (N, C, ...), got ndim 2");
}

TEST(LrnTest, InferenceAndErrors) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("lrn", {T({n, 5, 3})}, {{"size", int64_t{3}}, {"alpha", 1e-4}}), "Tensor((n, 5, 3), float32)");
  EXPECT_EQ(Infer("lrn", {T({n, 5, 3})}), "error: lrn: attribute 'size' is required");
  EXPECT_EQ(Infer("lrn", {T({n, 5, 3})}, {{"size", int64_t{0}}}), "error: lrn: size must be positive, got 0");
}

}  // namespace
}  // namespace kiln::relax::testing
