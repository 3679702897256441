// The float16-cache attention builtin against a naive implementation of llama.cpp's CPU
// attention written here from its description, for its AVX-512 build (16 lanes) and its AVX2
// build (8 lanes, another exp): q rounded to float16; each score the float16 dot product in
// 4 x lanes chains; softmax with ggml's exp polynomial, summed per `lanes` positions into
// float64; probabilities rounded to float16; each output element their dot product with the
// values in the same chains: bit for bit, with the AVX2 code and with the portable code.
// A step that brings two or more tokens of a sequence (a prompt) takes both products in
// tinyBLAS's order instead: `lanes` lanes, each one fused chain, then the lanes' sum.
// builtins/paged_kv_cache_test.cc checks the same builtin against exact float64 attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "builtins/default_builtins.h"
#include "builtins/ggml_simd.h"
#include "builtins/paged_attention.h"
#include "builtins/paged_kv_cache.h"
#include "support/float16.h"
#include "vm/dtype.h"

namespace kiln::builtins {
namespace {

float Half(float x) { return support::HalfToFloat(support::FloatToHalf(x)); }

// ggml's exp: n = nearest integer to x / ln 2 (by adding and subtracting 1.5 * 2^23), the
// reduced argument in two steps, a polynomial, times 2^n. The AVX-512 build rounds the
// polynomial with its constant term 1, then scales; the AVX2 build leaves the 1 out and
// computes 2^n + 2^n * j in one rounding, splitting 2^n in two beyond |n| = 126.
float NaiveExp(float x, GgmlSimd simd) {
  const float shift = 12582912.0f;  // 1.5 * 2^23
  const float n = std::fma(x, 0x1.715476p+0f, shift) - shift;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192) return n > 0 ? std::numeric_limits<float>::infinity() : 0.0f;
  const float u = b * b;
  const float c1 = 0x1.ffffecp-1f, c2 = 0x1.fffdb6p-2f, c3 = 0x1.555e66p-3f, c4 = 0x1.573e2ep-5f, c5 = 0x1.0e4020p-7f;
  const float high = std::fma(std::fma(c5, b, c4), u, std::fma(c3, b, c2));
  const int e = static_cast<int>(n);
  if (simd == GgmlSimd::kAvx512) return std::ldexp(std::fma(high, u, std::fma(c1, b, 1.0f)), e);
  const float j = std::fma(high, u, c1 * b);
  if (std::fabs(n) <= 126) return std::fma(j, std::ldexp(1.0f, e), std::ldexp(1.0f, e));
  const float s1 = std::ldexp(1.0f, n > 0 ? 127 : -125), s2 = std::ldexp(1.0f, n > 0 ? e - 127 : e + 125);
  return std::fma(s2, j, s2) * s1;
}

float SumOf16(const float* v) {  // halves, then quarters, then the two pairs
  float a[8], b[4];
  for (int i = 0; i < 8; ++i) a[i] = v[i] + v[i + 8];
  for (int i = 0; i < 4; ++i) b[i] = a[i] + a[i + 4];
  return (b[0] + b[2]) + (b[1] + b[3]);
}

float SumOf8(const float* v) {  // halves, then quarters, then the pair
  float a[4];
  for (int i = 0; i < 4; ++i) a[i] = v[i] + v[i + 4];
  return (a[0] + a[2]) + (a[1] + a[3]);
}

float SumOf8Neighbours(const float* v) {  // halves, then neighbours (two horizontal adds)
  float a[4];
  for (int i = 0; i < 4; ++i) a[i] = v[i] + v[i + 4];
  return (a[0] + a[1]) + (a[2] + a[3]);
}

int Lanes(GgmlSimd simd) { return simd == GgmlSimd::kAvx512 ? 16 : 8; }

// The softmax's and tinyBLAS's sum of a vector's lanes.
float SumOfLanes(const float* v, GgmlSimd simd) { return simd == GgmlSimd::kAvx512 ? SumOf16(v) : SumOf8(v); }

// Sum of x[i] * y[i] over n: the first n & ~(4L - 1) in 4L fused chains (chain i % 4L, L the
// lanes), the chains combined as (c, c + 2L) and (c + L, c + 3L), then the lanes' sum
// (SumOf16, or SumOf8Neighbours for the AVX2 build); the rest in float64.
float NaiveDot(const std::vector<float>& x, const std::vector<float>& y, GgmlSimd simd) {
  const size_t lanes = static_cast<size_t>(Lanes(simd)), chains = 4 * lanes;
  const size_t n = x.size(), whole = n / chains * chains;
  std::vector<float> chain(chains, 0.0f);
  for (size_t i = 0; i < whole; ++i) chain[i % chains] = std::fma(x[i], y[i], chain[i % chains]);
  float lane[16];
  for (size_t l = 0; l < lanes; ++l) lane[l] = (chain[l] + chain[l + 2 * lanes]) + (chain[l + lanes] + chain[l + 3 * lanes]);
  double sum = simd == GgmlSimd::kAvx512 ? SumOf16(lane) : SumOf8Neighbours(lane);
  for (size_t i = whole; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

// tinyBLAS's order: x[i] * y[i] into lane i % L (n a multiple of L), each lane a fused chain
// in order, then the lanes' sum.
float NaiveDotTinyBlas(const std::vector<float>& x, const std::vector<float>& y, GgmlSimd simd) {
  const size_t lanes = static_cast<size_t>(Lanes(simd));
  float lane[16] = {};
  for (size_t i = 0; i < x.size(); ++i) lane[i % lanes] = std::fma(x[i], y[i], lane[i % lanes]);
  return SumOfLanes(lane, simd);
}

float Value(int64_t i, int salt) { return static_cast<float>(2.5 * std::sin(0.37 * static_cast<double>(i) + salt)); }

TEST(GgmlAttentionNumerics, Float16CacheEqualsTheNaiveLlamaCppArithmeticBitForBit) {
  const GgmlSimd host = ActiveGgmlSimd();
  // Unsplit, and each (token, kv head) split into 2 or 3 position and element ranges (as
  // decode on several threads is): the same bits. 3 parts leave a short last range of
  // positions (and of elements where d is not a multiple of 24).
  for (int parts : {1, 2, 3}) {
    SetAttentionPartsForTesting(parts);
    for (auto [portable, simd] : {std::pair{false, GgmlSimd::kAvx512}, std::pair{true, GgmlSimd::kAvx512},
                                  std::pair{false, GgmlSimd::kAvx2}, std::pair{true, GgmlSimd::kAvx2}}) {
      SCOPED_TRACE(::testing::Message() << (portable ? "portable" : "avx2 where available") << ", llama.cpp's "
                                        << GgmlSimdName(simd) << " build, " << parts << " parts");
      ForcePortableAttentionForTesting(portable);
      SetGgmlSimd(simd);
      const int64_t lanes = Lanes(simd);
      // 72 and 68: products past the last 64 are added in float64, and a prompt's scores keep
      // the single-token order (no multiple of 16) while its value product does not (68: an
      // element past the last 8 the vector code takes at once); 40: past the AVX2 build's 32
      // chains, a multiple of its 8 tinyBLAS lanes but not of 16; 128: two rounds of the 64
      // chains, four q heads per kv head (the vector value product takes rows three at a
      // time); 32: one q head per kv head; a large scale: scores hundreds apart, whose exps
      // reach ggml's subnormal and saturated ranges.
      struct Shape {
        int64_t d, q_heads, kv_heads;
        double scale;
      };
      for (const Shape& shape : {Shape{64, 6, 2, 0.125}, Shape{72, 6, 2, 0.125}, Shape{68, 6, 2, 0.125},
                                 Shape{40, 6, 2, 0.125}, Shape{128, 8, 2, 0.125}, Shape{32, 2, 2, 0.125},
                                 Shape{64, 6, 2, 6.0}}) {
        const int64_t d = shape.d, q_heads = shape.q_heads, kv_heads = shape.kv_heads;
        const int64_t group = q_heads / kv_heads;
        SCOPED_TRACE(::testing::Message() << "head_dim " << d << ", " << q_heads << " q heads, " << kv_heads
                                          << " kv heads, scale " << shape.scale);
        PagedKvCache::Config c;
        c.num_layers = 1;
        c.num_kv_heads = kv_heads;
        c.head_dim = d;
        c.page_size = 16;
        c.num_pages = 16;
        auto cache = *PagedKvCache::Create(c);
        ASSERT_TRUE(cache->AddSequence(0).ok());
        std::vector<std::vector<float>> keys, values;  // rounded to float16, per position
        int salt = 0;
        for (int64_t n : {83, 1, 1, 40}) {  // a prompt past 64 positions, two decode steps, more
          const bool batch = n >= 2;
          ASSERT_TRUE(cache->BeginForward({0}, {n}).ok());
          ++salt;
          auto make = [&](int64_t heads, int offset) {
            vm::Tensor t = *vm::Tensor::Empty({n, heads, d}, vm::DTypeFloat32());
            for (int64_t i = 0; i < n * heads * d; ++i) t.data_as<float>()[i] = Value(offset + i, salt);
            return t;
          };
          vm::Tensor q = make(q_heads, 0), k = make(kv_heads, 5000), v = make(kv_heads, 9000);
          const vm::BuiltinRegistry::Builtin* builtin = DefaultRegistry().FindBuiltin("kiln.kv_cache.attention");
          ASSERT_NE(builtin, nullptr);
          const double scale = shape.scale;
          vm::Value args[] = {vm::Value::FromObject(cache), vm::Value(int64_t{0}), vm::Value(q), vm::Value(k), vm::Value(v),
                              vm::Value(scale)};
          const vm::Value* ptrs[] = {&args[0], &args[1], &args[2], &args[3], &args[4], &args[5]};
          vm::BuiltinContext ctx{nullptr, nullptr, nullptr};
          vm::Value result;
          ASSERT_TRUE(builtin->fn(ctx, ptrs, 6, &result).ok());
          const vm::Tensor& out = result.as_tensor();
          for (int64_t t = 0; t < n; ++t) {
            std::vector<float> kt, vt;
            for (int64_t i = 0; i < kv_heads * d; ++i) {
              kt.push_back(Half(k.data_as<float>()[t * kv_heads * d + i]));
              vt.push_back(Half(v.data_as<float>()[t * kv_heads * d + i]));
            }
            keys.push_back(kt);
            values.push_back(vt);
            const size_t length = keys.size();
            for (int64_t h = 0; h < q_heads; ++h) {
              const int64_t g = h / group;
              std::vector<float> qh(static_cast<size_t>(d));
              for (int64_t i = 0; i < d; ++i) qh[i] = Half(q.data_as<float>()[(t * q_heads + h) * d + i]);
              std::vector<float> score(length);
              for (size_t p = 0; p < length; ++p) {
                std::vector<float> key(keys[p].begin() + g * d, keys[p].begin() + (g + 1) * d);
                const float dot = batch && d % lanes == 0 ? NaiveDotTinyBlas(qh, key, simd) : NaiveDot(qh, key, simd);
                score[p] = dot * static_cast<float>(scale);
              }
              const float max = *std::max_element(score.begin(), score.end());
              double sum = 0;
              for (size_t p0 = 0; p0 < length; p0 += static_cast<size_t>(lanes)) {
                float group[16] = {};
                for (size_t p = p0; p < std::min(length, p0 + static_cast<size_t>(lanes)); ++p) {
                  group[p - p0] = score[p] = NaiveExp(score[p] - max, simd);
                }
                sum += SumOfLanes(group, simd);
              }
              const float inverse = static_cast<float>(1.0 / sum);
              for (float& s : score) s = Half(s * inverse);
              for (int64_t i = 0; i < d; ++i) {
                std::vector<float> column(length);
                for (size_t p = 0; p < length; ++p) column[p] = values[p][g * d + i];
                // The value product runs over the cache's padded length: zero probabilities
                // beyond the sequence change nothing, and there is no tail past the chains.
                std::vector<float> padded_score = score, padded_column = column;
                padded_score.resize((length + 63) / 64 * 64, 0.0f);
                padded_column.resize(padded_score.size(), 0.0f);
                const float want = batch ? NaiveDotTinyBlas(padded_score, padded_column, simd)
                                         : NaiveDot(padded_score, padded_column, simd);
                const float got = out.data_as<float>()[(t * q_heads + h) * d + i];
                ASSERT_EQ(got, want) << "d " << d << " token " << t << " of step " << salt << " head " << h << " element " << i;
              }
            }
          }
          ASSERT_TRUE(cache->EndForward().ok());
        }
      }
    }
  }
  SetAttentionPartsForTesting(0);
  ForcePortableAttentionForTesting(false);
  SetGgmlSimd(host);
}

// The scores alone (the end-to-end output rounds probabilities to float16, which hides most
// of a score's last bits): every position count past and short of the vector code's blocks
// of 8, head sizes with and without a float64 tail, one to five q rows per kv head.
TEST(GgmlAttentionNumerics, ScoresEqualTheNaiveDotProductsBitForBit) {
  const GgmlSimd host = ActiveGgmlSimd();
  for (auto [portable, simd] : {std::pair{false, GgmlSimd::kAvx512}, std::pair{true, GgmlSimd::kAvx512},
                                std::pair{false, GgmlSimd::kAvx2}, std::pair{true, GgmlSimd::kAvx2}}) {
    ForcePortableAttentionForTesting(portable);
    SetGgmlSimd(simd);
    const size_t lanes = static_cast<size_t>(Lanes(simd));
    for (int64_t d : {64, 128, 32, 96, 72, 40, 16}) {
      for (int64_t rows : {1, 3, 5}) {
        for (int64_t length : {1, 7, 8, 9, 17, 70}) {
          for (bool prompt : {false, true}) {
            SCOPED_TRACE(::testing::Message() << (portable ? "portable" : "avx2 where available") << ", "
                                              << GgmlSimdName(simd) << " build, d " << d << ", rows " << rows
                                              << ", length " << length << (prompt ? ", prompt" : ", one token"));
            std::vector<float> q(static_cast<size_t>(rows * d));
            for (size_t i = 0; i < q.size(); ++i) q[i] = Value(static_cast<int64_t>(i), static_cast<int>(d + rows));
            std::vector<uint16_t> keys(static_cast<size_t>(length * d));
            for (size_t i = 0; i < keys.size(); ++i) keys[i] = support::FloatToHalf(Value(static_cast<int64_t>(i) + 777, 5));
            const std::vector<float> got = AttentionScoresForTesting(q, rows, keys, d, 0.3f, prompt);
            ASSERT_EQ(got.size(), static_cast<size_t>(rows * length));
            for (int64_t r = 0; r < rows; ++r) {
              std::vector<float> qr(static_cast<size_t>(d));
              for (int64_t i = 0; i < d; ++i) qr[i] = Half(q[r * d + i]);
              for (int64_t p = 0; p < length; ++p) {
                std::vector<float> key(static_cast<size_t>(d));
                for (int64_t i = 0; i < d; ++i) key[i] = support::HalfToFloat(keys[p * d + i]);
                const bool tiny_blas = prompt && static_cast<size_t>(d) % lanes == 0;
                const float want = (tiny_blas ? NaiveDotTinyBlas(qr, key, simd) : NaiveDot(qr, key, simd)) * 0.3f;
                ASSERT_EQ(got[r * length + p], want) << "row " << r << " position " << p;
              }
            }
          }
        }
      }
    }
  }
  ForcePortableAttentionForTesting(false);
  SetGgmlSimd(host);
}

}  // namespace
}  // namespace kiln::builtins
