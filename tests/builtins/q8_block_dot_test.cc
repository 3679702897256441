// builtins/q8_block_dot.h against a naive implementation written here from llama.cpp's
// description of its CPU numerics (plain loops: quantize each 32-block to int8 with a float16
// scale, integer products summed in lanes of 4, one fused multiply-add per lane and block,
// the lanes added pairwise): every instruction set the CPU has (forced one by one) must give
// the naive floats bit for bit, and the naive result must be close to the exact float64 dot
// product of the dequantized weights and the unquantized activations.
#include "builtins/q8_block_dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "support/float16.h"

namespace kiln::builtins {
namespace {

// --- the naive side: shares nothing with the kernel but the float16 helpers ---

// Round half to even without the floating-point environment.
float RoundHalfEven(float v) {
  const double f = std::floor(static_cast<double>(v));
  const double frac = static_cast<double>(v) - f;
  if (frac > 0.5) return static_cast<float>(f + 1);
  if (frac < 0.5) return static_cast<float>(f);
  return std::fmod(f, 2.0) == 0 ? static_cast<float>(f) : static_cast<float>(f + 1);
}

float ThroughHalf(float v) { return support::HalfToFloat(support::FloatToHalf(v)); }

struct NaiveBlock {
  int q[32];
  float d, s;
};

std::vector<NaiveBlock> NaiveQuantize(const std::vector<float>& x) {
  std::vector<NaiveBlock> out(x.size() / 32);
  for (size_t b = 0; b < out.size(); ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127.0f;
    const float inverse = amax == 0 ? 0.0f : 127.0f / amax;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      out[b].q[j] = static_cast<int>(RoundHalfEven(x[b * 32 + j] * inverse));
      sum += out[b].q[j];
    }
    out[b].d = ThroughHalf(d);
    out[b].s = ThroughHalf(d * static_cast<float>(sum));
  }
  return out;
}

struct NaiveWeights {  // one row, decoded to integers and per-block scale and minimum
  std::vector<int> q;
  std::vector<float> d, m;
};

NaiveWeights Decode(QuantWeightFormat format, const std::vector<uint8_t>& row, int64_t blocks) {
  NaiveWeights w;
  const int64_t bytes = QuantWeightBlockBytes(format);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = row.data() + b * bytes;
    w.d.push_back(support::HalfToFloat(static_cast<uint16_t>(p[0] | p[1] << 8)));
    w.m.push_back(format == QuantWeightFormat::kQ4_1 ? support::HalfToFloat(static_cast<uint16_t>(p[2] | p[3] << 8)) : 0);
    for (int j = 0; j < 32; ++j) {
      if (format == QuantWeightFormat::kQ8_0) {
        w.q.push_back(static_cast<int8_t>(p[2 + j]));
      } else if (format == QuantWeightFormat::kIQ4_NL) {
        // ggml's kvalues_iq4nl, written out here rather than taken from the code under test.
        static constexpr int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
        w.q.push_back(kValues[j < 16 ? p[2 + j] & 15 : p[2 + j - 16] >> 4]);
      } else {
        const uint8_t* qs = p + (format == QuantWeightFormat::kQ4_1 ? 4 : 2);
        const int nibble = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
        w.q.push_back(format == QuantWeightFormat::kQ4_0 ? nibble - 8 : nibble);
      }
    }
  }
  return w;
}

// ggml_vec_dot_iq4_nl_q8_0 (AVX2): blocks 2i into one set of 8 lanes, 2i + 1 into another,
// the sets added lane by lane, the lanes as the others'; an odd count's last block after.
float NaiveDotIq4Nl(const NaiveWeights& w, const std::vector<NaiveBlock>& x) {
  float even[8] = {}, odd[8] = {};
  const size_t paired = x.size() / 2 * 2;
  for (size_t b = 0; b < paired; ++b) {
    float* lane = b % 2 == 0 ? even : odd;
    for (int l = 0; l < 8; ++l) {
      int sum = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) sum += w.q[b * 32 + j] * x[b].q[j];
      lane[l] = std::fma(w.d[b] * x[b].d, static_cast<float>(sum), lane[l]);
    }
  }
  float lane[8];
  for (int l = 0; l < 8; ++l) lane[l] = even[l] + odd[l];
  float result = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  if (paired < x.size()) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += w.q[paired * 32 + j] * x[paired].q[j];
    result = std::fma(w.d[paired] * x[paired].d, static_cast<float>(sum), result);
  }
  return result;
}

float NaiveDot(QuantWeightFormat format, const NaiveWeights& w, const std::vector<NaiveBlock>& x) {
  if (format == QuantWeightFormat::kIQ4_NL) return NaiveDotIq4Nl(w, x);
  float lane[8] = {};
  float minimums = 0;
  for (size_t b = 0; b < x.size(); ++b) {
    for (int l = 0; l < 8; ++l) {
      int sum = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) sum += w.q[b * 32 + j] * x[b].q[j];
      lane[l] = std::fma(w.d[b] * x[b].d, static_cast<float>(sum), lane[l]);
    }
    if (format == QuantWeightFormat::kQ4_1) minimums = std::fma(w.m[b], x[b].s, minimums);
  }
  const float result = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  return format == QuantWeightFormat::kQ4_1 ? result + minimums : result;
}

// ggml's repacked Q4_0 order: one exact integer per block, one fused multiply-add per block.
float NaiveDotByBlock(const NaiveWeights& w, const std::vector<NaiveBlock>& x) {
  float acc = 0;
  for (size_t b = 0; b < x.size(); ++b) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += w.q[b * 32 + j] * x[b].q[j];
    acc = std::fma(static_cast<float>(sum), w.d[b] * x[b].d, acc);
  }
  return acc;
}

double ExactDot(const NaiveWeights& w, const std::vector<float>& x) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (double(w.d[i / 32]) * w.q[i] + w.m[i / 32]) * x[i];
  return s;
}

// --- random inputs ---

std::vector<uint8_t> RandomRow(QuantWeightFormat format, int64_t blocks, std::mt19937& rng) {
  const int64_t bytes = QuantWeightBlockBytes(format);
  std::vector<uint8_t> row(static_cast<size_t>(blocks * bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* p = row.data() + b * bytes;
    for (int64_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
    const uint16_t d = support::FloatToHalf(scale(rng));
    const uint16_t m = support::FloatToHalf(-8 * scale(rng));
    p[0] = d & 255, p[1] = d >> 8;
    if (format == QuantWeightFormat::kQ4_1) p[2] = m & 255, p[3] = m >> 8;
  }
  return row;
}

std::vector<float> RandomActivations(int64_t k, std::mt19937& rng, int pattern) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    x[i] = normal(rng) * (1 + 20 * (i % 97 == 3));  // occasional outliers set a block's scale
    if (pattern == 1 && i % 32 < 32) x[i] = std::round(x[i] * 4) / 4 * 127;  // ties at .5 after scaling
    if (pattern == 2 && (i / 32) % 3 == 1) x[i] = 0;                          // all-zero blocks
  }
  return x;
}

// `rows` rows of random activations (in *xs) and their blocks, one row after the other.
std::vector<Q8Block> RandomQuantizedRows(int rows, int64_t blocks, std::mt19937& rng, std::vector<std::vector<float>>* xs) {
  std::vector<Q8Block> quantized;
  for (int r = 0; r < rows; ++r) {
    xs->push_back(RandomActivations(blocks * 32, rng, r % 3));
    std::vector<Q8Block> row(static_cast<size_t>(blocks));
    QuantizeRowQ8(xs->back().data(), blocks * 32, row.data(), Q8Isa::kScalar);
    quantized.insert(quantized.end(), row.begin(), row.end());
  }
  return quantized;
}

std::vector<Q8Isa> SupportedIsas() {
  std::vector<Q8Isa> out;
  for (Q8Isa isa : {Q8Isa::kScalar, Q8Isa::kAvx2, Q8Isa::kAvx512Vnni}) {
    if (Q8IsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

TEST(Q8BlockDot, QuantizationMatchesTheNaiveRoundingOnEveryInstructionSet) {
  std::mt19937 rng(7);
  for (int pattern = 0; pattern < 3; ++pattern) {
    const std::vector<float> x = RandomActivations(32 * 40, rng, pattern);
    const std::vector<NaiveBlock> want = NaiveQuantize(x);
    for (Q8Isa isa : SupportedIsas()) {
      SCOPED_TRACE(Q8IsaName(isa));
      std::vector<Q8Block> got(want.size());
      QuantizeRowQ8(x.data(), static_cast<int64_t>(x.size()), got.data(), isa);
      for (size_t b = 0; b < want.size(); ++b) {
        for (int j = 0; j < 32; ++j) ASSERT_EQ(got[b].q[j], want[b].q[j]) << "block " << b << " element " << j;
        ASSERT_EQ(got[b].d, want[b].d) << "block " << b;
        ASSERT_EQ(got[b].s, want[b].s) << "block " << b;
      }
    }
  }
}

TEST(Q8BlockDot, DotProductsEqualTheNaiveOnesBitForBitOnEveryInstructionSet) {
  std::mt19937 rng(11);
  for (QuantWeightFormat format :
       {QuantWeightFormat::kQ4_0, QuantWeightFormat::kQ4_1, QuantWeightFormat::kQ8_0, QuantWeightFormat::kIQ4_NL}) {
    for (int64_t blocks : {1, 2, 3, 18, 48}) {
      const int64_t k = blocks * 32;
      constexpr int kRows = 7;  // a group of 4 and a remainder of 3
      std::vector<std::vector<float>> xs;
      const std::vector<Q8Block> quantized = RandomQuantizedRows(kRows, blocks, rng, &xs);
      const std::vector<uint8_t> w = RandomRow(format, blocks, rng);
      const NaiveWeights decoded = Decode(format, w, blocks);
      for (Q8Isa isa : SupportedIsas()) {
        SCOPED_TRACE(::testing::Message() << Q8IsaName(isa) << " format " << static_cast<int>(format) << " k " << k);
        std::vector<float> all(kRows);
        DotQ8Rows(format, w.data(), quantized.data(), blocks, kRows, all.data(), 1, isa);
        for (int r = 0; r < kRows; ++r) {
          const float want = NaiveDot(format, decoded, NaiveQuantize(xs[r]));
          EXPECT_EQ(all[r], want) << "row " << r << " of " << kRows;
          float alone = 0;
          DotQ8Rows(format, w.data(), quantized.data() + r * blocks, blocks, 1, &alone, 1, isa);
          EXPECT_EQ(alone, want) << "row " << r << " alone";
          // Quantizing the activations costs about 1% of the typical term's magnitude.
          const double exact = ExactDot(decoded, xs[r]);
          double scale = 0;
          for (int64_t i = 0; i < k; ++i) scale += std::fabs((decoded.d[i / 32] * decoded.q[i] + decoded.m[i / 32]) * xs[r][i]);
          EXPECT_NEAR(want, exact, 0.02 * scale + 1e-6) << "row " << r;
        }
      }
    }
  }
}

TEST(Q8BlockDot, BlockOrderEqualsTheNaiveOneBitForBitOnEveryInstructionSet) {
  std::mt19937 rng(13);
  for (QuantWeightFormat format : {QuantWeightFormat::kQ4_0, QuantWeightFormat::kQ8_0, QuantWeightFormat::kIQ4_NL}) {
    for (int64_t blocks : {1, 3, 18}) {
      const int64_t k = blocks * 32;
      constexpr int kRows = 6;         // a group of 4 activation rows and a remainder of 2
      constexpr int kWeightRows = 19;  // two groups of 8 weight rows and a remainder of 3
      std::vector<std::vector<float>> xs;
      const std::vector<Q8Block> quantized = RandomQuantizedRows(kRows, blocks, rng, &xs);
      std::vector<uint8_t> w;
      std::vector<NaiveWeights> decoded;
      for (int i = 0; i < kWeightRows; ++i) {
        const std::vector<uint8_t> row = RandomRow(format, blocks, rng);
        w.insert(w.end(), row.begin(), row.end());
        decoded.push_back(Decode(format, row, blocks));
      }
      for (Q8Isa isa : SupportedIsas()) {
        SCOPED_TRACE(::testing::Message() << Q8IsaName(isa) << " format " << static_cast<int>(format) << " k " << k);
        std::vector<float> all(kRows * kWeightRows);
        DotQ8RowsByBlock(format, w.data(), kWeightRows, quantized.data(), blocks, kRows, all.data(), kWeightRows, isa);
        for (int r = 0; r < kRows; ++r) {
          const std::vector<NaiveBlock> x = NaiveQuantize(xs[r]);
          for (int i = 0; i < kWeightRows; ++i) {
            const float want = NaiveDotByBlock(decoded[i], x);
            ASSERT_EQ(all[r * kWeightRows + i], want) << "activation row " << r << ", weight row " << i;
            // The order differs from the lanes' in the last bits only.
            EXPECT_NEAR(want, NaiveDot(format, decoded[i], x), 1e-4 * (1 + std::fabs(want)));
          }
          float alone = 0;  // one activation row, one weight row: the same bits
          DotQ8RowsByBlock(format, w.data() + 5 * blocks * QuantWeightBlockBytes(format), 1,
                           quantized.data() + r * blocks, blocks, 1, &alone, 1, isa);
          EXPECT_EQ(alone, all[r * kWeightRows + 5]) << "activation row " << r << " alone";
        }
      }
    }
  }
}

TEST(Q8BlockDot, ZeroAndNonFiniteActivationsDoNotCrash) {
  std::vector<float> x(64, 0.0f);
  x[40] = std::numeric_limits<float>::infinity();
  x[41] = std::numeric_limits<float>::quiet_NaN();
  std::vector<Q8Block> first;
  for (Q8Isa isa : SupportedIsas()) {
    std::vector<Q8Block> got(2);
    QuantizeRowQ8(x.data(), 64, got.data(), isa);
    EXPECT_EQ(got[0].d, 0.0f);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(got[0].q[j], 0);
    if (first.empty()) {
      first = got;
    } else {
      EXPECT_EQ(std::memcmp(first[1].q, got[1].q, 32), 0) << Q8IsaName(isa);
    }
  }
}

}  // namespace
}  // namespace kiln::builtins
