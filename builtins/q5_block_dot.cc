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

// --- AVX-512 VNNI: 4 weight rows x up to 8 activation rows per pass ---

// GCC 12's AVX-512 intrinsics start from deliberately undefined vectors (`__Y = __Y`), which
// -Wmaybe-uninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define KILN_Q5_VNNI_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

// Weight rows a and b of one block in one vector (a in the low 256 bits).
KILN_Q5_VNNI_TARGET inline __m512i Join(__m256i a, __m256i b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

// The unsigned quants of one block of two weight rows (Quants' bytes; a in the low 256
// bits): the nibbles, then 16 added where the fifth bit, read as a 64-bit mask, is set.
KILN_Q5_VNNI_TARGET inline __m512i QuantsOfTwo(const uint8_t* fifth_a, const uint8_t* fifth_b) {
  const __m128i raw_a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(fifth_a + 4));
  const __m128i raw_b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(fifth_b + 4));
  const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(raw_a), _mm_srli_epi16(raw_a, 4), 1);
  const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(raw_b), _mm_srli_epi16(raw_b, 4), 1);
  const __m512i nibbles = _mm512_and_si512(Join(a, b), _mm512_set1_epi8(15));
  const __mmask64 fifth = _cvtu64_mask64(uint64_t{FifthBits(fifth_a)} | uint64_t{FifthBits(fifth_b)} << 32);
  return _mm512_mask_add_epi8(nibbles, fifth, nibbles, _mm512_set1_epi8(16));
}

KILN_Q5_VNNI_TARGET inline __m512 JoinScales(float a, float b) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_set1_ps(a))),
                                             _mm256_castps_pd(_mm256_set1_ps(b)), 1));
}

// R activation rows against weight rows w[0..3]: each (weight row, activation row) pair
// keeps DotRowsAvx2's 8 float lanes (one half of a 512-bit accumulator), fed per block with
// the same exact integer lane sums (vpdpbusd of the unsigned quants with the activations,
// Q5_0's - 16 taken as 16 times the lane's activation sum, subtracted inside the integer
// sum) and the same fused multiply-add by float(weight d * activation d).
template <int R>
KILN_Q5_VNNI_TARGET void DotTileVnni(bool q5_1, const uint8_t* w, int64_t row_bytes, const Q8Block* x, int64_t blocks,
                                     float* out, int64_t out_stride) {
  const int base = q5_1 ? 4 : 2;
  const int64_t block_bytes = q5_1 ? 24 : 22;
  __m512 acc[R][2];
  float summs[R][4];
  for (int r = 0; r < R; ++r) {
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int j = 0; j < 4; ++j) summs[r][j] = 0.0f;
  }
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block[4];
    float wd[4], wm[4];
    for (int j = 0; j < 4; ++j) {
      block[j] = w + j * row_bytes + b * block_bytes;
      wd[j] = HalfF16c(block[j]);
      wm[j] = q5_1 ? HalfF16c(block[j] + 2) : 0.0f;
    }
    const __m512i w01 = QuantsOfTwo(block[0] + base, block[1] + base);
    const __m512i w23 = QuantsOfTwo(block[2] + base, block[3] + base);
    const __m512 d01 = JoinScales(wd[0], wd[1]), d23 = JoinScales(wd[2], wd[3]);
    for (int r = 0; r < R; ++r) {
      const Q8Block& xb = x[r * blocks + b];
      const __m512i qx = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.q)));
      // Q5_0: start each lane's integer sum at -16 times its activations' sum.
      const __m512i start =
          q5_1 ? _mm512_setzero_si512()
               : _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), sixteen, qx));
      const __m512 xd = _mm512_set1_ps(xb.d);
      acc[r][0] = _mm512_fmadd_ps(_mm512_mul_ps(d01, xd), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, w01, qx)), acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(_mm512_mul_ps(d23, xd), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, w23, qx)), acc[r][1]);
      if (q5_1) {
        for (int j = 0; j < 4; ++j) summs[r][j] = std::fma(wm[j], xb.s, summs[r][j]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < 4; ++j) {
      const __m512d v = _mm512_castps_pd(acc[r][j / 2]);
      const __m256 lanes = _mm256_castpd_ps(j % 2 == 0 ? _mm512_castpd512_pd256(v) : _mm512_extractf64x4_pd(v, 1));
      const float sum = HorizontalSum8(lanes);
      out[r * out_stride + j] = q5_1 ? sum + summs[r][j] : sum;
    }
  }
}

KILN_Q5_VNNI_TARGET void DotTileVnniRows(bool q5_1, const uint8_t* w, int64_t row_bytes, const Q8Block* x,
                                         int64_t blocks, int64_t rows, float* out, int64_t out_stride) {
  constexpr int kRows = 8;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    DotTileVnni<kRows>(q5_1, w, row_bytes, x + r * blocks, blocks, out + r * out_stride, out_stride);
  }
  const Q8Block* xr = x + r * blocks;
  float* o = out + r * out_stride;
  switch (rows - r) {
    case 0: return;
    case 1: return DotTileVnni<1>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
    case 2: return DotTileVnni<2>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
    case 3: return DotTileVnni<3>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
    case 4: return DotTileVnni<4>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
    case 5: return DotTileVnni<5>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
    case 6: return DotTileVnni<6>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
    default: return DotTileVnni<7>(q5_1, w, row_bytes, xr, blocks, o, out_stride);
  }
}

#pragma GCC diagnostic pop
#undef KILN_Q5_VNNI_TARGET

}  // namespace

int64_t Q5BlockBytes(Q5Format format) { return format == Q5Format::kQ5_0 ? 22 : 24; }

void DotQ5Rows(Q5Format format, const uint8_t* weight_row, const Q8Block* x, int64_t blocks, int64_t rows, float* out,
               int64_t out_stride, Q8Isa isa) {
  if (isa == Q8Isa::kScalar) return DotRowsScalar(format, weight_row, x, blocks, rows, out, out_stride);
  DotRowsAvx2(format, weight_row, x, blocks, rows, out, out_stride);
}

void DotQ5Tile(Q5Format format, const uint8_t* weights, int64_t weight_rows, int64_t row_bytes, const Q8Block* x,
               int64_t blocks, int64_t rows, float* out, int64_t out_stride, Q8Isa isa) {
  int64_t i = 0;
  if (isa == Q8Isa::kAvx512Vnni) {
    for (; i + 4 <= weight_rows; i += 4) {
      DotTileVnniRows(format == Q5Format::kQ5_1, weights + i * row_bytes, row_bytes, x, blocks, rows, out + i, out_stride);
    }
  }
  for (; i < weight_rows; ++i) DotQ5Rows(format, weights + i * row_bytes, x, blocks, rows, out + i, out_stride, isa);
}

}  // namespace kiln::builtins
