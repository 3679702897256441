// ggml's exp on eight lanes (builtins/ggml_expf_avx2.inc) against the per-float code it
// vectorizes (builtins/ggml_expf.inc, which ggml_attention_numerics_test checks against a
// naive ggml exp): bit for bit over a sweep of arguments that crosses every branch (2^n
// normal, subnormal results below n = -126, n > 127, saturation past |n| = 192), and for
// infinities and NaN.
#include <gtest/gtest.h>

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace kiln::builtins::expf_avx2_test {
#include "builtins/ggml_expf.inc"
#include "builtins/ggml_expf_avx2.inc"

// Both exps of the AVX2 code on eight arguments, into out512 and out2.
static void Exps(const float* x, float* out512, float* out2) {
  const __m256 v = _mm256_loadu_ps(x);
  _mm256_storeu_ps(out512, GgmlExpfVector(v));
  _mm256_storeu_ps(out2, GgmlExpfAvx2BuildVector(v));
}
}  // namespace kiln::builtins::expf_avx2_test
#pragma GCC pop_options

namespace kiln::builtins::expf_avx2_test {
namespace {

TEST(GgmlExpfAvx2, EightLanesEqualThePerFloatExpBitForBit) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::vector<float> x;
  for (float v = -240.0f; v <= 240.0f; v += 0.0137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 88.72f, 88.73f, -87.33f, -87.34f, -103.97f, -103.98f, -133.0f, -133.2f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()}) {
    x.push_back(v);
  }
  while (x.size() % 8 != 0) x.push_back(1.0f);
  int64_t subnormal = 0;
  for (size_t i = 0; i < x.size(); i += 8) {
    float e512[8], e2[8];
    Exps(x.data() + i, e512, e2);
    for (size_t l = 0; l < 8; ++l) {
      const float want512 = GgmlExpf(x[i + l]), want2 = GgmlExpfAvx2Build(x[i + l]);
      if (std::isnan(want512)) {
        EXPECT_TRUE(std::isnan(e512[l])) << x[i + l];
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(e512[l]), std::bit_cast<uint32_t>(want512)) << "x " << x[i + l];
      }
      if (std::isnan(want2)) {
        EXPECT_TRUE(std::isnan(e2[l])) << x[i + l];
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(e2[l]), std::bit_cast<uint32_t>(want2)) << "x " << x[i + l];
      }
      if (want512 != 0 && std::fpclassify(want512) == FP_SUBNORMAL) ++subnormal;
    }
  }
  EXPECT_GT(subnormal, 100);  // the sweep reaches the subnormal branch
}

}  // namespace
}  // namespace kiln::builtins::expf_avx2_test
