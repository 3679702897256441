#include "builtins/kquant_block_dot.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "support/float16.h"

namespace kiln::builtins {
namespace {

float Half(const uint8_t* p) { return support::HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// F16C's exact conversion for the AVX2 code (the portable one calls ldexp, a library call
// per scale: a third of a super-block's time when rows are few).
__attribute__((target("avx2,fma,f16c"))) inline float HalfF16c(const uint8_t* p) {
  return _cvtsh_ss(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// The code shared by the portable and the AVX2 paths is inlined into each, so that in the
// AVX2 one std::fma is the fused multiply-add instruction rather than a call into libm.
#define KILN_INLINE inline __attribute__((always_inline))

// ggml's round-to-nearest through the float adder: adding 1.5 * 2^23 leaves the integer in
// the low mantissa bits, rounded half to even (exact for |v| < 2^22, which the quantized
// values are; the same bits as ggml's for anything else).
int NearestInt(float v) {
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

// The scale and min of group g (0..7) of a Q4_K/Q5_K super-block's 12 packed bytes.
void ScaleAndMin(const uint8_t* packed, int g, int* scale, int* min) {
  if (g < 4) {
    *scale = packed[g] & 63;
    *min = packed[g + 4] & 63;
  } else {
    *scale = (packed[g + 4] & 0xF) | ((packed[g - 4] >> 6) << 4);
    *min = (packed[g + 4] >> 4) | ((packed[g] >> 6) << 4);
  }
}

// One super-block's weight scales and minimums as integers, and its float parameters.
struct SuperBlockScales {
  int scale16[16];  // the scale of weights 16i .. 16i + 15
  int min[8];       // Q4_K/Q5_K: the min of group g (0 for Q6_K)
  int min16[16];    // Q2_K: the min of weights 16i .. 16i + 15
  float d, dmin;
};

bool HasMins(KQuantFormat format) {
  return format == KQuantFormat::kQ4_K || format == KQuantFormat::kQ5_K || format == KQuantFormat::kQ2_K;
}

// The sixteen 6-bit scales of a Q3_K super-block's 12 bytes, minus 32 (scale i: low nibble
// of byte i % 8 at bit 4 * (i / 8), top bits 2 * (i / 4) of byte 8 + i % 4).
void Q3KScales(const uint8_t* packed, int8_t scales[16]) {
  for (int i = 0; i < 16; ++i) {
    const int low = (packed[i % 8] >> (4 * (i / 8))) & 15;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

SuperBlockScales ReadScales(KQuantFormat format, const uint8_t* block) {
  SuperBlockScales s{};
  if (format == KQuantFormat::kQ2_K) {
    for (int i = 0; i < 16; ++i) {
      s.scale16[i] = block[i] & 15;
      s.min16[i] = block[i] >> 4;
    }
    s.d = Half(block + 80);
    s.dmin = Half(block + 82);
    return s;
  }
  if (format == KQuantFormat::kIQ4_XS) {
    const int high = block[2] | block[3] << 8;
    for (int g = 0; g < 8; ++g) {
      const int low = (block[4 + g / 2] >> (4 * (g % 2))) & 15;
      s.scale16[2 * g] = s.scale16[2 * g + 1] = (low | ((high >> (2 * g)) & 3) << 4) - 32;
    }
    s.d = Half(block);
    return s;
  }
  if (format == KQuantFormat::kQ3_K) {
    int8_t scales[16];
    Q3KScales(block + 96, scales);
    for (int i = 0; i < 16; ++i) s.scale16[i] = scales[i];
    s.d = Half(block + 108);
    return s;
  }
  if (format == KQuantFormat::kQ6_K) {
    for (int i = 0; i < 16; ++i) s.scale16[i] = static_cast<int8_t>(block[192 + i]);
    s.d = Half(block + 208);
    return s;
  }
  s.d = Half(block);
  s.dmin = Half(block + 2);
  for (int g = 0; g < 8; ++g) {
    int scale = 0;
    ScaleAndMin(block + 4, g, &scale, &s.min[g]);
    s.scale16[2 * g] = s.scale16[2 * g + 1] = scale;
  }
  return s;
}

// The 256 weights of a super-block as integers (Q6_K without its - 32: the offset is taken
// per lane from the activation sums, Q6KOffsets; Q3_K signed, -4..3; Q2_K 0..3).
void ReadQuants(KQuantFormat format, const uint8_t* block, int* q) {
  switch (format) {
    case KQuantFormat::kQ2_K: {
      for (int e = 0; e < 256; ++e) {
        const int n = e / 128, j = (e % 128) / 32, l = e % 32;
        q[e] = (block[16 + 32 * n + l] >> (2 * j)) & 3;
      }
      return;
    }
    case KQuantFormat::kIQ4_XS: {
      for (int e = 0; e < 256; ++e) {
        const uint8_t byte = block[8 + 16 * (e / 32) + e % 16];
        q[e] = kIq4NlValues[e % 32 < 16 ? byte & 15 : byte >> 4];
      }
      return;
    }
    case KQuantFormat::kQ3_K: {
      for (int e = 0; e < 256; ++e) {
        const int n = e / 128, j = (e % 128) / 32, l = e % 32;
        const int low = (block[32 + 32 * n + l] >> (2 * j)) & 3;
        const int high = (block[l] >> (4 * n + j)) & 1;
        q[e] = low - (high ? 0 : 4);
      }
      return;
    }
    case KQuantFormat::kQ4_K:
    case KQuantFormat::kQ5_K: {
      const bool q5 = format == KQuantFormat::kQ5_K;
      const uint8_t* high = block + 16;
      const uint8_t* nibbles = block + (q5 ? 48 : 16);
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t byte = nibbles[32 * c + l];
          q[64 * c + l] = (byte & 15) + (q5 ? ((high[l] >> (2 * c)) & 1) << 4 : 0);
          q[64 * c + 32 + l] = (byte >> 4) + (q5 ? ((high[l] >> (2 * c + 1)) & 1) << 4 : 0);
        }
      }
      return;
    }
    case KQuantFormat::kQ6_K: {
      for (int c = 0; c < 2; ++c) {
        const uint8_t* low = block + 64 * c;
        const uint8_t* high = block + 128 + 32 * c;
        for (int l = 0; l < 32; ++l) {
          q[128 * c + l] = (low[l] & 15) | ((high[l] & 3) << 4);
          q[128 * c + 32 + l] = (low[32 + l] & 15) | (((high[l] >> 2) & 3) << 4);
          q[128 * c + 64 + l] = (low[l] >> 4) | (((high[l] >> 4) & 3) << 4);
          q[128 * c + 96 + l] = (low[32 + l] >> 4) | (((high[l] >> 6) & 3) << 4);
        }
      }
      return;
    }
  }
}

// Q6_K's - 32 as ggml takes it: lane t loses 32 * (scale(2t) * sum(2t) + scale(2t + 1) *
// sum(2t + 1)), sum(i) the sum of activations 16i .. 16i + 15 (so lane t's offset belongs to
// the weights of group t, not to the lane's elements: the lanes differ from those of q - 32).
void Q6KOffsets(const SuperBlockScales& s, const Q8KBlock& x, int32_t offsets[8]) {
  for (int t = 0; t < 8; ++t) {
    offsets[t] = 32 * (s.scale16[2 * t] * x.sums[2 * t] + s.scale16[2 * t + 1] * x.sums[2 * t + 1]);
  }
}

// prod[t] = min(2t) * s(2t) + min(2t + 1) * s(2t + 1), s(g) the sum of group g's activations.
void MinProducts(const SuperBlockScales& s, const Q8KBlock& x, int32_t prod[4]) {
  for (int t = 0; t < 4; ++t) {
    const int even = x.sums[4 * t] + x.sums[4 * t + 1];
    const int odd = x.sums[4 * t + 2] + x.sums[4 * t + 3];
    prod[t] = s.min[2 * t] * even + s.min[2 * t + 1] * odd;
  }
}

// One super-block's exact integer sums against one activation row: the 8 lanes (lane t:
// elements 4t..4t+3 of each group of 32, times their scales), the 4 quarters (weights 64i ..
// 64i + 63, times their scales), both with Q6_K's offsets subtracted, and the min products.
struct SuperBlockSums {
  int32_t lanes[8];
  int32_t quarters[4];   // kBlocks and kTiles read only their sum
  int32_t mins[4];       // prod[t] of MinProducts (zeros for Q3_K, Q6_K, IQ4_XS); Q2_K: its quarters'
  int32_t min_lanes[8];  // Q2_K: min16(2t) * sum(2t) + min16(2t + 1) * sum(2t + 1)
};

// The per-row float state of each order (KQuantSummation). kLanes: 8 lanes, and the mins
// (Q4_K: 4 lanes, Q5_K: lane 0 as a scalar); kBlocks and kBlockQuarters: acc and mins;
// kTiles: acc.
class RowAccumulator {
 public:
  RowAccumulator(KQuantFormat format, KQuantSummation summation) : format_(format), summation_(summation) {}

  KILN_INLINE void Add(const SuperBlockScales& s, float activation_d, const SuperBlockSums& sums) {
    const bool has_min = HasMins(format_);
    switch (summation_) {
      case KQuantSummation::kLanes: {
        if (format_ == KQuantFormat::kQ2_K) {
          // ggml's Q2_K vec_dot: the min products into the lanes first, then the products.
          const float dmin = -activation_d * s.dmin;
          for (int t = 0; t < 8; ++t) lanes_[t] = std::fma(dmin, static_cast<float>(sums.min_lanes[t]), lanes_[t]);
        }
        const float d = activation_d * s.d;
        for (int t = 0; t < 8; ++t) lanes_[t] = std::fma(d, static_cast<float>(sums.lanes[t]), lanes_[t]);
        AddLaneMins(-activation_d * s.dmin, sums.mins);
        return;
      }
      case KQuantSummation::kBlockQuarters:
        for (int i = 0; i < 4; ++i) {
          lanes_[0] = std::fma(static_cast<float>(sums.quarters[i]), s.d * activation_d, lanes_[0]);
          if (has_min) mins_[0] = std::fma(static_cast<float>(sums.mins[i]), s.dmin * activation_d, mins_[0]);
        }
        return;
      case KQuantSummation::kBlockHalves:
        for (int i = 0; i < 2; ++i) {
          const float half = static_cast<float>(sums.quarters[2 * i] + sums.quarters[2 * i + 1]);
          lanes_[0] = std::fma(half, s.d * activation_d, lanes_[0]);
          const float half_min = static_cast<float>(sums.mins[2 * i] + sums.mins[2 * i + 1]);
          if (has_min) mins_[0] = std::fma(half_min, s.dmin * activation_d, mins_[0]);
        }
        return;
      case KQuantSummation::kBlocks:
      case KQuantSummation::kTiles: {
        const float fsum = static_cast<float>((sums.quarters[0] + sums.quarters[1]) + (sums.quarters[2] + sums.quarters[3]));
        const float fmin = static_cast<float>((sums.mins[0] + sums.mins[1]) + (sums.mins[2] + sums.mins[3]));
        if (summation_ == KQuantSummation::kBlocks) {
          lanes_[0] = std::fma(fsum, s.d * activation_d, lanes_[0]);
          if (has_min) mins_[0] = std::fma(fmin, s.dmin * activation_d, mins_[0]);
          return;
        }
        float r = fsum * s.d;
        if (has_min) r = std::fma(-s.dmin, fmin, r);
        lanes_[0] = std::fma(r, activation_d, lanes_[0]);
        return;
      }
    }
  }

  // kLanes only: the 8 lanes and the 4 min lanes, for a vector unit that accumulated them
  // itself.
  float* lanes() { return lanes_; }
  float* mins() { return mins_; }

  KILN_INLINE float Result() const {
    if (summation_ == KQuantSummation::kBlocks || summation_ == KQuantSummation::kBlockQuarters ||
        summation_ == KQuantSummation::kBlockHalves) {
      return lanes_[0] - mins_[0];
    }
    if (summation_ == KQuantSummation::kTiles) return lanes_[0];
    float four[4];
    for (int i = 0; i < 4; ++i) four[i] = lanes_[i + 4] + lanes_[i];
    const float sum = (four[0] + four[2]) + (four[1] + four[3]);
    if (format_ == KQuantFormat::kQ4_K) return sum + ((mins_[0] + mins_[2]) + (mins_[1] + mins_[3]));
    if (format_ == KQuantFormat::kQ5_K) return sum + mins_[0];
    return sum;
  }

  // kLanes: the mins' float steps (Q4_K into 4 lanes, Q5_K their integer sum into one).
  KILN_INLINE void AddLaneMins(float dmin, const int32_t prod[4]) {
    if (format_ == KQuantFormat::kQ4_K) {
      for (int t = 0; t < 4; ++t) mins_[t] = std::fma(dmin, static_cast<float>(prod[t]), mins_[t]);
    } else if (format_ == KQuantFormat::kQ5_K) {
      const int32_t sum = (prod[0] + prod[1]) + (prod[2] + prod[3]);
      mins_[0] = std::fma(dmin, static_cast<float>(sum), mins_[0]);
    }
  }

 private:
  KQuantFormat format_;
  KQuantSummation summation_;
  float lanes_[8] = {};
  float mins_[4] = {};
};

// The min products of a super-block (zeros for Q3_K, Q6_K and IQ4_XS, which have no mins;
// Q2_K's per lane, as its vec_dot pairs them, and per quarter).
void MinProductsOf(KQuantFormat format, const SuperBlockScales& s, const Q8KBlock& x, SuperBlockSums* sums) {
  if (format == KQuantFormat::kQ2_K) {
    for (int t = 0; t < 8; ++t) {
      sums->min_lanes[t] = s.min16[2 * t] * x.sums[2 * t] + s.min16[2 * t + 1] * x.sums[2 * t + 1];
    }
    for (int i = 0; i < 4; ++i) sums->mins[i] = sums->min_lanes[2 * i] + sums->min_lanes[2 * i + 1];
    return;
  }
  if (format == KQuantFormat::kQ4_K || format == KQuantFormat::kQ5_K) MinProducts(s, x, sums->mins);
}

// Subtracts Q6_K's offsets (Q6KOffsets: lane t's is group t's) from the lanes and quarters.
void SubtractQ6KOffsets(const SuperBlockScales& s, const Q8KBlock& x, SuperBlockSums* sums) {
  int32_t offsets[8];
  Q6KOffsets(s, x, offsets);
  for (int t = 0; t < 8; ++t) sums->lanes[t] -= offsets[t];
  for (int i = 0; i < 4; ++i) sums->quarters[i] -= offsets[2 * i] + offsets[2 * i + 1];
}

void DotRowsScalar(KQuantFormat format, KQuantSummation summation, const uint8_t* w, const Q8KBlock* x,
                   int64_t blocks, int64_t rows, float* out, int64_t out_stride) {
  const int64_t block_bytes = KQuantBlockBytes(format);
  int q[256];
  for (int64_t r = 0; r < rows; ++r) {
    RowAccumulator acc(format, summation);
    const uint8_t* block = w;
    for (int64_t b = 0; b < blocks; ++b, block += block_bytes) {
      const Q8KBlock& xb = x[r * blocks + b];
      const SuperBlockScales s = ReadScales(format, block);
      ReadQuants(format, block, q);
      SuperBlockSums sums{};
      for (int g = 0; g < 8; ++g) {
        for (int t = 0; t < 8; ++t) {
          const int e = 32 * g + 4 * t;
          int32_t sum = 0;
          for (int i = e; i < e + 4; ++i) sum += q[i] * xb.q[i];
          sums.lanes[t] += s.scale16[e / 16] * sum;
          sums.quarters[g / 2] += s.scale16[e / 16] * sum;
        }
      }
      if (format == KQuantFormat::kQ6_K) SubtractQ6KOffsets(s, xb, &sums);
      MinProductsOf(format, s, xb, &sums);
      acc.Add(s, xb.d, sums);
    }
    out[r * out_stride] = acc.Result();
  }
}

// --- AVX2: the same integers with vpmaddubsw + vpmaddwd, the same float operations ---

// A super-block decoded for the byte products: the weights of group g (32 bytes, unsigned:
// Q6_K without its - 32) and its scales as 16 int16 (8 for each half of the group).
struct DecodedSuperBlock {
  float d, dmin;
  __m256i quants[8];
  __m256i scales[8];
  // Per 16 activations (Q8KBlock::sums order), the int16 that multiplies their sum: Q6_K 32
  // times the scale (its offset), Q4_K/Q5_K the min of their group of 32. vpmaddwd with the
  // sums gives, in int32 lane t, group t's offset or min product.
  __m256i per_sum;
};

// Q6_K's 2-bit high parts at bits `shift` of each byte, moved to bits 4-5.
__attribute__((target("avx2,fma,f16c"))) inline __m256i HighBits(__m256i high, int shift, __m256i two) {
  return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, shift), two), 4);
}

// The int16 scales of the groups, 8 to a vector with both 128-bit halves alike (Q4_K/Q5_K:
// scale g in word g; Q6_K: its 16 scales in two such vectors): scales[g] takes the words of
// group g's two 16s, one for each half.
__attribute__((target("avx2,fma,f16c"))) inline __m256i WordPair(__m256i words, int low, int high) {
  const __m256i pattern = _mm256_setr_epi8(
      static_cast<char>(2 * low), static_cast<char>(2 * low + 1), static_cast<char>(2 * low), static_cast<char>(2 * low + 1),
      static_cast<char>(2 * low), static_cast<char>(2 * low + 1), static_cast<char>(2 * low), static_cast<char>(2 * low + 1),
      static_cast<char>(2 * low), static_cast<char>(2 * low + 1), static_cast<char>(2 * low), static_cast<char>(2 * low + 1),
      static_cast<char>(2 * low), static_cast<char>(2 * low + 1), static_cast<char>(2 * low), static_cast<char>(2 * low + 1),
      static_cast<char>(2 * high), static_cast<char>(2 * high + 1), static_cast<char>(2 * high), static_cast<char>(2 * high + 1),
      static_cast<char>(2 * high), static_cast<char>(2 * high + 1), static_cast<char>(2 * high), static_cast<char>(2 * high + 1),
      static_cast<char>(2 * high), static_cast<char>(2 * high + 1), static_cast<char>(2 * high), static_cast<char>(2 * high + 1),
      static_cast<char>(2 * high), static_cast<char>(2 * high + 1), static_cast<char>(2 * high), static_cast<char>(2 * high + 1));
  return _mm256_shuffle_epi8(words, pattern);
}

// A super-block decoded in vectors (ReadScales' values without its scalar loops): d, dmin,
// the scale vectors, per_sum and the quants.
__attribute__((target("avx2,fma,f16c"))) KILN_INLINE void DecodeAvx2(KQuantFormat format, const uint8_t* block,
                                                                     DecodedSuperBlock* out) {
  const __m256i low4 = _mm256_set1_epi8(15);
  if (format == KQuantFormat::kQ2_K) {
    // Scales as Q3_K's (16 int16, per 16 weights), the 16 mins per_sum (Q8KBlock::sums
    // order: vpmaddwd gives ggml's paired min products), the quants 0..3.
    out->d = HalfF16c(block + 80);
    out->dmin = HalfF16c(block + 82);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    const __m128i low4x16 = _mm_set1_epi8(15);
    const __m256i scales16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, low4x16));
    const __m256i first = _mm256_permute2x128_si256(scales16, scales16, 0x00);
    const __m256i second = _mm256_permute2x128_si256(scales16, scales16, 0x11);
    for (int g = 0; g < 4; ++g) out->scales[g] = WordPair(first, 2 * g, 2 * g + 1);
    for (int g = 4; g < 8; ++g) out->scales[g] = WordPair(second, 2 * g - 8, 2 * g - 7);
    out->per_sum = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4x16));
    const __m256i three = _mm256_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16 + 32 * n));
      for (int j = 0; j < 4; ++j) out->quants[4 * n + j] = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), three);
    }
    return;
  }
  if (format == KQuantFormat::kIQ4_XS) {
    // Signed weights (the table's values; the caller multiplies through |q| and sign(y, q))
    // and signed scales, one per group.
    out->d = HalfF16c(block);
    out->dmin = 0.0f;
    const SuperBlockScales scales = ReadScales(format, block);
    alignas(16) int16_t words[8];
    for (int g = 0; g < 8; ++g) words[g] = static_cast<int16_t>(scales.scale16[2 * g]);
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(words)));
    for (int g = 0; g < 8; ++g) out->scales[g] = WordPair(scales16, g, g);
    out->per_sum = _mm256_setzero_si256();
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlValues)));
    for (int g = 0; g < 8; ++g) {
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 8 + 16 * g));
      const __m256i nibbles = _mm256_and_si256(
          _mm256_insertf128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1), low4);
      out->quants[g] = _mm256_shuffle_epi8(table, nibbles);
    }
    return;
  }
  if (format == KQuantFormat::kQ3_K) {
    // Scales as Q6_K's (16 int16, per 16 weights); the quants unsigned as q + 4 (0..7): the
    // caller subtracts 4 * y from each pair's products, as ggml does.
    out->d = HalfF16c(block + 108);
    out->dmin = 0.0f;
    alignas(16) int8_t scales[16];
    Q3KScales(block + 96, scales);
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(scales)));
    const __m256i first = _mm256_permute2x128_si256(scales16, scales16, 0x00);
    const __m256i second = _mm256_permute2x128_si256(scales16, scales16, 0x11);
    for (int g = 0; g < 4; ++g) out->scales[g] = WordPair(first, 2 * g, 2 * g + 1);
    for (int g = 4; g < 8; ++g) out->scales[g] = WordPair(second, 2 * g - 8, 2 * g - 7);
    out->per_sum = _mm256_setzero_si256();
    const __m256i hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
    const __m256i one = _mm256_set1_epi8(1), three = _mm256_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {
      const __m256i lows = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32 + 32 * n));
      for (int j = 0; j < 4; ++j) {
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(lows, 2 * j), three);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hbits, 4 * n + j), one);
        out->quants[4 * n + j] = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
      }
    }
    return;
  }
  if (format == KQuantFormat::kQ6_K) {
    out->d = HalfF16c(block + 208);
    out->dmin = 0.0f;
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)));
    const __m256i first = _mm256_permute2x128_si256(scales16, scales16, 0x00);   // scales 0..7 twice
    const __m256i second = _mm256_permute2x128_si256(scales16, scales16, 0x11);  // scales 8..15 twice
    for (int g = 0; g < 4; ++g) out->scales[g] = WordPair(first, 2 * g, 2 * g + 1);
    for (int g = 4; g < 8; ++g) out->scales[g] = WordPair(second, 2 * g - 8, 2 * g - 7);
    out->per_sum = _mm256_slli_epi16(scales16, 5);
  } else {
    out->d = HalfF16c(block);
    out->dmin = HalfF16c(block + 2);
    // The 12 packed bytes as three little-endian words; ScaleAndMin for four groups at a
    // time, one per byte.
    uint32_t u[3];
    std::memcpy(u, block + 4, sizeof(u));
    const uint32_t scales_low = u[0] & 0x3f3f3f3f;
    const uint32_t scales_high = (u[2] & 0x0f0f0f0f) | ((u[0] >> 2) & 0x30303030);
    const uint32_t mins_low = u[1] & 0x3f3f3f3f;
    const uint32_t mins_high = ((u[2] >> 4) & 0x0f0f0f0f) | ((u[1] >> 2) & 0x30303030);
    const __m128i scale_bytes = _mm_cvtsi64_si128(static_cast<int64_t>(uint64_t{scales_low} | uint64_t{scales_high} << 32));
    const __m128i min_bytes = _mm_cvtsi64_si128(static_cast<int64_t>(uint64_t{mins_low} | uint64_t{mins_high} << 32));
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scale_bytes));
    for (int g = 0; g < 8; ++g) out->scales[g] = WordPair(scales16, g, g);
    out->per_sum = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(min_bytes, min_bytes));
  }
  if (format == KQuantFormat::kQ6_K) {
    const __m256i two = _mm256_set1_epi8(3);  // two bits
    for (int c = 0; c < 2; ++c) {
      const __m256i low0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * c));
      const __m256i low1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * c + 32));
      const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * c));
      out->quants[4 * c + 0] = _mm256_or_si256(_mm256_and_si256(low0, low4), HighBits(high, 0, two));
      out->quants[4 * c + 1] = _mm256_or_si256(_mm256_and_si256(low1, low4), HighBits(high, 2, two));
      out->quants[4 * c + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(low0, 4), low4), HighBits(high, 4, two));
      out->quants[4 * c + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(low1, 4), low4), HighBits(high, 6, two));
    }
    return;
  }
  const bool q5 = format == KQuantFormat::kQ5_K;
  const uint8_t* nibbles = block + (q5 ? 48 : 16);
  const __m256i high = q5 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16)) : _mm256_setzero_si256();
  const __m256i one = _mm256_set1_epi8(1);
  for (int c = 0; c < 4; ++c) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(nibbles + 32 * c));
    __m256i lo = _mm256_and_si256(bytes, low4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
    if (q5) {
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * c), one), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * c + 1), one), 4));
    }
    out->quants[2 * c] = lo;
    out->quants[2 * c + 1] = hi;
  }
}

// The sums of four 8-lane vectors, in that order (exact).
__attribute__((target("avx2,fma,f16c"))) inline __m128i SumEachOfFour(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i pairs = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
}

// Rows to columns: v[j] lane i becomes v[i] lane j.
__attribute__((target("avx2,fma,f16c"))) inline void Transpose4(__m128i v[4]) {
  const __m128i t0 = _mm_unpacklo_epi32(v[0], v[1]), t1 = _mm_unpackhi_epi32(v[0], v[1]);
  const __m128i t2 = _mm_unpacklo_epi32(v[2], v[3]), t3 = _mm_unpackhi_epi32(v[2], v[3]);
  v[0] = _mm_unpacklo_epi64(t0, t2);
  v[1] = _mm_unpackhi_epi64(t0, t2);
  v[2] = _mm_unpacklo_epi64(t1, t3);
  v[3] = _mm_unpackhi_epi64(t1, t3);
}

// Lanes 2i and 2i + 1 of v added, for i = 0..3 (groups of 32 to quarters of 64; exact).
__attribute__((target("avx2,fma,f16c"))) inline __m128i PairSums(__m256i v) {
  const __m256i pairs = _mm256_hadd_epi32(v, v);
  return _mm_unpacklo_epi64(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
}

// The format and the order are template arguments so that their tests leave the loops.
template <KQuantFormat format, KQuantSummation summation>
__attribute__((target("avx2,fma,f16c"))) void DotRowsAvx2(const uint8_t* w, const Q8KBlock* x, int64_t blocks,
                                                         int64_t rows, float* out, int64_t out_stride) {
  constexpr int kGroup = 4;
  const int64_t block_bytes = KQuantBlockBytes(format);
  constexpr bool q6 = format == KQuantFormat::kQ6_K;
  constexpr bool q3 = format == KQuantFormat::kQ3_K;
  constexpr bool iq4 = format == KQuantFormat::kIQ4_XS;
  constexpr bool q2 = format == KQuantFormat::kQ2_K;
  constexpr bool lanes = summation == KQuantSummation::kLanes;
  DecodedSuperBlock decoded;
  for (int64_t r = 0; r < rows; r += kGroup) {
    const int group = static_cast<int>(std::min<int64_t>(kGroup, rows - r));
    __m256 acc[kGroup];
    __m128 mins4[kGroup];  // kLanes, Q4_K
    float mins1[kGroup];   // kLanes, Q5_K
    RowAccumulator state[kGroup] = {{format, summation}, {format, summation}, {format, summation}, {format, summation}};
    for (int i = 0; i < kGroup; ++i) {
      acc[i] = _mm256_setzero_ps();
      mins4[i] = _mm_setzero_ps();
      mins1[i] = 0.0f;
    }
    // The one-sum orders keep each row's float state in one lane of these (rows past `group`
    // compute zeros): lane i follows row r + i's steps exactly, fused multiply-add by fused
    // multiply-add, without a chain through memory.
    __m128 row_acc = _mm_setzero_ps(), row_mins = _mm_setzero_ps();
    const uint8_t* block = w;
    for (int64_t b = 0; b < blocks; ++b, block += block_bytes) {
      DecodeAvx2(format, block, &decoded);
      const DecodedSuperBlock& s = decoded;
      __m128i quarters[kGroup] = {}, min_quarters[kGroup] = {};  // per row: Q[0..3], M[0..3]
      alignas(16) float activation_d[kGroup] = {};
      for (int i = 0; i < group; ++i) {
        const Q8KBlock& xb = x[(r + i) * blocks + b];
        // The products of each quarter j (groups 2j and 2j + 1) in 8 int32 lanes.
        __m256i quarter[4];
        for (int j = 0; j < 4; ++j) {
          __m256i sum = _mm256_setzero_si256();
          for (int g = 2 * j; g < 2 * j + 2; ++g) {
            const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.q + 32 * g));
            __m256i pairs = iq4 ? _mm256_maddubs_epi16(_mm256_sign_epi8(decoded.quants[g], decoded.quants[g]),
                                                       _mm256_sign_epi8(y, decoded.quants[g]))
                                : _mm256_maddubs_epi16(decoded.quants[g], y);
            if (q3) pairs = _mm256_sub_epi16(pairs, _mm256_maddubs_epi16(_mm256_set1_epi8(4), y));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(decoded.scales[g], pairs));
          }
          quarter[j] = sum;
        }
        // Lane t: group t's Q6_K offset (Q6KOffsets) or min product (min(t) * s(t)).
        const __m256i per_group =
            _mm256_madd_epi16(decoded.per_sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.sums)));
        if (lanes) {
          __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(quarter[0], quarter[1]), _mm256_add_epi32(quarter[2], quarter[3]));
          if (q6) sumi = _mm256_sub_epi32(sumi, per_group);
          // Q2_K: its min products (lane t: groups 2t and 2t + 1 of 16) go first.
          if (q2) acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(-xb.d * s.dmin), _mm256_cvtepi32_ps(per_group), acc[i]);
          acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(xb.d * s.d), _mm256_cvtepi32_ps(sumi), acc[i]);
          if (q6 || q3 || iq4 || q2) continue;
          // MinProducts: prod[t] = lanes 2t and 2t + 1; AddLaneMins' float steps.
          const __m128i prod = PairSums(per_group);
          const float dmin = -xb.d * s.dmin;
          if (format == KQuantFormat::kQ4_K) {
            mins4[i] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), mins4[i]);
          } else {
            const __m128i two = _mm_add_epi32(prod, _mm_unpackhi_epi64(prod, prod));
            mins1[i] = std::fma(dmin, static_cast<float>(_mm_cvtsi128_si32(_mm_add_epi32(two, _mm_shuffle_epi32(two, 1)))),
                                mins1[i]);
          }
        } else {
          // Exact integers per quarter (Q6_K's offsets subtracted) and per quarter's mins.
          quarters[i] = SumEachOfFour(quarter[0], quarter[1], quarter[2], quarter[3]);
          const __m128i per_quarter = PairSums(per_group);
          if (q6) {
            quarters[i] = _mm_sub_epi32(quarters[i], per_quarter);
          } else {
            min_quarters[i] = per_quarter;
          }
          activation_d[i] = xb.d;
        }
      }
      if (lanes) continue;
      // Transposed: by_quarter[j] lane i = row i's quarter j (RowAccumulator::Add's steps,
      // four rows at a time).
      __m128i by_quarter[4] = {quarters[0], quarters[1], quarters[2], quarters[3]};
      __m128i mins_by_quarter[4] = {min_quarters[0], min_quarters[1], min_quarters[2], min_quarters[3]};
      Transpose4(by_quarter);
      Transpose4(mins_by_quarter);
      const __m128 xd = _mm_load_ps(activation_d);
      constexpr bool has_min = !q6 && !q3 && !iq4;
      if (summation == KQuantSummation::kBlockQuarters) {
        const __m128 scale = _mm_mul_ps(_mm_set1_ps(s.d), xd), min_scale = _mm_mul_ps(_mm_set1_ps(s.dmin), xd);
        for (int j = 0; j < 4; ++j) {
          row_acc = _mm_fmadd_ps(_mm_cvtepi32_ps(by_quarter[j]), scale, row_acc);
          if (has_min) row_mins = _mm_fmadd_ps(_mm_cvtepi32_ps(mins_by_quarter[j]), min_scale, row_mins);
        }
        continue;
      }
      if (summation == KQuantSummation::kBlockHalves) {
        const __m128 scale = _mm_mul_ps(_mm_set1_ps(s.d), xd), min_scale = _mm_mul_ps(_mm_set1_ps(s.dmin), xd);
        for (int j = 0; j < 4; j += 2) {
          row_acc = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_add_epi32(by_quarter[j], by_quarter[j + 1])), scale, row_acc);
          if (has_min) {
            row_mins = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_add_epi32(mins_by_quarter[j], mins_by_quarter[j + 1])), min_scale,
                                    row_mins);
          }
        }
        continue;
      }
      const __m128 fsum = _mm_cvtepi32_ps(_mm_add_epi32(_mm_add_epi32(by_quarter[0], by_quarter[1]),
                                                        _mm_add_epi32(by_quarter[2], by_quarter[3])));
      const __m128 fmin = _mm_cvtepi32_ps(_mm_add_epi32(_mm_add_epi32(mins_by_quarter[0], mins_by_quarter[1]),
                                                        _mm_add_epi32(mins_by_quarter[2], mins_by_quarter[3])));
      if (summation == KQuantSummation::kBlocks) {
        row_acc = _mm_fmadd_ps(fsum, _mm_mul_ps(_mm_set1_ps(s.d), xd), row_acc);
        if (has_min) row_mins = _mm_fmadd_ps(fmin, _mm_mul_ps(_mm_set1_ps(s.dmin), xd), row_mins);
        continue;
      }
      // kTiles: r = fsum * d, r = fma(-dmin, fmin, r), acc = fma(r, activation d, acc).
      __m128 t = _mm_mul_ps(fsum, _mm_set1_ps(s.d));
      if (has_min) t = _mm_fmadd_ps(_mm_set1_ps(-s.dmin), fmin, t);
      row_acc = _mm_fmadd_ps(t, xd, row_acc);
    }
    alignas(16) float row_results[kGroup];
    _mm_store_ps(row_results, summation == KQuantSummation::kTiles ? row_acc : _mm_sub_ps(row_acc, row_mins));
    for (int i = 0; i < group; ++i) {
      if (lanes) {
        _mm256_storeu_ps(state[i].lanes(), acc[i]);
        if (format == KQuantFormat::kQ4_K) _mm_storeu_ps(state[i].mins(), mins4[i]);
        if (format == KQuantFormat::kQ5_K) state[i].mins()[0] = mins1[i];
        out[(r + i) * out_stride] = state[i].Result();
      } else {
        out[(r + i) * out_stride] = row_results[i];
      }
    }
  }
}

template <KQuantFormat format>
void DotRowsAvx2(KQuantSummation summation, const uint8_t* w, const Q8KBlock* x, int64_t blocks, int64_t rows,
                 float* out, int64_t out_stride) {
  switch (summation) {
    case KQuantSummation::kLanes:
      return DotRowsAvx2<format, KQuantSummation::kLanes>(w, x, blocks, rows, out, out_stride);
    case KQuantSummation::kBlocks:
      return DotRowsAvx2<format, KQuantSummation::kBlocks>(w, x, blocks, rows, out, out_stride);
    case KQuantSummation::kBlockQuarters:
      return DotRowsAvx2<format, KQuantSummation::kBlockQuarters>(w, x, blocks, rows, out, out_stride);
    case KQuantSummation::kBlockHalves:
      return DotRowsAvx2<format, KQuantSummation::kBlockHalves>(w, x, blocks, rows, out, out_stride);
    case KQuantSummation::kTiles:
      return DotRowsAvx2<format, KQuantSummation::kTiles>(w, x, blocks, rows, out, out_stride);
  }
}

#undef KILN_INLINE

}  // namespace

int64_t KQuantBlockBytes(KQuantFormat format) {
  switch (format) {
    case KQuantFormat::kQ4_K: return 144;
    case KQuantFormat::kQ5_K: return 176;
    case KQuantFormat::kQ6_K: return 210;
    case KQuantFormat::kQ3_K: return 110;
    case KQuantFormat::kIQ4_XS: return 136;
    case KQuantFormat::kQ2_K: return 84;
  }
  return 0;
}

void QuantizeRowQ8K(const float* x, int64_t k, Q8KBlock* out) {
  for (int64_t b = 0; b < k / kKQuantBlockWeights; ++b, x += kKQuantBlockWeights) {
    Q8KBlock& y = out[b];
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kKQuantBlockWeights; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      y = Q8KBlock{};
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kKQuantBlockWeights; ++j) {
      y.q[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[j])));
    }
    for (int i = 0; i < 16; ++i) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y.q[16 * i + j];
      y.sums[i] = static_cast<int16_t>(sum);
    }
    y.d = 1.0f / iscale;
  }
}

void DotQ8KRows(KQuantFormat format, KQuantSummation summation, const uint8_t* weight_row, const Q8KBlock* x,
                int64_t blocks, int64_t rows, float* out, int64_t out_stride, Q8Isa isa) {
  if (isa == Q8Isa::kScalar) return DotRowsScalar(format, summation, weight_row, x, blocks, rows, out, out_stride);
  switch (format) {
    case KQuantFormat::kQ4_K: return DotRowsAvx2<KQuantFormat::kQ4_K>(summation, weight_row, x, blocks, rows, out, out_stride);
    case KQuantFormat::kQ5_K: return DotRowsAvx2<KQuantFormat::kQ5_K>(summation, weight_row, x, blocks, rows, out, out_stride);
    case KQuantFormat::kQ6_K: return DotRowsAvx2<KQuantFormat::kQ6_K>(summation, weight_row, x, blocks, rows, out, out_stride);
    case KQuantFormat::kQ3_K: return DotRowsAvx2<KQuantFormat::kQ3_K>(summation, weight_row, x, blocks, rows, out, out_stride);
    case KQuantFormat::kIQ4_XS:
      return DotRowsAvx2<KQuantFormat::kIQ4_XS>(summation, weight_row, x, blocks, rows, out, out_stride);
    case KQuantFormat::kQ2_K: return DotRowsAvx2<KQuantFormat::kQ2_K>(summation, weight_row, x, blocks, rows, out, out_stride);
  }
}

}  // namespace kiln::builtins
