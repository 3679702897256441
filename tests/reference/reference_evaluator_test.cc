// Whole modules through ParseModule -> NormalizeModule -> Evaluate: control flow, symbolic
// shapes, calls between functions, argument checking, and the example models for several
// symbolic sizes, checked by shape and by invariants (softmax rows sum to 1, layer-normed
// rows have mean 0 and variance 1).
#include "tests/reference/reference_evaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/reference/test_util.h"

namespace kiln::reference {
namespace {

using testing::ExpectError;
using testing::ExpectF32;
using testing::F32;
using testing::Iota;
using testing::ParseAndNormalize;
using testing::ReadSource;
using testing::RunText;

HostTensor Random(std::vector<int64_t> shape, std::mt19937& rng, double scale = 1.0) {
  std::uniform_real_distribution<double> dist(-scale, scale);
  HostTensor t(DataType::Float32(), std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, dist(rng));
  return t;
}

relax::IRModule LoadModule(const std::string& path) {
  std::string text = ReadSource(path);
  EXPECT_FALSE(text.empty()) << "cannot read " << path;
  auto module = ParseAndNormalize(text);
  EXPECT_TRUE(module.ok()) << path << ": " << module.status();
  return module.ok() ? *module : relax::IRModule();
}

// Each row (last axis) sums to 1 and lies in [0, 1].
void ExpectRowsAreDistributions(const HostTensor& t) {
  int64_t cols = t.shape().back();
  for (int64_t r = 0; r < t.numel() / cols; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double v = t.GetDouble(r * cols + c);
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
}

TEST(ReferenceEvaluatorTest, MlpModule) {
  relax::IRModule module = LoadModule("tests/relax/modules/mlp.kir");
  std::mt19937 rng(1);
  auto w0 = Random({784, 128}, rng, 0.05), b0 = Random({128}, rng), w1 = Random({128, 10}, rng, 0.1);
  for (int64_t n : {1, 7, 64}) {
    auto result = Evaluate(module, "main", {Random({n, 784}, rng), w0, b0, w1});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->tensor().shape(), (std::vector<int64_t>{n, 10}));
    ExpectRowsAreDistributions(result->tensor());
  }
}

TEST(ReferenceEvaluatorTest, ExampleMlpModel) {
  relax::IRModule module = LoadModule("examples/models/mlp.kir");
  std::mt19937 rng(2);
  auto w0 = Random({784, 256}, rng, 0.05), b0 = Random({256}, rng), w1 = Random({256, 10}, rng, 0.1),
       b1 = Random({10}, rng);
  for (int64_t n : {1, 7, 64}) {
    auto result = Evaluate(module, "main", {Random({n, 784}, rng), w0, b0, w1, b1});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->tensor().shape(), (std::vector<int64_t>{n, 10}));
    ExpectRowsAreDistributions(result->tensor());
  }
}

TEST(ReferenceEvaluatorTest, AttentionModule) {
  relax::IRModule module = LoadModule("tests/relax/modules/attention.kir");
  std::mt19937 rng(3);
  for (int64_t s : {1, 7, 64}) {
    auto v = Random({1, s, 64}, rng);
    auto result = Evaluate(module, "attention", {Random({1, s, 64}, rng), Random({1, s, 64}, rng), v});
    ASSERT_TRUE(result.ok()) << result.status();
    const HostTensor& out = result->tensor();
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{1, s, 64}));
    // Each output row is a convex combination of v's rows: within each column's range.
    for (int64_t c = 0; c < 64; ++c) {
      double lo = INFINITY, hi = -INFINITY;
      for (int64_t r = 0; r < s; ++r) {
        lo = std::min(lo, v.GetDouble(r * 64 + c));
        hi = std::max(hi, v.GetDouble(r * 64 + c));
      }
      for (int64_t r = 0; r < s; ++r) {
        EXPECT_GE(out.GetDouble(r * 64 + c), lo - 1e-5);
        EXPECT_LE(out.GetDouble(r * 64 + c), hi + 1e-5);
      }
    }
    // With a single position the output is v itself.
    if (s == 1) {
      for (int64_t i = 0; i < 64; ++i) EXPECT_NEAR(out.GetDouble(i), v.GetDouble(i), 1e-6);
    }
  }
}

TEST(ReferenceEvaluatorTest, ExampleTransformerBlock) {
  relax::IRModule module = LoadModule("examples/models/transformer_block.kir");
  std::mt19937 rng(4);
  auto w = [&](std::vector<int64_t> shape) { return Random(std::move(shape), rng, 0.2); };
  auto ones = HostTensor::FromDoubles(DataType::Float32(), {64}, std::vector<double>(64, 1.0));
  auto zeros = HostTensor(DataType::Float32(), {64});
  for (int64_t n : {1, 7, 64}) {
    auto result = Evaluate(module, "main",
                           {Random({n, 64}, rng), w({64, 64}), w({64, 64}), w({64, 64}), w({64, 64}),
                            w({64}), w({64}), w({64, 256}), w({256}), w({256, 64}), w({64}), ones, zeros});
    ASSERT_TRUE(result.ok()) << result.status();
    const HostTensor& out = result->tensor();
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{n, 64}));
    // The final layer_norm has gamma 1 and beta 0: each row has mean 0 and variance
    // var / (var + eps), i.e. 1 up to epsilon.
    for (int64_t r = 0; r < n; ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < 64; ++c) mean += out.GetDouble(r * 64 + c);
      mean /= 64;
      for (int64_t c = 0; c < 64; ++c) var += std::pow(out.GetDouble(r * 64 + c) - mean, 2);
      var /= 64;
      EXPECT_NEAR(mean, 0.0, 1e-5) << "row " << r;
      EXPECT_NEAR(var, 1.0, 1e-3) << "row " << r;
    }
  }
}

// Two independent formulations agree: layer_norm.kir writes layer norm out of reductions;
// R.layer_norm is one kernel.
TEST(ReferenceEvaluatorTest, DecomposedLayerNormMatchesTheOperator) {
  relax::IRModule module = LoadModule("tests/relax/modules/layer_norm.kir");
  std::mt19937 rng(5);
  auto x = Random({3, 512}, rng, 2.0), gamma = Random({512}, rng), beta = Random({512}, rng);
  auto decomposed = Evaluate(module, "main", {x, gamma, beta});
  ASSERT_TRUE(decomposed.ok()) << decomposed.status();
  auto fused = testing::EvalCall("R.layer_norm(a, b, c, axes=[-1], epsilon=1e-05)", {x, gamma, beta});
  ASSERT_TRUE(fused.ok()) << fused.status();
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_NEAR(decomposed->tensor().GetDouble(i), fused->tensor().GetDouble(i), 1e-5) << i;
  }
}

TEST(ReferenceEvaluatorTest, ConvPoolModule) {
  relax::IRModule module = LoadModule("tests/relax/modules/conv_pool.kir");
  std::mt19937 rng(6);
  auto result = Evaluate(module, "main", {Random({2, 3, 32, 32}, rng), Random({16, 3, 3, 3}, rng), Random({4096, 10}, rng)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->tensor().shape(), (std::vector<int64_t>{2, 10}));
}

TEST(ReferenceEvaluatorTest, CallsRecursionAndClosures) {
  relax::IRModule module = LoadModule("tests/relax/modules/global_calls.kir");
  // countdown(3, x) squares x three times: x^8.
  auto r = Evaluate(module, "countdown", {RefValue::Int(3), F32({3}, {1, 2, -1})});
  ExpectF32(r, {3}, {1, 256, 1});
  // Unbounded recursion is an error, not a stack overflow.
  ExpectError(Evaluate(module, "countdown", {RefValue::Int(100000), F32({1}, {1})}),
              absl::StatusCode::kResourceExhausted, {"call depth exceeds"});
  // main reaches R.call_dps_library, which the reference cannot run.
  ExpectError(Evaluate(module, "main", {F32({1}, {2})}), absl::StatusCode::kUnimplemented,
              {"function 'main', binding 'c'", "call_dps_library"});
}

TEST(ReferenceEvaluatorTest, IfAndPrimValues) {
  const std::string text = R"(module {
  func @main(flag: Prim(bool), x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    y = if flag {
      a = R.exp(x)
      yield a
    } else {
      b = R.negative(x)
      yield b
    }
    return y
  }
  func @shapes(x: Tensor((n, 2 * n), float32), k: Prim(int64, value=m)) -> Shape((n + 1, floordiv(n, 2), m)) {
    big = R.prim(n * m - 7)
    t = R.prim(floordiv(0 - n, 2) + floormod(0 - n, 4))
    c = R.prim(n < m || m >= 3)
    s = R.shape([n + 1, floordiv(n, 2), m])
    both = (s, big, t, c)
    out = both[0]
    return out
  }
})";
  ExpectF32(RunText(text, {RefValue::Bool(true), F32({2}, {0, 1})}), {2}, {1, 2.718281828459045});
  ExpectF32(RunText(text, {RefValue::Bool(false), F32({2}, {0, 1})}), {2}, {0, -1});
  auto s = RunText(text, {Iota({5, 10}), RefValue::Int(4)}, "shapes");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->shape(), (std::vector<int64_t>{6, 2, 4}));
  // x's second dim must be 2 * n.
  ExpectError(RunText(text, {Iota({5, 9}), RefValue::Int(4)}, "shapes"), absl::StatusCode::kInvalidArgument,
              {"function 'shapes', parameter 'x'", "dim 1"});
}

TEST(ReferenceEvaluatorTest, MatchCastBindsSymbols) {
  relax::IRModule module = LoadModule("tests/relax/modules/match_cast.kir");
  auto r = Evaluate(module, "main", {Iota({2, 3}), RefValue::Shape({4, 5})});
  ExpectF32(r, {2, 3}, {0, 2, 4, 6, 8, 10});
  // The declared bound k <= 64 is a compile-time assumption; match_cast checks shapes only.
  const std::string text = R"(module {
  func @main(x: Tensor(ndim=1, float32)) -> Tensor(ndim=1, float32) {
    y: Tensor((4,), float32) = match_cast(x, Tensor((4,), float32))
    return y
  }
})";
  ExpectError(RunText(text, {Iota({3})}), absl::StatusCode::kInvalidArgument,
              {"function 'main', binding 'y': match_cast", "expected Tensor((4,), float32)", "Tensor((3,), float32)"});
}

TEST(ReferenceEvaluatorTest, TuplesAndConstants) {
  relax::IRModule tuples = LoadModule("tests/relax/modules/tuples.kir");
  auto y = HostTensor::FromInts(DataType::Int32(), {3}, {7, 8, 9});
  auto r = Evaluate(tuples, "main", {Iota({2, 3}), y});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->fields().size(), 2u);
  EXPECT_EQ(r->fields()[1].fields()[0].tensor().ToInts(), (std::vector<int64_t>{7, 8, 9}));

  relax::IRModule constants = LoadModule("tests/relax/modules/constants.kir");
  auto c = Evaluate(constants, "main", {});
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& f = c->fields();
  ASSERT_EQ(f.size(), 13u);
  EXPECT_EQ(f[0].tensor().ToDoubles(), (std::vector<double>{1.0, 2.5, -3.25, static_cast<double>(0.1f)}));
  EXPECT_EQ(f[3].tensor().ToDoubles(), (std::vector<double>{1.0, -2.0}));  // float16
  EXPECT_EQ(f[4].tensor().ToDoubles(), (std::vector<double>{1.0}));        // bfloat16
  EXPECT_EQ(f[7].tensor().ToInts(), (std::vector<int64_t>{0, 255}));       // uint8
  EXPECT_EQ(f[10].tensor().ToInts(), (std::vector<int64_t>{1, 0, 1}));     // bool
  EXPECT_EQ(f[12].tensor().shape(), (std::vector<int64_t>{0, 3}));
}

TEST(ReferenceEvaluatorTest, ArgumentErrorsNameFunctionAndParameter) {
  relax::IRModule module = LoadModule("tests/relax/modules/mlp.kir");
  std::mt19937 rng(7);
  auto w0 = Random({784, 128}, rng), b0 = Random({128}, rng), w1 = Random({128, 10}, rng);
  ExpectError(Evaluate(module, "main", {Random({2, 783}, rng), w0, b0, w1}), absl::StatusCode::kInvalidArgument,
              {"function 'main', parameter 'x'", "expected Tensor((n, 784), float32)", "Tensor((2, 783), float32)"});
  auto x64 = HostTensor(DataType::Float(64), {2, 784});
  ExpectError(Evaluate(module, "main", {x64, w0, b0, w1}), absl::StatusCode::kInvalidArgument,
              {"parameter 'x'", "dtype"});
  ExpectError(Evaluate(module, "main", {RefValue::Int(1), w0, b0, w1}), absl::StatusCode::kInvalidArgument,
              {"parameter 'x'", "not a Tensor"});
  ExpectError(Evaluate(module, "main", {w0}), absl::StatusCode::kInvalidArgument,
              {"function 'main' takes 4 arguments, got 1"});
  ExpectError(Evaluate(module, "nope", {}), absl::StatusCode::kNotFound, {"no function 'nope'"});
  // The bound n <= 4096 is a compile-time promise, not checked here; n beyond it still runs.
}

TEST(ReferenceEvaluatorTest, RuntimeShapeMismatchIsAnError) {
  // n vs m is accepted statically and must be equal at run time.
  const std::string text = R"(module {
  func @main(x: Tensor((n,), float32), y: Tensor((m,), float32)) -> Tensor((n,), float32) {
    z = R.add(x, y)
    return z
  }
})";
  ExpectF32(RunText(text, {Iota({2}), Iota({2})}), {2}, {0, 2});
  ExpectError(RunText(text, {Iota({2}), Iota({3})}), absl::StatusCode::kInvalidArgument,
              {"function 'main', binding 'z': add: shapes (2,) and (3,) do not broadcast"});
  // numpy would broadcast (1,) against (3,), but inference took n and m to be equal.
  ExpectError(RunText(text, {Iota({1}), Iota({3})}), absl::StatusCode::kInvalidArgument,
              {"function 'main', binding 'z'", "disagrees with the inferred struct info"});
}

TEST(ReferenceEvaluatorTest, CallTirIsUnimplemented) {
  relax::IRModule module = LoadModule("tests/relax/modules/reduction.kir");
  ExpectError(Evaluate(module, "main", {Iota({2, 3})}), absl::StatusCode::kUnimplemented,
              {"R.call_tir is not supported"});
  ExpectError(Evaluate(module, "row_sum", {}), absl::StatusCode::kUnimplemented, {"PrimFunc"});
}

}  // namespace
}  // namespace kiln::reference

namespace kiln::reference {
namespace {

// A binding annotated with struct info the operator's result does not have (possible only
// when the module skips the normalizer, or when inference is wrong) is an error naming it.
TEST(ReferenceEvaluatorTest, ValueDisagreeingWithStructInfoIsAnError) {
  auto parsed = relax::ParseModule(R"(module {
  func @main(x: Tensor((2,), float32)) -> Object {
    y: Tensor((3,), float32) = R.add(x, x)
    return y
  }
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  testing::ExpectError(Evaluate(parsed->module, "main", {testing::Iota({2})}), absl::StatusCode::kInvalidArgument,
                       {"binding 'y'", "disagrees with the inferred struct info", "dim 0"});
}

TEST(ReferenceEvaluatorTest, HalfPrecisionRoundsEveryResult) {
  // 2049 is not a float16: each result rounds to nearest even (2048) before the next op.
  auto a = HostTensor::FromDoubles(DataType::Float(16), {1}, {2048});
  auto b = HostTensor::FromDoubles(DataType::Float(16), {1}, {1});
  testing::ExpectTensor(testing::EvalCall("R.add(R.add(a, b), b)", {a, b}), DataType::Float(16), {1}, {2048}, 0);
}

}  // namespace
}  // namespace kiln::reference
