#include "builtins/q5_block_dot.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/float16.h"

namespace kiln::builtins {
namespace {

float Half(const uint8_t* p) { return support::HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

uint32_t FifthBits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return bits;
}

// Weight j of a block (Q5_0 with its - 16).
int WeightAt(Q5Format format, const uint8_t* block, int j) {
  const int base = format == Q5Format::kQ5_1 ? 4 : 2;
  const uint32_t high = (FifthBits(block + base) >> j) & 1;
  const uint8_t byte = block[base + 4 + (j & 15)];
  const int q = (j < 16 ? byte & 15 : byte >> 4) | static_cast<int>(high << 4);
  return format == Q5Format::kQ5_0 ? q - 16 : q;
}

// A Q5 block is a Q8_0 block with small weights (Q5_0: q - 16, Q5_1: q as they are) and the
// same float order: the portable code re-encodes the row as Q8_0 blocks and takes Q8_0's
// portable dot products, then adds Q5_1's m * s terms after the lanes, as ggml does.
void DotRowsScalar(Q5Format format, const uint8_t* w, const Q8Block* x, int64_t blocks, int64_t rows, float* out,
                   int64_t out_stride) {
  const int64_t block_bytes = Q5BlockBytes(format);
  const int64_t q8_bytes = QuantWeightBlockBytes(QuantWeightFormat::kQ8_0);
  thread_local std::vector<uint8_t> q8;
  q8.resize(static_cast<size_t>(blocks * q8_bytes));
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = w + b * block_bytes;
    uint8_t* re = q8.data() + b * q8_bytes;
    re[0] = block[0], re[1] = block[1];
    for (int j = 0; j < 32; ++j) re[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(WeightAt(format, block, j)));
  }
  DotQ8Rows(QuantWeightFormat::kQ8_0, q8.data(), x, blocks, rows, out, out_stride, Q8Isa::kScalar);
  if (format != Q5Format::kQ5_1) return;
  for (int64_t r = 0; r < rows; ++r) {
    float summs = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) summs = std::fma(Half(w + b * block_bytes + 2), x[r * blocks + b].s, summs);
    out[r * out_stride] += summs;
  }
}

// --- AVX2 ---

// The 32 weights of a block as bytes in element order, without Q5_0's - 16: the nibbles
// (low: 0..15, high: 16..31) with bit j of the fifth bits as 16 in byte j.
__attribute__((target("avx2,fma,f16c"))) __m256i Quants(const uint8_t* fifth, const uint8_t* nibbles) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(nibbles));
  const __m256i both = _mm256_insertf128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1);
  const __m256i low = _mm256_and_si256(both, _mm256_set1_epi8(15));
  // Byte b takes byte b / 8 of the bits (each 128-bit half holds all four) and tests bit b % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(FifthBits(fifth))),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_or_si256(low, _mm256_and_si256(set, _mm256_set1_epi8(16)));
}

// F16C's exact conversion (the portable one calls ldexp: too slow once per block and row).
__attribute__((target("avx2,fma,f16c"))) inline float HalfF16c(const uint8_t* p) {
  return _cvtsh_ss(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

__attribute__((target("avx2,fma,f16c"))) float HorizontalSum8(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

__attribute__((target("avx2,fma,f16c"))) void DotRowsAvx2(Q5Format format, const uint8_t* w, const Q8Block* x,
                                                         int64_t blocks, int64_t rows, float* out, int64_t out_stride) {
  constexpr int kGroup = 4;
  const bool q5_1 = format == Q5Format::kQ5_1;
  const int64_t block_bytes = Q5BlockBytes(format);
  const int base = q5_1 ? 4 : 2;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t r = 0; r < rows; r += kGroup) {
    const int group = static_cast<int>(std::min<int64_t>(kGroup, rows - r));
    __m256 acc[kGroup];
    float summs[kGroup];
    for (int i = 0; i < kGroup; ++i) {
      acc[i] = _mm256_setzero_ps();
      summs[i] = 0.0f;
    }
    const uint8_t* block = w;
    for (int64_t b = 0; b < blocks; ++b, block += block_bytes) {
      const float wd = HalfF16c(block);
      const float wm = q5_1 ? HalfF16c(block + 2) : 0.0f;
      __m256i qw = Quants(block + base, block + base + 4);
      // Q5_1's weights are unsigned; Q5_0's signed ones multiply as |w| by sign(w) * x.
      __m256i magnitude = qw;
      if (!q5_1) {
        qw = _mm256_sub_epi8(qw, _mm256_set1_epi8(16));
        magnitude = _mm256_sign_epi8(qw, qw);
      }
      for (int i = 0; i < group; ++i) {
        const Q8Block& xb = x[(r + i) * blocks + b];
        __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.q));
        if (!q5_1) qx = _mm256_sign_epi8(qx, qw);
        const __m256 lanes = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, qx), ones));
        acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(wd * xb.d), lanes, acc[i]);
        if (q5_1) summs[i] = std::fma(wm, xb.s, summs[i]);
      }
    }
    for (int i = 0; i < group; ++i) {
      out[(r + i) * out_stride] = q5_1 ? HorizontalSum8(acc[i]) + summs[i] : HorizontalSum8(acc[i]);
    }
  }
}

}  // namespace

int64_t Q5BlockBytes(Q5Format format) { return format == Q5Format::kQ5_0 ? 22 : 24; }

void DotQ5Rows(Q5Format format, const uint8_t* weight_row, const Q8Block* x, int64_t blocks, int64_t rows, float* out,
               int64_t out_stride, Q8Isa isa) {
  if (isa == Q8Isa::kScalar) return DotRowsScalar(format, weight_row, x, blocks, rows, out, out_stride);
  DotRowsAvx2(format, weight_row, x, blocks, rows, out, out_stride);
}

}  // namespace kiln::builtins
