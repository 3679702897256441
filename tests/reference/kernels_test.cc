// Each operator against small examples computed by hand (numbers written here), run through
// the text format, the normalizer and the evaluator.
#include <gtest/gtest.h>

#include "tests/reference/test_util.h"

namespace kiln::reference {
namespace {

using testing::EvalCall;
using testing::ExpectError;
using testing::ExpectF32;
using testing::ExpectTensor;
using testing::F32;
using testing::I32;
using testing::I64;
using testing::Iota;

const DataType kI64 = DataType::Int64();
const DataType kBool = DataType::Bool();

TEST(ElementwiseKernelTest, BroadcastingArithmetic) {
  ExpectF32(EvalCall("R.add(a, b)", {F32({2, 1}, {10, 20}), F32({3}, {1, 2, 3})}), {2, 3},
            {11, 12, 13, 21, 22, 23});
  ExpectF32(EvalCall("R.subtract(a, b)", {F32({2}, {5, 5}), F32({}, {1.5})}), {2}, {3.5, 3.5});
  ExpectF32(EvalCall("R.multiply(a, b)", {F32({2, 2}, {1, 2, 3, 4}), F32({2}, {10, 100})}), {2, 2},
            {10, 200, 30, 400});
  ExpectF32(EvalCall("R.divide(a, b)", {F32({2}, {1, -3}), F32({2}, {4, 2})}), {2}, {0.25, -1.5});
  ExpectF32(EvalCall("R.maximum(a, b)", {F32({3}, {1, 5, -2}), F32({3}, {2, 4, -3})}), {3}, {2, 5, -2});
  ExpectF32(EvalCall("R.minimum(a, b)", {F32({3}, {1, 5, -2}), F32({3}, {2, 4, -3})}), {3}, {1, 4, -3});
  ExpectF32(EvalCall("R.power(a, b)", {F32({2}, {2, 9}), F32({2}, {3, 0.5})}), {2}, {8, 3});
}

TEST(ElementwiseKernelTest, IntegerArithmetic) {
  // Integer division truncates toward zero.
  ExpectTensor(EvalCall("R.divide(a, b)", {I64({4}, {-7, 7, -7, 7}), I64({4}, {2, 2, -2, -2})}), kI64,
               {4}, {-3, 3, 3, -3});
  ExpectTensor(EvalCall("R.power(a, b)", {I64({3}, {3, -2, 2}), I64({3}, {4, 3, -1})}), kI64, {3},
               {81, -8, 0});
  // int32 wraps.
  ExpectTensor(EvalCall("R.add(a, b)", {I32({1}, {2147483647}), I32({1}, {1})}), DataType::Int32(),
               {1}, {-2147483648.0});
  ExpectError(EvalCall("R.divide(a, b)", {I64({1}, {1}), I64({1}, {0})}),
              absl::StatusCode::kInvalidArgument, {"binding 'r'", "divide: integer division by zero"});
}

TEST(ElementwiseKernelTest, Comparisons) {
  auto a = F32({4}, {1, 2, 3, 4});
  auto b = F32({4}, {2, 2, 2, 2});
  ExpectTensor(EvalCall("R.equal(a, b)", {a, b}), kBool, {4}, {0, 1, 0, 0});
  ExpectTensor(EvalCall("R.not_equal(a, b)", {a, b}), kBool, {4}, {1, 0, 1, 1});
  ExpectTensor(EvalCall("R.less(a, b)", {a, b}), kBool, {4}, {1, 0, 0, 0});
  ExpectTensor(EvalCall("R.less_equal(a, b)", {a, b}), kBool, {4}, {1, 1, 0, 0});
  ExpectTensor(EvalCall("R.greater(a, b)", {a, b}), kBool, {4}, {0, 0, 1, 1});
  ExpectTensor(EvalCall("R.greater_equal(a, b)", {a, b}), kBool, {4}, {0, 1, 1, 1});
}

TEST(ElementwiseKernelTest, Unary) {
  auto x = F32({3}, {-1, 0, 1});
  ExpectF32(EvalCall("R.negative(a)", {x}), {3}, {1, 0, -1});
  ExpectF32(EvalCall("R.relu(a)", {x}), {3}, {0, 0, 1});
  ExpectTensor(EvalCall("R.relu(a)", {I64({2}, {-4, 4})}), kI64, {2}, {0, 4});
  ExpectF32(EvalCall("R.exp(a)", {x}), {3}, {0.36787944117144233, 1, 2.718281828459045}, 1e-6);
  ExpectF32(EvalCall("R.log(a)", {F32({2}, {1, 2.718281828459045})}), {2}, {0, 1}, 1e-6);
  ExpectF32(EvalCall("R.sqrt(a)", {F32({2}, {4, 2})}), {2}, {2, 1.4142135623730951});
  ExpectF32(EvalCall("R.rsqrt(a)", {F32({2}, {4, 0.25})}), {2}, {0.5, 2});
  ExpectF32(EvalCall("R.tanh(a)", {x}), {3}, {-0.7615941559557649, 0, 0.7615941559557649});
  ExpectF32(EvalCall("R.sigmoid(a)", {x}), {3}, {0.2689414213699951, 0.5, 0.7310585786300049});
  // Exact erf form: 0.5 * x * (1 + erf(x / sqrt(2))).
  ExpectF32(EvalCall("R.gelu(a)", {F32({3}, {-1, 0.5, 1})}), {3},
            {-0.15865525393145707, 0.34573123063700656, 0.8413447460685429});
  ExpectF32(EvalCall("R.silu(a)", {x}), {3}, {-0.2689414213699951, 0, 0.7310585786300049});
}

TEST(ElementwiseKernelTest, Where) {
  auto cond = HostTensor::FromInts(kBool, {2, 1}, {1, 0});
  ExpectF32(EvalCall("R.where(a, b, c)", {cond, F32({3}, {1, 2, 3}), F32({}, {-1})}), {2, 3},
            {1, 2, 3, -1, -1, -1});
}

TEST(MatmulKernelTest, TwoByThreeTimesThreeByTwo) {
  ExpectF32(EvalCall("R.matmul(a, b)", {F32({2, 3}, {1, 2, 3, 4, 5, 6}),
                                        F32({3, 2}, {7, 8, 9, 10, 11, 12})}),
            {2, 2}, {58, 64, 139, 154});
}

TEST(MatmulKernelTest, VectorsAndBatches) {
  auto m = F32({3, 2}, {7, 8, 9, 10, 11, 12});
  // 1-D lhs: (3) @ (3, 2) -> (2).
  ExpectF32(EvalCall("R.matmul(a, b)", {F32({3}, {1, 2, 3}), m}), {2}, {58, 64});
  // 1-D rhs: (2, 3) @ (3) -> (2).
  ExpectF32(EvalCall("R.matmul(a, b)", {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3}, {1, 0, -1})}), {2},
            {-2, -2});
  // 1-D @ 1-D -> ().
  ExpectF32(EvalCall("R.matmul(a, b)", {F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6})}), {}, {32});
  // Batch dims broadcast: (2, 1, 2) @ (2, 1) -> (2, 1, 1).
  ExpectF32(EvalCall("R.matmul(a, b)", {F32({2, 1, 2}, {1, 2, 3, 4}), F32({2, 1}, {10, 1})}), {2, 1, 1},
            {12, 34});
  // (2, 1, 1, 2) @ (3, 2, 1) -> (2, 3, 1, 1).
  ExpectF32(EvalCall("R.matmul(a, b)", {F32({2, 1, 1, 2}, {1, 2, 3, 4}), F32({3, 2, 1}, {1, 0, 0, 1, 1, 1})}),
            {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
  ExpectTensor(EvalCall("R.matmul(a, b)", {I64({1, 2}, {3, 4}), I64({2, 1}, {5, 6})}), kI64, {1, 1}, {39});
}

TEST(ManipulateKernelTest, ReshapePermuteBroadcast) {
  ExpectF32(EvalCall("R.reshape(a, R.shape([3, -1]))", {Iota({2, 3})}), {3, 2}, {0, 1, 2, 3, 4, 5});
  ExpectF32(EvalCall("R.permute_dims(a, axes=[1, 0])", {Iota({2, 3})}), {3, 2}, {0, 3, 1, 4, 2, 5});
  ExpectF32(EvalCall("R.permute_dims(a)", {Iota({2, 1, 3})}), {3, 1, 2}, {0, 3, 1, 4, 2, 5});
  ExpectF32(EvalCall("R.permute_dims(a, axes=[0, 2, 1])", {Iota({1, 2, 2})}), {1, 2, 2}, {0, 2, 1, 3});
  ExpectF32(EvalCall("R.broadcast_to(a, R.shape([2, 2, 3]))", {Iota({2, 1})}), {2, 2, 3},
            {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1});
}

TEST(ManipulateKernelTest, ConcatSplit) {
  ExpectF32(EvalCall("R.concat((a, b), axis=1)", {Iota({2, 1}), Iota({2, 2}, 10)}), {2, 3},
            {0, 10, 11, 1, 12, 13});
  ExpectF32(EvalCall("R.concat((a, b))", {Iota({1, 2}), Iota({2, 2}, 10)}), {3, 2}, {0, 1, 10, 11, 12, 13});
  auto parts = EvalCall("R.split(a, indices_or_sections=3, axis=1)", {Iota({2, 6})});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->fields().size(), 3u);
  ExpectF32(parts->fields()[1], {2, 2}, {2, 3, 8, 9});
  auto pieces = EvalCall("R.split(a, indices_or_sections=[1, 4])", {Iota({5})});
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  ASSERT_EQ(pieces->fields().size(), 3u);
  ExpectF32(pieces->fields()[0], {1}, {0});
  ExpectF32(pieces->fields()[1], {3}, {1, 2, 3});
  ExpectF32(pieces->fields()[2], {1}, {4});
}

TEST(ManipulateKernelTest, StridedSlice) {
  auto x = Iota({6});
  ExpectF32(EvalCall("R.strided_slice(a, begin=[1], end=[5], strides=[2])", {x}), {2}, {1, 3});
  ExpectF32(EvalCall("R.strided_slice(a, begin=[4], end=[0], strides=[-2])", {x}), {2}, {4, 2});
  // end = -7 + 6 = -1 clamps to -1: through index 0.
  ExpectF32(EvalCall("R.strided_slice(a, begin=[-1], end=[-7], strides=[-1])", {x}), {6}, {5, 4, 3, 2, 1, 0});
  ExpectF32(EvalCall("R.strided_slice(a, begin=[-2], end=[2147483647])", {x}), {2}, {4, 5});
  ExpectF32(EvalCall("R.strided_slice(a, begin=[3], end=[1])", {x}), {0}, {});
  ExpectF32(EvalCall("R.strided_slice(a, begin=[3], end=[0], axes=[1], strides=[-1])", {Iota({2, 4})}),
            {2, 3}, {3, 2, 1, 7, 6, 5});
}

TEST(ManipulateKernelTest, Take) {
  ExpectF32(EvalCall("R.take(a, b, axis=1)", {Iota({2, 3}), I64({2, 2}, {2, 0, 1, 1})}), {2, 2, 2},
            {2, 0, 1, 1, 5, 3, 4, 4});
  ExpectF32(EvalCall("R.take(a, b)", {Iota({3, 2}), I32({1}, {2})}), {1, 2}, {4, 5});
  ExpectError(EvalCall("R.take(a, b)", {Iota({3}), I64({1}, {3})}), absl::StatusCode::kInvalidArgument,
              {"take: index 3 is out of range [0, 3)"});
}

TEST(ReduceKernelTest, SumMeanMaxMin) {
  auto x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectF32(EvalCall("R.sum(a, axis=[1], keepdims=true)", {x}), {2, 1}, {6, 15});
  ExpectF32(EvalCall("R.sum(a, axis=[0])", {x}), {3}, {5, 7, 9});
  ExpectF32(EvalCall("R.mean(a)", {x}), {}, {3.5});
  ExpectF32(EvalCall("R.mean(a, axis=[-1])", {x}), {2}, {2, 5});
  ExpectF32(EvalCall("R.max(a, axis=[0])", {x}), {3}, {4, 5, 6});
  ExpectF32(EvalCall("R.min(a, axis=[0, 1], keepdims=true)", {x}), {1, 1}, {1});
  ExpectTensor(EvalCall("R.sum(a)", {I64({3}, {1, 2, 3})}), kI64, {}, {6});
}

TEST(ReduceKernelTest, ArgmaxTiesTakeTheFirst) {
  auto x = F32({2, 3}, {1, 3, 3, 2, 2, 1});
  ExpectTensor(EvalCall("R.argmax(a, axis=1)", {x}), kI64, {2}, {1, 0});
  ExpectTensor(EvalCall("R.argmin(a, axis=1)", {x}), kI64, {2}, {0, 2});
  ExpectTensor(EvalCall("R.argmax(a, axis=0, keepdims=true)", {x}), kI64, {1, 3}, {1, 0, 0});
  ExpectTensor(EvalCall("R.argmax(a)", {x}), kI64, {}, {1});
}

TEST(ReduceKernelTest, Softmax) {
  ExpectF32(EvalCall("R.softmax(a)", {F32({3}, {1, 2, 3})}), {3},
            {0.09003057317038046, 0.24472847105479764, 0.6652409557748218});
  // Along axis 0; large inputs do not overflow.
  ExpectF32(EvalCall("R.softmax(a, axis=0)", {F32({2, 1}, {1000, 1000})}), {2, 1}, {0.5, 0.5});
}

TEST(ReduceKernelTest, LayerNormRow) {
  // mean 2.5, biased variance 1.25, epsilon 1e-5.
  ExpectF32(EvalCall("R.layer_norm(a, b, c, axes=[-1], epsilon=1e-05)",
                     {F32({1, 4}, {1, 2, 3, 4}), F32({4}, {1, 2, 0.5, -1}), F32({4}, {0, 1, 0, 2})}),
            {1, 4}, {-1.3416354199689269, 0.105576386687382, 0.2236059033281545, 0.6583645800310731});
}

TEST(ReduceKernelTest, RmsNorm) {
  // rms = sqrt((9 + 16) / 2 + 1e-5).
  ExpectF32(EvalCall("R.rms_norm(a, b, epsilon=1e-05)", {F32({2}, {3, 4}), F32({2}, {1, 2})}), {2},
            {0.8485277980128058, 2.2627407947008153});
}

TEST(ReduceKernelTest, AsType) {
  ExpectTensor(EvalCall("R.astype(a, dtype=int32)", {F32({3}, {1.7, -1.7, 0.2})}), DataType::Int32(), {3},
               {1, -1, 0});
  ExpectTensor(EvalCall("R.astype(a, dtype=float16)", {F32({2}, {0.1, 65519})}), DataType::Float(16), {2},
               {0.0999755859375, 65504});
  ExpectTensor(EvalCall("R.astype(a, dtype=bool)", {I64({2}, {0, 7})}), kBool, {2}, {0, 1});
}

TEST(CreateKernelTest, FullZerosOnesArange) {
  ExpectTensor(EvalCall("R.full(R.shape([2]), R.prim(7))", {}), kI64, {2}, {7, 7});
  ExpectF32(EvalCall("R.full(R.shape([1, 2]), a, dtype=float32)", {I64({}, {3})}), {1, 2}, {3, 3});
  ExpectF32(EvalCall("R.zeros(R.shape([2]))", {}), {2}, {0, 0});
  ExpectTensor(EvalCall("R.ones(R.shape([2]), dtype=int32)", {}), DataType::Int32(), {2}, {1, 1});
  ExpectTensor(EvalCall("R.arange(R.prim(5))", {}), kI64, {5}, {0, 1, 2, 3, 4});
  ExpectTensor(EvalCall("R.arange(R.prim(2), R.prim(11), R.prim(3))", {}), kI64, {3}, {2, 5, 8});
  ExpectTensor(EvalCall("R.arange(R.prim(5), R.prim(0), R.prim(-2))", {}), kI64, {3}, {5, 3, 1});
  ExpectTensor(EvalCall("R.arange(R.prim(5), R.prim(1))", {}), kI64, {0}, {});
  ExpectF32(EvalCall("R.arange(end=2.0, step=0.5)", {}), {4}, {0, 0.5, 1, 1.5});
}

TEST(NnKernelTest, Conv2dPaddingStride) {
  // 3x3 input 1..9, 2x2 ones kernel, padding 1, stride 2: windows {1}, {2,3}, {4,7}, {5,6,8,9}.
  ExpectF32(EvalCall("R.conv2d(a, b, strides=[2, 2], padding=[1, 1])", {Iota({1, 1, 3, 3}, 1), F32({1, 1, 2, 2}, {1, 1, 1, 1})}),
            {1, 1, 2, 2}, {1, 5, 11, 28});
  // Asymmetric padding (top, left, bottom, right) = (0, 1, 0, 0), a non-uniform kernel.
  ExpectF32(EvalCall("R.conv2d(a, b, padding=[0, 1, 0, 0])", {Iota({1, 1, 2, 2}, 1), F32({1, 1, 1, 2}, {10, 1})}),
            {1, 1, 2, 2}, {1, 12, 3, 34});
  // Dilation 2 on a 3x3 input: the four corners.
  ExpectF32(EvalCall("R.conv2d(a, b, dilation=[2, 2])", {Iota({1, 1, 3, 3}, 1), F32({1, 1, 2, 2}, {1, 1, 1, 1})}),
            {1, 1, 1, 1}, {20});
}

TEST(NnKernelTest, Conv2dChannelsAndGroups) {
  // Two input channels summed into one output channel; then groups=2 scales each channel.
  auto x = F32({1, 2, 1, 2}, {1, 2, 10, 20});
  ExpectF32(EvalCall("R.conv2d(a, b)", {x, F32({1, 2, 1, 1}, {1, 3})}), {1, 1, 1, 2}, {31, 62});
  ExpectF32(EvalCall("R.conv2d(a, b, groups=2)", {x, F32({2, 1, 1, 1}, {2, 3})}), {1, 2, 1, 2},
            {2, 4, 30, 60});
  // Batch of 2, two output channels.
  ExpectF32(EvalCall("R.conv2d(a, b)", {F32({2, 1, 1, 1}, {1, 2}), F32({2, 1, 1, 1}, {5, -1})}),
            {2, 2, 1, 1}, {5, -1, 10, -2});
}

TEST(NnKernelTest, MaxPool2d) {
  ExpectF32(EvalCall("R.max_pool2d(a, pool_size=[2, 2])", {Iota({1, 1, 4, 4})}), {1, 1, 2, 2}, {5, 7, 13, 15});
  // Padding never wins, even over negative values.
  ExpectF32(EvalCall("R.max_pool2d(a, pool_size=[2, 2], strides=[2, 2], padding=[1, 1])",
                     {F32({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})}),
            {1, 1, 2, 2}, {-1, -2, -4, -5});
  ExpectF32(EvalCall("R.max_pool2d(a, pool_size=[2, 2], strides=[1, 1])", {Iota({1, 1, 3, 3}, 1)}),
            {1, 1, 2, 2}, {5, 6, 8, 9});
}

TEST(CallKernelTest, ShapeOfAndUnsupportedCalls) {
  auto shape = EvalCall("R.shape_of(a)", {Iota({2, 3})});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->shape(), (std::vector<int64_t>{2, 3}));
  ExpectError(EvalCall("R.call_dps_library(R.extern(\"lib_gelu\"), (a,), out_sinfo=Tensor((2,), float32))",
                       {Iota({2})}),
              absl::StatusCode::kUnimplemented, {"binding 'r'", "R.call_dps_library is not supported"});
}

}  // namespace
}  // namespace kiln::reference

namespace kiln::reference {
namespace {

// Shapes and bounds computed at run time that would be nonsense are errors, not crashes.
TEST(KernelErrorTest, BadRunTimeShapesAreErrors) {
  const std::string text = R"(module {
  func @main(n: Prim(int64, value=k)) -> Object {
    z = R.zeros(R.shape([k - 5]))
    return z
  }
})";
  testing::ExpectError(testing::RunText(text, {RefValue::Int(3)}), absl::StatusCode::kInvalidArgument,
                       {"binding 'z'", "zeros: shape (-2,) has a negative dim"});
  testing::ExpectError(testing::RunText(text, {RefValue::Int(int64_t{1} << 40)}),
                       absl::StatusCode::kInvalidArgument, {"zeros: shape", "more than"});
  testing::ExpectError(testing::EvalCall("R.arange(R.prim(0), R.prim(9223372036854775807), R.prim(1))", {}),
                       absl::StatusCode::kInvalidArgument, {"arange: the length", "does not fit in int64"});
  testing::ExpectError(testing::EvalCall("R.arange(R.prim(0), R.prim(1099511627776), R.prim(1))", {}),
                       absl::StatusCode::kInvalidArgument, {"arange: the range has more than"});
  testing::ExpectTensor(testing::EvalCall("R.power(a, b)", {testing::I64({1}, {1}), testing::I64({1}, {int64_t{1} << 62})}),
                        kI64, {1}, {1});
  ExpectF32(EvalCall("R.strided_slice(a, begin=[5], end=[-2147483648], strides=[-4])", {Iota({6})}), {2}, {5, 1});
}

// Strides near 2^63 must not overflow the length computation: numpy gives one element.
// Evaluated without the normalizer: strided_slice's inference (ops branch) currently infers
// length 0 for these (its ceil((end - begin) / stride) overflows), which the evaluator
// would report as a struct-info disagreement.
TEST(KernelErrorTest, HugeStridesDoNotOverflow) {
  auto parsed = relax::ParseModule(R"(module {
  func @main(a: Tensor((6,), float32)) -> Object {
    r1 = R.strided_slice(a, begin=[5], end=[-2147483648], strides=[-9223372036854775807])
    r2 = R.strided_slice(a, begin=[0], end=[6], strides=[9223372036854775807])
    r = (r1, r2)
    return r
  }
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto r = Evaluate(parsed->module, "main", {Iota({6})});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectF32(r->fields()[0], {1}, {5});
  ExpectF32(r->fields()[1], {1}, {0});
}

}  // namespace
}  // namespace kiln::reference
