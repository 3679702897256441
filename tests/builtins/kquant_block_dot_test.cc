// builtins/kquant_block_dot.h, builtins/q5_block_dot.h and builtins/ggml_row_decode.h against
// naive implementations written here from the GGML block definitions and llama.cpp's
// description of its CPU numerics (plain loops: decode each weight to an integer and its
// scale, quantize the activations, integer products summed in lanes of 4, one fused
// multiply-add per lane and block, the lanes added pairwise; or one exact integer per block
// in the orders of llama.cpp's repacked and tiled kernels): every instruction set the CPU
// has (forced one by one) must give the naive floats bit for bit, and the result must be
// close to the exact float64 dot product of the decoded weights and the activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "builtins/ggml_row_decode.h"
#include "builtins/kquant_block_dot.h"
#include "builtins/q5_block_dot.h"
#include "builtins/q8_block_dot.h"
#include "support/float16.h"

namespace kiln::builtins {
namespace {

float Half(const uint8_t* p) { return support::HalfToFloat(static_cast<uint16_t>(p[0] | p[1] << 8)); }

float RoundHalfEven(float v) {
  const double f = std::floor(static_cast<double>(v));
  const double frac = static_cast<double>(v) - f;
  if (frac > 0.5) return static_cast<float>(f + 1);
  if (frac < 0.5) return static_cast<float>(f);
  return std::fmod(f, 2.0) == 0 ? static_cast<float>(f) : static_cast<float>(f + 1);
}

std::vector<Q8Isa> SupportedIsas() {
  std::vector<Q8Isa> out;
  for (Q8Isa isa : {Q8Isa::kScalar, Q8Isa::kAvx2, Q8Isa::kAvx512Vnni}) {
    if (Q8IsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

// --- naive Q8_K ---

struct NaiveQ8K {
  std::vector<int> q;  // 256 per block
  std::vector<float> d;
};

NaiveQ8K NaiveQuantizeK(const std::vector<float>& x) {
  NaiveQ8K out;
  for (size_t b = 0; b < x.size() / 256; ++b) {
    float max = 0, amax = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(x[256 * b + j]) > amax) amax = std::fabs(x[256 * b + j]), max = x[256 * b + j];
    }
    const float iscale = amax == 0 ? 0.0f : -127.0f / max;
    for (int j = 0; j < 256; ++j) out.q.push_back(std::min(127, static_cast<int>(RoundHalfEven(iscale * x[256 * b + j]))));
    out.d.push_back(amax == 0 ? 0.0f : 1.0f / iscale);
  }
  return out;
}

// --- naive K-quant weights: integer q (Q6_K: 0..63, without the - 32), the scale of each
// weight, the min of each group of 32 (Q4_K/Q5_K), d and dmin per super-block ---

struct NaiveKWeights {
  std::vector<int> q, scale, min;
  std::vector<int> min16;  // Q2_K: the min of each 16 weights
  std::vector<float> d, dmin;
};

NaiveKWeights DecodeK(KQuantFormat format, const std::vector<uint8_t>& row, int64_t blocks) {
  NaiveKWeights w;
  const int64_t bytes = KQuantBlockBytes(format);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = row.data() + b * bytes;
    if (format == KQuantFormat::kQ2_K) {
      // As ggml's dequantize_row_q2_K walks it: two halves of 128 weights, each four shifts of
      // the half's 32 quant bytes, each shift two runs of 16 weights with the next scale byte
      // (scale in its low nibble, min in its high one).
      w.d.push_back(Half(p + 80));
      w.dmin.push_back(Half(p + 82));
      int is = 0;
      for (int half = 0; half < 2; ++half) {
        for (int shift = 0; shift < 8; shift += 2) {
          for (int run = 0; run < 2; ++run, ++is) {
            w.min16.push_back(p[is] >> 4);
            for (int l = 0; l < 16; ++l) {
              w.q.push_back((p[16 + 32 * half + 16 * run + l] >> shift) & 3);
              w.scale.push_back(p[is] & 15);
            }
          }
        }
      }
      for (int g = 0; g < 8; ++g) w.min.push_back(0);
      continue;
    }
    if (format == KQuantFormat::kIQ4_XS) {
      // ggml_vec_dot_iq4_xs_q8_K's walk: pairs of 32s, the high scale bits consumed four at
      // a time; values from ggml's kvalues_iq4nl (written out here, not the code's table).
      static constexpr int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      w.d.push_back(Half(p));
      w.dmin.push_back(0);
      int sh = p[2] | p[3] << 8;
      int scales[8];
      for (int ib = 0; ib < 8; ib += 2, sh >>= 4) {
        scales[ib] = ((p[4 + ib / 2] & 0xf) | ((sh << 4) & 0x30)) - 32;
        scales[ib + 1] = ((p[4 + ib / 2] >> 4) | ((sh << 2) & 0x30)) - 32;
      }
      for (int ib = 0; ib < 8; ++ib) {
        for (int j = 0; j < 32; ++j) {
          const uint8_t byte = p[8 + 16 * ib + j % 16];
          w.q.push_back(kValues[j < 16 ? byte & 15 : byte >> 4]);
          w.scale.push_back(scales[ib]);
        }
      }
      for (int g = 0; g < 8; ++g) w.min.push_back(0);
      continue;
    }
    if (format == KQuantFormat::kQ3_K) {
      // As ggml's dequantize_row_q3_K walks it: the scales rebuilt as 16 bytes from the 12
      // (bytes 0-3: low nibbles of 0-3, bits 0-1 of 8-11 on top; 4-7: low nibbles of 4-7, bits
      // 2-3; 8-11: high nibbles of 0-3, bits 4-5; 12-15: high nibbles of 4-7, bits 6-7), then
      // two halves of 128, each four 32s of 2-bit lows, the high-bit mask moving one bit per 32.
      w.d.push_back(Half(p + 108));
      w.dmin.push_back(0);
      int scales[16];
      for (int i = 0; i < 4; ++i) {
        scales[i] = ((p[96 + i] & 15) | ((p[104 + i] & 3) << 4)) - 32;
        scales[4 + i] = ((p[100 + i] & 15) | (((p[104 + i] >> 2) & 3) << 4)) - 32;
        scales[8 + i] = ((p[96 + i] >> 4) | (((p[104 + i] >> 4) & 3) << 4)) - 32;
        scales[12 + i] = ((p[100 + i] >> 4) | (((p[104 + i] >> 6) & 3) << 4)) - 32;
      }
      int mask_bit = 0;
      for (int half = 0; half < 2; ++half) {
        for (int shift = 0; shift < 8; shift += 2, ++mask_bit) {
          for (int l = 0; l < 32; ++l) {
            const int low = (p[32 + 32 * half + l] >> shift) & 3;
            w.q.push_back((p[l] >> mask_bit) & 1 ? low : low - 4);
            w.scale.push_back(scales[static_cast<int>(w.q.size() - 1) % 256 / 16]);
          }
        }
      }
      for (int g = 0; g < 8; ++g) w.min.push_back(0);
      continue;
    }
    if (format == KQuantFormat::kQ6_K) {
      w.d.push_back(Half(p + 208));
      w.dmin.push_back(0);
      for (int e = 0; e < 256; ++e) {
        const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
        const uint8_t low = p[64 * half + 32 * (quarter & 1) + l];
        const uint8_t high = p[128 + 32 * half + l];
        w.q.push_back(((quarter < 2 ? low : low >> 4) & 15) | (((high >> (2 * quarter)) & 3) << 4));
        w.scale.push_back(static_cast<int8_t>(p[192 + e / 16]));
      }
      for (int g = 0; g < 8; ++g) w.min.push_back(0);
      continue;
    }
    w.d.push_back(Half(p));
    w.dmin.push_back(Half(p + 2));
    int scales[8], mins[8];
    for (int g = 0; g < 8; ++g) {
      if (g < 4) {
        scales[g] = p[4 + g] & 63;
        mins[g] = p[8 + g] & 63;
      } else {
        scales[g] = (p[8 + g] & 15) | ((p[g] >> 6) << 4);
        mins[g] = (p[8 + g] >> 4) | ((p[4 + g] >> 6) << 4);
      }
      w.min.push_back(mins[g]);
    }
    for (int e = 0; e < 256; ++e) {
      const int g = e / 32, l = e % 32;
      const uint8_t byte = p[(format == KQuantFormat::kQ5_K ? 48 : 16) + 32 * (g / 2) + l];
      int q = g % 2 == 0 ? byte & 15 : byte >> 4;
      if (format == KQuantFormat::kQ5_K) q += ((p[16 + l] >> g) & 1) * 16;
      w.q.push_back(q);
      w.scale.push_back(scales[g]);
    }
  }
  return w;
}

float NaiveDotK(KQuantFormat format, const NaiveKWeights& w, const NaiveQ8K& x) {
  float lanes[8] = {}, mins4[4] = {}, mins1 = 0;
  for (size_t b = 0; b < x.d.size(); ++b) {
    const int* q = &w.q[256 * b];
    const int* s = &w.scale[256 * b];
    const int* y = &x.q[256 * b];
    int sums16[16] = {};
    for (int e = 0; e < 256; ++e) sums16[e / 16] += y[e];
    if (format == KQuantFormat::kQ2_K) {
      // ggml_vec_dot_q2_K_q8_K (AVX2): the mins' pairs of 16 into the lanes before the products.
      for (int t = 0; t < 8; ++t) {
        const int prod = w.min16[16 * b + 2 * t] * sums16[2 * t] + w.min16[16 * b + 2 * t + 1] * sums16[2 * t + 1];
        lanes[t] = std::fma(-x.d[b] * w.dmin[b], static_cast<float>(prod), lanes[t]);
      }
    }
    int lane[8] = {};
    for (int e = 0; e < 256; ++e) lane[(e % 32) / 4] += s[e] * q[e] * y[e];
    if (format == KQuantFormat::kQ6_K) {
      for (int t = 0; t < 8; ++t) lane[t] -= 32 * (s[32 * t] * sums16[2 * t] + s[32 * t + 16] * sums16[2 * t + 1]);
    }
    for (int t = 0; t < 8; ++t) lanes[t] = std::fma(x.d[b] * w.d[b], static_cast<float>(lane[t]), lanes[t]);
    if (format != KQuantFormat::kQ4_K && format != KQuantFormat::kQ5_K) continue;
    const float dmin = -x.d[b] * w.dmin[b];
    int prod[4];
    for (int t = 0; t < 4; ++t) {
      prod[t] = w.min[8 * b + 2 * t] * (sums16[4 * t] + sums16[4 * t + 1]) +
                w.min[8 * b + 2 * t + 1] * (sums16[4 * t + 2] + sums16[4 * t + 3]);
    }
    if (format == KQuantFormat::kQ4_K) {
      for (int t = 0; t < 4; ++t) mins4[t] = std::fma(dmin, static_cast<float>(prod[t]), mins4[t]);
    } else {
      mins1 = std::fma(dmin, static_cast<float>(prod[0] + prod[1] + prod[2] + prod[3]), mins1);
    }
  }
  const float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  if (format == KQuantFormat::kQ4_K) return sum + ((mins4[0] + mins4[2]) + (mins4[1] + mins4[3]));
  return format == KQuantFormat::kQ5_K ? sum + mins1 : sum;
}

// The min of weight i (Q2_K: of its 16; Q4_K/Q5_K: of its 32; else 0).
int MinOf(KQuantFormat format, const NaiveKWeights& w, size_t i) {
  if (format == KQuantFormat::kQ2_K) return w.min16[i / 16];
  return w.min[8 * (i / 256) + (i % 256) / 32];
}

// llama.cpp's repacked Q4_K and Q2_K kernels (q4_K_8x8 / q2_K_8x8 gemv, and gemm per 64 /
// 128 weights) and tiled
// K-quant matmul: per super-block (or quarter) one exact integer of all the scaled products
// (Q6_K: of scale * (q - 32) * y), one of the mins times their groups' activation sums, then
// the orders' float steps.
float NaiveDotKOneSumPerBlock(KQuantFormat format, KQuantSummation summation, const NaiveKWeights& w,
                              const NaiveQ8K& x) {
  float acc = 0, mins = 0;
  for (size_t b = 0; b < x.d.size(); ++b) {
    int64_t isum = 0, imin = 0, quarter_sum[4] = {}, quarter_min[4] = {}, half_sum[2] = {}, half_min[2] = {};
    for (int e = 0; e < 256; ++e) {
      const size_t i = 256 * b + e;
      const int q = format == KQuantFormat::kQ6_K ? w.q[i] - 32 : w.q[i];
      isum += int64_t{w.scale[i]} * q * x.q[i];
      imin += int64_t{MinOf(format, w, i)} * x.q[i];
      quarter_sum[e / 64] += int64_t{w.scale[i]} * q * x.q[i];
      quarter_min[e / 64] += int64_t{MinOf(format, w, i)} * x.q[i];
      half_sum[e / 128] += int64_t{w.scale[i]} * q * x.q[i];
      half_min[e / 128] += int64_t{MinOf(format, w, i)} * x.q[i];
    }
    const float fsum = static_cast<float>(isum), fmin = static_cast<float>(imin);
    if (summation == KQuantSummation::kBlockQuarters) {  // the Q4_K GEMM: per 64 weights
      for (int i = 0; i < 4; ++i) {
        acc = std::fma(static_cast<float>(quarter_sum[i]), w.d[b] * x.d[b], acc);
        mins = std::fma(static_cast<float>(quarter_min[i]), w.dmin[b] * x.d[b], mins);
      }
    } else if (summation == KQuantSummation::kBlockHalves) {  // the Q2_K GEMM: per 128 weights
      for (int i = 0; i < 2; ++i) {
        acc = std::fma(static_cast<float>(half_sum[i]), w.d[b] * x.d[b], acc);
        mins = std::fma(static_cast<float>(half_min[i]), w.dmin[b] * x.d[b], mins);
      }
    } else if (summation == KQuantSummation::kBlocks) {
      acc = std::fma(fsum, w.d[b] * x.d[b], acc);
      mins = std::fma(fmin, w.dmin[b] * x.d[b], mins);
    } else {
      float r = fsum * w.d[b];
      if (format == KQuantFormat::kQ4_K || format == KQuantFormat::kQ5_K || format == KQuantFormat::kQ2_K) {
        r = std::fma(-w.dmin[b], fmin, r);
      }
      acc = std::fma(r, x.d[b], acc);
    }
  }
  return acc - mins;
}

double WeightK(KQuantFormat format, const NaiveKWeights& w, size_t i) {
  const size_t b = i / 256;
  if (format == KQuantFormat::kQ6_K) return double(w.d[b]) * w.scale[i] * (w.q[i] - 32);
  if (format == KQuantFormat::kQ3_K || format == KQuantFormat::kIQ4_XS) return double(w.d[b]) * w.scale[i] * w.q[i];
  return double(w.d[b]) * w.scale[i] * w.q[i] - double(w.dmin[b]) * MinOf(format, w, i);
}

// --- random inputs ---

std::vector<uint8_t> RandomKRow(KQuantFormat format, int64_t blocks, std::mt19937& rng) {
  const int64_t bytes = KQuantBlockBytes(format);
  std::vector<uint8_t> row(static_cast<size_t>(blocks * bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0001f, 0.002f);
  for (auto& v : row) v = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* p = row.data() + b * bytes;
    const uint16_t d = support::FloatToHalf(scale(rng)), dmin = support::FloatToHalf(scale(rng));
    uint8_t* at = format == KQuantFormat::kQ6_K   ? p + 208
                  : format == KQuantFormat::kQ3_K ? p + 108
                  : format == KQuantFormat::kQ2_K ? p + 80
                                                  : p;
    at[0] = d & 255, at[1] = d >> 8;
    if (format == KQuantFormat::kQ4_K || format == KQuantFormat::kQ5_K || format == KQuantFormat::kQ2_K) {
      at[2] = dmin & 255, at[3] = dmin >> 8;
    }
  }
  return row;
}

std::vector<float> RandomActivations(int64_t k, std::mt19937& rng, int pattern) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    x[i] = normal(rng) * (1 + 20 * (i % 97 == 3));             // outliers set a block's scale
    if (pattern == 1) x[i] = std::round(x[i] * 4) / 4;          // many equal magnitudes
    if (pattern == 2 && (i / 256) % 3 == 1) x[i] = 0;           // all-zero super-blocks
  }
  return x;
}

TEST(KQuantBlockDot, Q8KQuantizationMatchesTheNaiveRounding) {
  std::mt19937 rng(5);
  for (int pattern = 0; pattern < 3; ++pattern) {
    const std::vector<float> x = RandomActivations(256 * 6, rng, pattern);
    const NaiveQ8K want = NaiveQuantizeK(x);
    std::vector<Q8KBlock> got(6);
    QuantizeRowQ8K(x.data(), 256 * 6, got.data());
    for (int b = 0; b < 6; ++b) {
      ASSERT_EQ(got[b].d, want.d[b]) << "block " << b;
      for (int j = 0; j < 256; ++j) ASSERT_EQ(got[b].q[j], want.q[256 * b + j]) << "block " << b << " element " << j;
      for (int i = 0; i < 16; ++i) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += want.q[256 * b + 16 * i + j];
        ASSERT_EQ(got[b].sums[i], sum) << "block " << b << " sum " << i;
      }
    }
  }
}

TEST(KQuantBlockDot, DotProductsEqualTheNaiveOnesBitForBitOnEveryInstructionSet) {
  std::mt19937 rng(13);
  for (KQuantFormat format : {KQuantFormat::kQ4_K, KQuantFormat::kQ5_K, KQuantFormat::kQ6_K, KQuantFormat::kQ3_K,
                              KQuantFormat::kIQ4_XS, KQuantFormat::kQ2_K}) {
    for (int64_t blocks : {1, 3, 6}) {
      const int64_t k = blocks * 256;
      constexpr int kRows = 7;  // a group of 4 and a remainder of 3
      std::vector<std::vector<float>> xs;
      std::vector<Q8KBlock> quantized;
      for (int r = 0; r < kRows; ++r) {
        xs.push_back(RandomActivations(k, rng, r % 3));
        std::vector<Q8KBlock> row(static_cast<size_t>(blocks));
        QuantizeRowQ8K(xs.back().data(), k, row.data());
        quantized.insert(quantized.end(), row.begin(), row.end());
      }
      const std::vector<uint8_t> w = RandomKRow(format, blocks, rng);
      const NaiveKWeights decoded = DecodeK(format, w, blocks);
      for (Q8Isa isa : SupportedIsas())
      for (KQuantSummation summation : {KQuantSummation::kLanes, KQuantSummation::kBlocks, KQuantSummation::kBlockQuarters,
                                        KQuantSummation::kBlockHalves, KQuantSummation::kTiles}) {
        SCOPED_TRACE(::testing::Message() << Q8IsaName(isa) << " format " << static_cast<int>(format) << " summation "
                                          << static_cast<int>(summation) << " k " << k);
        std::vector<float> all(kRows);
        DotQ8KRows(format, summation, w.data(), quantized.data(), blocks, kRows, all.data(), 1, isa);
        for (int r = 0; r < kRows; ++r) {
          const NaiveQ8K naive_x = NaiveQuantizeK(xs[r]);
          const float want = summation == KQuantSummation::kLanes
                                 ? NaiveDotK(format, decoded, naive_x)
                                 : NaiveDotKOneSumPerBlock(format, summation, decoded, naive_x);
          EXPECT_EQ(all[r], want) << "row " << r << " of " << kRows;
          float alone = 0;
          DotQ8KRows(format, summation, w.data(), quantized.data() + r * blocks, blocks, 1, &alone, 1, isa);
          EXPECT_EQ(alone, want) << "row " << r << " alone";
          double exact = 0, scale = 0;
          for (size_t i = 0; i < xs[r].size(); ++i) {
            exact += WeightK(format, decoded, i) * xs[r][i];
            scale += std::fabs(WeightK(format, decoded, i) * xs[r][i]);
          }
          EXPECT_NEAR(want, exact, 0.02 * scale + 1e-6) << "row " << r;
        }
      }
    }
  }
}

// --- Q5_0 / Q5_1 ---

struct NaiveQ8 {
  std::vector<int> q;
  std::vector<float> d, s;
};

NaiveQ8 NaiveQuantize32(const std::vector<float>& x) {
  NaiveQ8 out;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    const float d = amax / 127.0f, inverse = amax == 0 ? 0.0f : 127.0f / amax;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      out.q.push_back(static_cast<int>(RoundHalfEven(x[32 * b + j] * inverse)));
      sum += out.q.back();
    }
    out.d.push_back(support::HalfToFloat(support::FloatToHalf(d)));
    out.s.push_back(support::HalfToFloat(support::FloatToHalf(d * static_cast<float>(sum))));
  }
  return out;
}

float NaiveDotQ5(Q5Format format, const std::vector<uint8_t>& row, const NaiveQ8& x, std::vector<double>* weights) {
  const int64_t bytes = Q5BlockBytes(format);
  const bool q5_1 = format == Q5Format::kQ5_1;
  float lanes[8] = {}, minimums = 0;
  for (size_t b = 0; b < x.d.size(); ++b) {
    const uint8_t* p = row.data() + b * bytes;
    const float d = Half(p), m = q5_1 ? Half(p + 2) : 0.0f;
    const uint8_t* fifth = p + (q5_1 ? 4 : 2);
    int q[32];
    for (int j = 0; j < 32; ++j) {
      const uint8_t byte = fifth[4 + j % 16];
      q[j] = (j < 16 ? byte & 15 : byte >> 4) + 16 * ((fifth[j / 8] >> (j % 8)) & 1) - (q5_1 ? 0 : 16);
      weights->push_back(double(d) * q[j] + m);
    }
    for (int l = 0; l < 8; ++l) {
      int sum = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) sum += q[j] * x.q[32 * b + j];
      lanes[l] = std::fma(d * x.d[b], static_cast<float>(sum), lanes[l]);
    }
    if (q5_1) minimums = std::fma(m, x.s[b], minimums);
  }
  const float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  return q5_1 ? sum + minimums : sum;
}

TEST(Q5BlockDot, DotProductsEqualTheNaiveOnesBitForBitOnEveryInstructionSet) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (Q5Format format : {Q5Format::kQ5_0, Q5Format::kQ5_1}) {
    for (int64_t blocks : {1, 2, 18, 48}) {
      const int64_t k = blocks * 32, bytes = Q5BlockBytes(format);
      std::vector<uint8_t> w(static_cast<size_t>(blocks * bytes));
      for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
      for (int64_t b = 0; b < blocks; ++b) {
        const uint16_t d = support::FloatToHalf(scale(rng)), m = support::FloatToHalf(-16 * scale(rng));
        w[b * bytes] = d & 255, w[b * bytes + 1] = d >> 8;
        if (format == Q5Format::kQ5_1) w[b * bytes + 2] = m & 255, w[b * bytes + 3] = m >> 8;
      }
      constexpr int kRows = 5;
      std::vector<std::vector<float>> xs;
      std::vector<Q8Block> quantized;
      for (int r = 0; r < kRows; ++r) {
        std::normal_distribution<float> normal(0.0f, 1.0f);
        xs.emplace_back(static_cast<size_t>(k));
        for (auto& v : xs.back()) v = normal(rng);
        std::vector<Q8Block> row(static_cast<size_t>(blocks));
        QuantizeRowQ8(xs.back().data(), k, row.data(), Q8Isa::kScalar);
        quantized.insert(quantized.end(), row.begin(), row.end());
      }
      for (Q8Isa isa : SupportedIsas()) {
        SCOPED_TRACE(::testing::Message() << Q8IsaName(isa) << " format " << static_cast<int>(format) << " k " << k);
        std::vector<float> all(kRows);
        DotQ5Rows(format, w.data(), quantized.data(), blocks, kRows, all.data(), 1, isa);
        for (int r = 0; r < kRows; ++r) {
          std::vector<double> weights;
          const float want = NaiveDotQ5(format, w, NaiveQuantize32(xs[r]), &weights);
          EXPECT_EQ(all[r], want) << "row " << r;
          double exact = 0, magnitude = 0;
          for (int64_t i = 0; i < k; ++i) exact += weights[i] * xs[r][i], magnitude += std::fabs(weights[i] * xs[r][i]);
          EXPECT_NEAR(want, exact, 0.02 * magnitude + 1e-6) << "row " << r;
        }
      }
    }
  }
}

// Several weight rows at once: every (weight row, activation row) pair must be the naive
// float, whatever the tile and remainder sizes (4 weight rows by 8 activation rows in the
// VNNI code, the rest one by one).
TEST(Q5BlockDot, TilesOfWeightRowsEqualTheNaiveOnesBitForBitOnEveryInstructionSet) {
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (Q5Format format : {Q5Format::kQ5_0, Q5Format::kQ5_1}) {
    constexpr int64_t kBlocks = 18;  // SmolLM2's k = 576
    const int64_t k = kBlocks * 32, bytes = Q5BlockBytes(format), row_bytes = kBlocks * bytes;
    constexpr int64_t kWeightRows = 9, kRows = 19;  // 2 tiles of 4 and 1; 2 groups of 8 and 3
    std::vector<uint8_t> w(static_cast<size_t>(kWeightRows * row_bytes));
    for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
    for (int64_t b = 0; b < kWeightRows * kBlocks; ++b) {
      const uint16_t d = support::FloatToHalf(scale(rng)), m = support::FloatToHalf(-16 * scale(rng));
      w[b * bytes] = d & 255, w[b * bytes + 1] = d >> 8;
      if (format == Q5Format::kQ5_1) w[b * bytes + 2] = m & 255, w[b * bytes + 3] = m >> 8;
    }
    std::vector<std::vector<float>> xs;
    std::vector<Q8Block> quantized;
    for (int r = 0; r < kRows; ++r) {
      xs.emplace_back(static_cast<size_t>(k));
      for (auto& v : xs.back()) v = normal(rng) * (r % 5 == 2 ? 30.0f : 1.0f);
      std::vector<Q8Block> row(static_cast<size_t>(kBlocks));
      QuantizeRowQ8(xs.back().data(), k, row.data(), Q8Isa::kScalar);
      quantized.insert(quantized.end(), row.begin(), row.end());
    }
    std::vector<float> want(static_cast<size_t>(kRows * kWeightRows));
    for (int64_t i = 0; i < kWeightRows; ++i) {
      const std::vector<uint8_t> row(w.begin() + i * row_bytes, w.begin() + (i + 1) * row_bytes);
      for (int r = 0; r < kRows; ++r) {
        std::vector<double> weights;
        want[r * kWeightRows + i] = NaiveDotQ5(format, row, NaiveQuantize32(xs[r]), &weights);
      }
    }
    for (Q8Isa isa : SupportedIsas()) {
      for (int64_t weight_rows : {int64_t{1}, int64_t{4}, int64_t{5}, kWeightRows}) {
        for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{8}, kRows}) {
          SCOPED_TRACE(::testing::Message() << Q8IsaName(isa) << " format " << static_cast<int>(format) << " weight rows "
                                            << weight_rows << " rows " << rows);
          std::vector<float> got(static_cast<size_t>(rows * kWeightRows), -1.0f);
          DotQ5Tile(format, w.data(), weight_rows, row_bytes, quantized.data(), kBlocks, rows, got.data(), kWeightRows,
                    isa);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t i = 0; i < weight_rows; ++i) {
              ASSERT_EQ(got[r * kWeightRows + i], want[r * kWeightRows + i]) << "row " << r << " weight row " << i;
            }
            for (int64_t i = weight_rows; i < kWeightRows; ++i) ASSERT_EQ(got[r * kWeightRows + i], -1.0f);
          }
        }
      }
    }
  }
}

// --- decoding rows to float32 ---

TEST(GgmlRowDecode, WeightsAreTheBlockDefinitionsInFloat32) {
  std::mt19937 rng(23);
  for (KQuantFormat format : {KQuantFormat::kQ4_K, KQuantFormat::kQ5_K, KQuantFormat::kQ6_K, KQuantFormat::kQ3_K,
                              KQuantFormat::kIQ4_XS, KQuantFormat::kQ2_K}) {
    const std::vector<uint8_t> w = RandomKRow(format, 3, rng);
    const NaiveKWeights naive = DecodeK(format, w, 3);
    const DecodableFormat f = format == KQuantFormat::kQ4_K   ? DecodableFormat::kQ4_K
                              : format == KQuantFormat::kQ5_K ? DecodableFormat::kQ5_K
                              : format == KQuantFormat::kQ3_K ? DecodableFormat::kQ3_K
                              : format == KQuantFormat::kIQ4_XS ? DecodableFormat::kIQ4_XS
                              : format == KQuantFormat::kQ2_K   ? DecodableFormat::kQ2_K
                                                              : DecodableFormat::kQ6_K;
    std::vector<float> got(768);
    DecodeRow(f, w.data(), 768, got.data());
    for (size_t i = 0; i < got.size(); ++i) {
      const size_t b = i / 256;
      const float ds = naive.d[b] * static_cast<float>(naive.scale[i]);
      const float want = format == KQuantFormat::kQ6_K   ? ds * static_cast<float>(naive.q[i] - 32)
                         : format == KQuantFormat::kQ3_K || format == KQuantFormat::kIQ4_XS ? ds * static_cast<float>(naive.q[i])
                             : ds * static_cast<float>(naive.q[i]) - naive.dmin[b] * static_cast<float>(MinOf(format, naive, i));
      ASSERT_EQ(got[i], want) << "format " << static_cast<int>(format) << " weight " << i;
    }
  }
  for (DecodableFormat f : {DecodableFormat::kQ5_0, DecodableFormat::kQ5_1}) {
    const bool q5_1 = f == DecodableFormat::kQ5_1;
    std::vector<uint8_t> w(static_cast<size_t>(4 * DecodableBlockBytes(f)));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
    for (int b = 0; b < 4; ++b) {
      uint8_t* p = w.data() + b * DecodableBlockBytes(f);
      p[1] = 0x1c, p[3] = 0x9c;  // d, m: modest float16 values
    }
    std::vector<float> got(128);
    DecodeRow(f, w.data(), 128, got.data());
    for (int i = 0; i < 128; ++i) {
      const uint8_t* p = w.data() + (i / 32) * DecodableBlockBytes(f);
      const uint8_t* fifth = p + (q5_1 ? 4 : 2);
      const int j = i % 32;
      const int q = ((j < 16 ? fifth[4 + j] & 15 : fifth[4 + j - 16] >> 4) | (((fifth[j / 8] >> (j % 8)) & 1) << 4));
      const float want = q5_1 ? static_cast<float>(q) * Half(p) + Half(p + 2) : static_cast<float>(q - 16) * Half(p);
      ASSERT_EQ(got[i], want) << "q5_" << q5_1 << " weight " << i;
    }
  }
}

TEST(KQuantBlockDot, ZeroAndNonFiniteActivationsDoNotCrash) {
  std::vector<float> x(512, 0.0f);
  x[300] = std::numeric_limits<float>::infinity();
  x[301] = std::numeric_limits<float>::quiet_NaN();
  std::vector<Q8KBlock> got(2);
  QuantizeRowQ8K(x.data(), 512, got.data());
  EXPECT_EQ(got[0].d, 0.0f);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(got[0].q[j], 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[0].sums[i], 0);
}

}  // namespace
}  // namespace kiln::builtins
