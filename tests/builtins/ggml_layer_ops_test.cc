// The kiln.ggml.* builtins (builtins/ggml_layer_ops.h) against naive implementations written
// here from llama.cpp's CPU arithmetic as described there (float64 sum of float squares and
// 1 / sqrt in float; the angle multiplied pair by pair in float and the fused rotation;
// x / (1 + exp(-x)) * up with ggml's exp polynomial): bit for bit, with the AVX2+FMA code and
// with the portable code; and bad arguments are errors.
#include "builtins/ggml_layer_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <math.h>

#include <cmath>
#include <limits>
#include <vector>

#include "builtins/default_builtins.h"
#include "builtins/ggml_simd.h"
#include "vm/dtype.h"

namespace kiln::builtins {
namespace {

vm::Tensor Make(std::vector<int64_t> shape, int salt) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(3 * std::sin(0.731 * i + salt));
  return t;
}

absl::StatusOr<vm::Tensor> Call(const char* name, std::vector<vm::Value> args) {
  const vm::BuiltinRegistry::Builtin* builtin = DefaultRegistry().FindBuiltin(name);
  if (builtin == nullptr) return absl::NotFoundError(name);
  std::vector<const vm::Value*> ptrs;
  for (const vm::Value& a : args) ptrs.push_back(&a);
  vm::BuiltinContext ctx{nullptr, nullptr, nullptr};
  vm::Value result;
  absl::Status status = builtin->fn(ctx, ptrs.data(), static_cast<int>(ptrs.size()), &result);
  if (!status.ok()) return status;
  return result.as_tensor();
}

// ggml's exp polynomial (the constants of ggml_v_expf), as its AVX-512 build rounds it (with
// the constant term, then scaled) or its AVX2 build (2^n + 2^n * j in one rounding, 2^n split
// in two beyond |n| = 126).
float NaiveExp(float x, GgmlSimd simd) {
  const float n = std::fma(x, 0x1.715476p+0f, 12582912.0f) - 12582912.0f;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192) return n > 0 ? std::numeric_limits<float>::infinity() : 0.0f;
  const float u = b * b;
  const float high = std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f));
  const int e = static_cast<int>(n);
  if (simd == GgmlSimd::kAvx512) return std::ldexp(std::fma(high, u, std::fma(0x1.ffffecp-1f, b, 1.0f)), e);
  const float j = std::fma(high, u, 0x1.ffffecp-1f * b);
  if (std::fabs(n) <= 126) return std::fma(j, std::ldexp(1.0f, e), std::ldexp(1.0f, e));
  const float s1 = std::ldexp(1.0f, n > 0 ? 127 : -125), s2 = std::ldexp(1.0f, n > 0 ? e - 127 : e + 125);
  return std::fma(s2, j, s2) * s1;
}

class GgmlLayerOps : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ForcePortableLayerOpsForTesting(GetParam()); }
  void TearDown() override { ForcePortableLayerOpsForTesting(false); }
};

TEST_P(GgmlLayerOps, RmsNormIsLlamaCppsBitForBit) {
  const int64_t rows = 5, h = 576;
  vm::Tensor x = Make({rows, h}, 1), w = Make({h}, 2);
  absl::StatusOr<vm::Tensor> y = Call("kiln.ggml.rms_norm", {vm::Value(x), vm::Value(w), vm::Value(1e-5)});
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (int64_t i = 0; i < h; ++i) {
      const float v = x.data_as<float>()[r * h + i];
      squares += v * v;  // the float product, widened
    }
    const float inverse_rms = 1.0f / std::sqrt(static_cast<float>(squares / h) + 1e-5f);
    for (int64_t i = 0; i < h; ++i) {
      const float want = inverse_rms * x.data_as<float>()[r * h + i] * w.data_as<float>()[i];
      ASSERT_EQ(y->data_as<float>()[r * h + i], want) << "row " << r << " element " << i;
    }
  }
}

TEST_P(GgmlLayerOps, RopeIsLlamaCppsBitForBit) {
  for (bool neox : {false, true}) {
    const int64_t n = 3, heads = 2, d = 64, dims = 48;
    vm::Tensor x = Make({n, heads, d}, 3);
    vm::Tensor positions = *vm::Tensor::Empty({n}, vm::DTypeInt64());
    const int64_t at[] = {0, 17, 1500};
    for (int64_t t = 0; t < n; ++t) positions.data_as<int64_t>()[t] = at[t];
    absl::StatusOr<vm::Tensor> y = Call("kiln.ggml.rope", {vm::Value(x), vm::Value(positions), vm::Value(100000.0),
                                                           vm::Value(dims), vm::Value(int64_t{neox})});
    ASSERT_TRUE(y.ok()) << y.status();
    const float step = ::powf(100000.0f, -2.0f / dims);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        const float* src = x.data_as<float>() + (t * heads + h) * d;
        const float* got = y->data_as<float>() + (t * heads + h) * d;
        float angle = static_cast<float>(at[t]);
        for (int64_t m = 0; m < dims / 2; ++m, angle *= step) {
          const int64_t a = neox ? m : 2 * m, b = neox ? m + dims / 2 : 2 * m + 1;
          const float c = ::cosf(angle), s = ::sinf(angle);
          ASSERT_EQ(got[a], std::fma(src[a], c, -(src[b] * s))) << "token " << t << " pair " << m << " neox " << neox;
          ASSERT_EQ(got[b], std::fma(src[a], s, src[b] * c)) << "token " << t << " pair " << m << " neox " << neox;
        }
        for (int64_t i = dims; i < d; ++i) ASSERT_EQ(got[i], src[i]);
      }
    }
  }
}

TEST_P(GgmlLayerOps, SwiGluIsLlamaCppsBitForBit) {
  const GgmlSimd host = ActiveGgmlSimd();
  for (GgmlSimd simd : {GgmlSimd::kAvx512, GgmlSimd::kAvx2}) {
    SCOPED_TRACE(GgmlSimdName(simd));
    SetGgmlSimd(simd);
    // 1536 + 13: the last 13 (AVX-512 build) or 5 (AVX2 build) use the C library's exp;
    // gates up to 150 reach the AVX2 exp's split scale (|n| > 126) and its saturation.
    const int64_t rows = 3, f = 1536 + 13, vectorized = simd == GgmlSimd::kAvx512 ? 1536 : 1544;
    vm::Tensor gate = Make({rows, f}, 4), up = Make({rows, f}, 5);
    for (int64_t i = 0; i < rows * f; i += 17) gate.data_as<float>()[i] *= 1 + (i % 50);
    absl::StatusOr<vm::Tensor> y = Call("kiln.ggml.swiglu", {vm::Value(gate), vm::Value(up)});
    ASSERT_TRUE(y.ok()) << y.status();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < f; ++i) {
        const float g = gate.data_as<float>()[r * f + i];
        const float e = i < vectorized ? NaiveExp(-g, simd) : ::expf(-g);
        ASSERT_EQ(y->data_as<float>()[r * f + i], g / (1 + e) * up.data_as<float>()[r * f + i])
            << "row " << r << " element " << i << " gate " << g;
      }
    }
  }
  SetGgmlSimd(host);
}

INSTANTIATE_TEST_SUITE_P(Paths, GgmlLayerOps, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Portable" : "Fastest"; });

TEST(GgmlLayerOpsErrors, BadArgumentsAreErrorsNamingTheBuiltin) {
  vm::Tensor x = Make({2, 8}, 1), w = Make({7}, 2);
  absl::StatusOr<vm::Tensor> y = Call("kiln.ggml.rms_norm", {vm::Value(x), vm::Value(w), vm::Value(1e-5)});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(std::string(y.status().message()), ::testing::HasSubstr("kiln.ggml.rms_norm: w must have shape [8]"));
  vm::Tensor q = Make({2, 1, 8}, 3);
  vm::Tensor positions = *vm::Tensor::Empty({2}, vm::DTypeInt64());
  y = Call("kiln.ggml.rope", {vm::Value(q), vm::Value(positions), vm::Value(10000.0), vm::Value(int64_t{9}), vm::Value(int64_t{0})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(std::string(y.status().message()), ::testing::HasSubstr("rotary_dims 9"));
  y = Call("kiln.ggml.swiglu", {vm::Value(x), vm::Value(Make({2, 9}, 4))});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(std::string(y.status().message()), ::testing::HasSubstr("kiln.ggml.swiglu: gate"));
}

}  // namespace
}  // namespace kiln::builtins
