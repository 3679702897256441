#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

TEST(CreateTest, FullZerosOnes) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("full", {ShapeExpr({n, 4}), PrimValue(tir::FloatImm(f32, 1.5))}),
            "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("full", {ShapeExpr({n + 1}), PrimValue(int64_t{0})}, {{"dtype", f16}}),
            "Tensor((n + 1,), float16)");
  EXPECT_EQ(Infer("full", {ShapeExpr({n}), T({}, i32)}), "Tensor((n,), int32)");
  EXPECT_EQ(
      Infer("full", {ShapeExpr({n}), T({2}, i32)}),
      "error: full: fill_value must be a scalar (Prim or 0-d tensor), got Tensor((2,), int32)");
  EXPECT_EQ(Infer("full", {T({n}), PrimValue(1)}),
            "error: full: shape (argument 0) must be a Shape, got Tensor((n,), float32)");
  EXPECT_EQ(Infer("zeros", {ShapeExpr({n, 2})}), "Tensor((n, 2), float32)");
  EXPECT_EQ(Infer("ones", {ShapeExpr({n, 2})}, {{"dtype", i64}}), "Tensor((n, 2), int64)");
  EXPECT_EQ(Infer("ones", {Var("s", ShapeSInfoOfNdim(3))}), "Tensor(ndim=3, float32)");
  EXPECT_EQ(Infer("zeros", {ShapeExpr({-1})}), "error: zeros: shape dim 0 is negative (-1)");
}

TEST(CreateTest, ArangeLengths) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{5})}), "Tensor((5,), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{2}), PrimValue(int64_t{11}), PrimValue(int64_t{3})}),
            "Tensor((3,), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{5}), PrimValue(int64_t{1})}), "Tensor((0,), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{5}), PrimValue(int64_t{0}), PrimValue(int64_t{-2})}),
            "Tensor((3,), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(n)}), "Tensor((n,), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(m), PrimValue(n)}), "Tensor((n - m,), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{0}), PrimValue(n), PrimValue(int64_t{2})}),
            "Tensor((floordiv(n + 1, 2),), int64)");
  EXPECT_EQ(Infer("arange", {PrimValue(m), PrimValue(n + 1), PrimValue(int64_t{-3})}),
            "Tensor((floordiv(m - n + 1, 3),), int64)");
  tir::Var s = tir::Var::Shape("s");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{0}), PrimValue(n), PrimValue(s)}),
            "Tensor((floordiv(n + s - 1, s),), int64)");
  EXPECT_EQ(Infer("arange", {}, {{"end", 2.0}, {"step", 0.5}}), "Tensor((4,), float32)");
  EXPECT_EQ(Infer("arange", {}, {{"start", int64_t{1}}, {"end", int64_t{4}}, {"dtype", f32}}),
            "Tensor((3,), float32)");
  EXPECT_EQ(Infer("arange", {PrimValue(tir::FloatImm(f32, 0.5)), PrimValue(n)}),
            "Tensor(ndim=1, float32)");
  EXPECT_EQ(Infer("arange", {Var("p", PrimSInfo(i64))}), "Tensor(ndim=1, int64)");
  EXPECT_EQ(Infer("arange", {}, {{"start", int64_t{1}}}),
            "error: arange: attribute 'end' is required");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{1}), PrimValue(int64_t{4}), PrimValue(int64_t{0})}),
            "error: arange: step must not be 0");
  EXPECT_EQ(Infer("arange", {PrimValue(int64_t{4})}, {{"end", int64_t{4}}}),
            "error: arange: bounds come from the arguments or from attributes, not both");
  EXPECT_EQ(Infer("arange", {T({})}),
            "error: arange: argument 0 must be a Prim, got Tensor((), float32)");
  // Before, the length was cast from a double that did not fit, and came out as the dim
  // -9223372036854775808, refused only when the tensor was allocated.
  EXPECT_EQ(Infer("arange", {}, {{"end", 1e30}}),
            "error: arange: the length ceil((end - start) / step) = 1e+30 does not fit in int64");
  EXPECT_EQ(Infer("arange", {}, {{"end", std::numeric_limits<double>::infinity()}}),
            "error: arange: bounds must be finite, got start 0, end inf, step 1");
  EXPECT_EQ(Infer("arange", {}, {{"start", std::nan("")}, {"end", 3.0}}),
            "error: arange: bounds must be finite, got start nan, end 3, step 1");
}

}  // namespace
}  // namespace kiln::relax::testing
