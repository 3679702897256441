#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

using Ints = std::vector<int64_t>;

TEST(ReduceTest, SumMeanMaxOverAxes) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("sum", {T({n, 4, n + 1})}, {{"axis", Ints{1}}}), "Tensor((n, n + 1), float32)");
  EXPECT_EQ(Infer("sum", {T({n, 4, n + 1})}, {{"axis", Ints{-1, 0}}, {"keepdims", true}}),
            "Tensor((1, 4, 1), float32)");
  EXPECT_EQ(Infer("mean", {T({n, 4})}), "Tensor((), float32)");
  EXPECT_EQ(Infer("max", {T({n, 4}, i32)}, {{"keepdims", true}}), "Tensor((1, 1), int32)");
  EXPECT_EQ(Infer("min", {T({n, 4}, i32)}, {{"axis", int64_t{0}}}), "Tensor((4,), int32)");
  EXPECT_EQ(Infer("sum", {T({n, 4})}, {{"axis", Ints{2}}}),
            "error: sum: axis 2 is out of range for a tensor of ndim 2");
  EXPECT_EQ(Infer("sum", {T({n, 4})}, {{"axis", Ints{1, -1}}}), "error: sum: axis names axis 1 twice (1 and -1)");
  EXPECT_EQ(Infer("sum", {T({n, 4})}, {{"keepdims", int64_t{1}}}),
            "error: sum: attribute 'keepdims' must be a bool, got int");
  EXPECT_EQ(Infer("mean", {T({n, 4}, i32)}),
            "error: mean: data must have a floating-point dtype, got int32");
}

TEST(ReduceTest, UnknownRank) {
  EXPECT_EQ(Infer("sum", {TNdim(kUnknownNdim)}), "Tensor((), float32)");
  EXPECT_EQ(Infer("sum", {TNdim(kUnknownNdim)}, {{"axis", Ints{0}}}), "Tensor(float32)");
  EXPECT_EQ(Infer("sum", {TNdim(3)}, {{"axis", Ints{0}}}), "Tensor(ndim=2, float32)");
  EXPECT_EQ(Infer("sum", {TNdim(3)}, {{"axis", Ints{0}}, {"keepdims", true}}),
            "Tensor(ndim=3, float32)");
}

TEST(ReduceTest, ArgmaxGivesInt64) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("argmax", {T({n, 4})}, {{"axis", int64_t{-1}}}), "Tensor((n,), int64)");
  EXPECT_EQ(Infer("argmax", {T({n, 4})}, {{"axis", int64_t{0}}, {"keepdims", true}}),
            "Tensor((1, 4), int64)");
  EXPECT_EQ(Infer("argmax", {T({n, 4})}), "Tensor((), int64)");
  EXPECT_EQ(Infer("argmin", {TNdim(2, f16)}, {{"axis", int64_t{1}}}), "Tensor(ndim=1, int64)");
  EXPECT_EQ(Infer("argmax", {T({n, 4})}, {{"axis", Ints{0, 1}}}),
            "error: argmax: attribute 'axis' must be an int, got int list");
  // An empty axis has no first maximum (np.argmax refuses it); the kernel returned garbage.
  EXPECT_EQ(Infer("argmax", {T({0, 4})}, {{"axis", int64_t{0}}}),
            "error: argmax: data (0, 4) is empty along dim 0: an empty axis has no first maximum");
  EXPECT_EQ(Infer("argmin", {T({n, 0})}), "error: argmin: data (n, 0) is empty: an empty axis has no first minimum");
  EXPECT_EQ(Infer("argmax", {T({0, 4})}, {{"axis", int64_t{1}}}), "Tensor((0,), int64)");
}

TEST(SoftmaxTest, Axis) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("softmax", {T({n, n + 1})}), "Tensor((n, n + 1), float32)");
  EXPECT_EQ(Infer("softmax", {T({n, 4})}, {{"axis", int64_t{0}}}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("softmax", {T({n, 4})}, {{"axis", int64_t{2}}}),
            "error: softmax: axis 2 is out of range for a tensor of ndim 2");
  EXPECT_EQ(Infer("softmax", {T({n}, i64)}),
            "error: softmax: data must have a floating-point dtype, got int64");
  EXPECT_EQ(Infer("softmax", {TNdim(kUnknownNdim)}), "Tensor(float32)");
}

TEST(NormTest, LayerNormAndRmsNorm) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var h = tir::Var::Shape("h");
  EXPECT_EQ(Infer("layer_norm", {T({n, h}), T({h}), T({h})}, {{"epsilon", 1e-5}}),
            "Tensor((n, h), float32)");
  EXPECT_EQ(Infer("layer_norm", {T({n, 4, 8}), T({4, 8}), T({4, 8})}, {{"axes", Ints{1, 2}}}),
            "Tensor((n, 4, 8), float32)");
  EXPECT_EQ(Infer("layer_norm", {T({n, h}), T({h + 1}), T({h})}),
            "error: layer_norm: gamma dim 0 (h + 1) differs from data dim 1 (h)");
  EXPECT_EQ(Infer("layer_norm", {T({n, h}), T({n, h}), T({h})}),
            "error: layer_norm: gamma has ndim 2, expected 1 (one per normalized axis)");
  EXPECT_EQ(Infer("layer_norm", {T({n, h}), T({h}), T({h}, f16)}),
            "error: layer_norm: dtypes differ: data is float32, beta is float16");
  EXPECT_EQ(Infer("layer_norm", {T({n, h}), T({h}), T({h})}, {{"epsilon", true}}),
            "error: layer_norm: attribute 'epsilon' must be a float, got bool");
  // A NaN epsilon made every output NaN, an infinite one every output beta, without a word.
  EXPECT_EQ(Infer("layer_norm", {T({n, h}), T({h}), T({h})}, {{"epsilon", std::nan("")}}),
            "error: layer_norm: epsilon must be finite and non-negative, got nan");
  EXPECT_EQ(Infer("rms_norm", {T({n, h}), T({h})}, {{"epsilon", std::numeric_limits<double>::infinity()}}),
            "error: rms_norm: epsilon must be finite and non-negative, got inf");
  EXPECT_EQ(Infer("rms_norm", {T({n, h}), T({h})}, {{"epsilon", -1e-5}}),
            "error: rms_norm: epsilon must be finite and non-negative, got -1e-05");
  EXPECT_EQ(
      Infer("rms_norm", {T({n, h}, f16), T({h}, f16)}, {{"epsilon", 1e-6}, {"axes", Ints{-1}}}),
      "Tensor((n, h), float16)");
  EXPECT_EQ(Infer("rms_norm", {T({n, 8}), T({4})}),
            "error: rms_norm: weight dim 0 (4) differs from data dim 1 (8)");
  EXPECT_EQ(Infer("rms_norm", {TNdim(kUnknownNdim), T({h})}), "Tensor(float32)");
}

TEST(AstypeTest, ChangesDtype) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("astype", {T({n, 4})}, {{"dtype", f16}}), "Tensor((n, 4), float16)");
  EXPECT_EQ(Infer("astype", {TNdim(kUnknownNdim, std::nullopt)}, {{"dtype", std::string("int8")}}),
            "Tensor(int8)");
  EXPECT_EQ(Infer("astype", {T({n})}), "error: astype: attribute 'dtype' is required");
  EXPECT_EQ(Infer("astype", {T({n})}, {{"dtype", std::string("float33x")}})
                .rfind("error: astype: attribute 'dtype': ", 0),
            0u);
}

TEST(ReduceTest, ProdVarianceLogSoftmax) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("prod", {T({n, 4}, i32)}, {{"axis", Ints{0}}}), "Tensor((4,), int32)");
  EXPECT_EQ(Infer("variance", {T({n, 4, 5})}, {{"axis", Ints{0, 2}}, {"keepdims", true}, {"correction", int64_t{1}}}),
            "Tensor((1, 4, 1), float32)");
  EXPECT_EQ(Infer("variance", {T({n, 4}, i64)}), "error: variance: data must have a floating-point dtype, got int64");
  EXPECT_EQ(Infer("variance", {T({n, 4})}, {{"correction", int64_t{-1}}}),
            "error: variance: correction must be non-negative, got -1");
  EXPECT_EQ(Infer("log_softmax", {T({n, 4})}, {{"axis", int64_t{0}}}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("log_softmax", {T({n, 4})}, {{"axis", int64_t{2}}}),
            "error: log_softmax: axis 2 is out of range for a tensor of ndim 2");
}

}  // namespace
}  // namespace kiln::relax::testing
