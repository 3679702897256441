#include "builtins/paged_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/ggml_simd.h"
#include "builtins/paged_kv_cache.h"
#include "support/float16.h"
#include "vm/device.h"
#include "vm/dtype.h"
#include "vm/thread_pool.h"

namespace kiln::builtins {

// llama.cpp's attention arithmetic for the float16 cache, compiled for AVX2+FMA+F16C and for
// the baseline (identical results; ggml_attention_math.inc says why).
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace ggml_avx2 {
#define KILN_HALF_TO_FLOAT(h) _cvtsh_ss(h)
#define KILN_FLOAT_TO_HALF(f) _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)
#include "builtins/ggml_attention_math.inc"
#undef KILN_HALF_TO_FLOAT
#undef KILN_FLOAT_TO_HALF

// Vectors of eight elements summed lane by lane in the order of Tree16 / Tree8 / Hadd8.
static inline __m256 Tree16Vectors(const __m256* v) {
  __m256 t3[8], t6[4];
  for (int l = 0; l < 8; ++l) t3[l] = _mm256_add_ps(v[l + 8], v[l]);
  for (int l = 0; l < 4; ++l) t6[l] = _mm256_add_ps(t3[l + 4], t3[l]);
  return _mm256_add_ps(_mm256_add_ps(t6[0], t6[2]), _mm256_add_ps(t6[1], t6[3]));
}

static inline __m256 Tree8Vectors(const __m256* v) {
  __m256 t[4];
  for (int l = 0; l < 4; ++l) t[l] = _mm256_add_ps(v[l + 4], v[l]);
  return _mm256_add_ps(_mm256_add_ps(t[0], t[2]), _mm256_add_ps(t[1], t[3]));
}

static inline __m256 Hadd8Vectors(const __m256* v) {
  __m256 t[4];
  for (int l = 0; l < 4; ++l) t[l] = _mm256_add_ps(v[l], v[l + 4]);
  return _mm256_add_ps(_mm256_add_ps(t[0], t[1]), _mm256_add_ps(t[2], t[3]));
}

// The lanes of one vector summed as Tree8 (which is also Tree16's end, after its halves).
static inline float Tree8Of(__m256 v) {
  __m128 t = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  t = _mm_add_ps(t, _mm_movehl_ps(t, t));
  t = _mm_add_ss(t, _mm_movehdup_ps(t));
  return _mm_cvtss_f32(t);
}

// Elements i..i+7 of class c's chains, zeros for a class past `used`.
static inline __m256 ClassAt(const float* acc, int64_t d, int64_t used, int64_t c, int64_t i) {
  return c < used ? _mm256_loadu_ps(acc + c * d + i) : _mm256_setzero_ps();
}

// ReduceClasses for eight elements at a time (the same additions per element).
template <int kLanes>
static void ReduceClassesVector(const float* acc, int64_t d, int64_t used, float* out) {
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 lanes[kLanes];
#pragma GCC unroll 16
    for (int l = 0; l < kLanes; ++l) {
      lanes[l] = _mm256_add_ps(_mm256_add_ps(ClassAt(acc, d, used, l, i), ClassAt(acc, d, used, 2 * kLanes + l, i)),
                               _mm256_add_ps(ClassAt(acc, d, used, kLanes + l, i), ClassAt(acc, d, used, 3 * kLanes + l, i)));
    }
    _mm256_storeu_ps(out + i, kLanes == 16 ? Tree16Vectors(lanes) : Hadd8Vectors(lanes));
  }
  ReduceClasses<kLanes>(acc, d, used, out, i);
}

// DotF16Ggml with the chains in vectors of 8 (chains 8v..8v+7 in vector v), the same
// operations in the same order, so the same bits.
template <int kLanes>
static float DotF16GgmlVector(const uint16_t* a, const uint16_t* b, int64_t n) {
  constexpr int kVectors = kLanes / 2;  // 4 kLanes chains
  const int64_t np = n & ~int64_t{4 * kLanes - 1};
  __m256 acc[kVectors];
  for (__m256& v : acc) v = _mm256_setzero_ps();
  for (int64_t i = 0; i < np; i += 4 * kLanes) {
    for (int v = 0; v < kVectors; ++v) {
      const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8 * v)));
      const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 8 * v)));
      acc[v] = _mm256_fmadd_ps(x, y, acc[v]);
    }
  }
  float sum_of_lanes;
  if constexpr (kLanes == 16) {
    // lanes 0..7 = (c + c+32) + (c+16 + c+48) for c in 0..7, lanes 8..15 the same for 8..15;
    // Tree16 adds the two halves first, then Tree8.
    const __m256 low = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
    const __m256 high = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
    sum_of_lanes = Tree8Of(_mm256_add_ps(high, low));
  } else {
    // lane l = (c_l + c_16+l) + (c_8+l + c_24+l), then Hadd8.
    const __m256 lanes = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(lanes), _mm256_extractf128_ps(lanes, 1));
    t = _mm_hadd_ps(t, t);
    t = _mm_hadd_ps(t, t);
    sum_of_lanes = _mm_cvtss_f32(t);
  }
  double sum = sum_of_lanes;
  for (int64_t i = np; i < n; ++i) sum += static_cast<double>(_cvtsh_ss(a[i]) * _cvtsh_ss(b[i]));
  return static_cast<float>(sum);
}

// DotF16TinyBlas with its lanes in vectors of 8: the same chains, the same LaneSum.
template <int kLanes>
static float DotF16TinyBlasVector(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += kLanes) {
    const __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    low = _mm256_fmadd_ps(a0, b0, low);
    if constexpr (kLanes == 16) {
      const __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8)));
      const __m256 b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 8)));
      high = _mm256_fmadd_ps(a1, b1, high);
    }
  }
  return Tree8Of(kLanes == 16 ? _mm256_add_ps(high, low) : low);
}

// ReduceClassesTinyBlas for eight elements at a time (the same additions per element).
template <int kLanes>
static void ReduceClassesTinyBlasVector(const float* acc, int64_t d, int64_t used, float* out) {
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 lanes[kLanes];
#pragma GCC unroll 16
    for (int l = 0; l < kLanes; ++l) lanes[l] = ClassAt(acc, d, used, l, i);
    _mm256_storeu_ps(out + i, kLanes == 16 ? Tree16Vectors(lanes) : Tree8Vectors(lanes));
  }
  ReduceClassesTinyBlas<kLanes>(acc, d, used, out, i);
}

// AccumulateValue, eight elements per instruction (each element its own chain, as before).
static void AccumulateValueVector(float p, const uint16_t* value, int64_t d, float* acc_class) {
  const __m256 weight = _mm256_set1_ps(p);
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(value + i)));
    _mm256_storeu_ps(acc_class + i, _mm256_fmadd_ps(weight, v, _mm256_loadu_ps(acc_class + i)));
  }
  for (; i < d; ++i) acc_class[i] = std::fma(p, _cvtsh_ss(value[i]), acc_class[i]);
}

#include "builtins/ggml_expf_avx2.inc"

// --- Whole rows at once: the same per-element operations as above, in vectors. ---

// The first step of LaneSums8: [a's four sums of halves | b's four sums of halves].
static inline __m256 SumHalvesOfTwo(__m256 a, __m256 b) {
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

// The second: of each four sums t, (t0 + t2, t1 + t3), or with kNeighbours (t0 + t1, t2 + t3):
// [a's low pair, b's low pair | a's high pair, b's high pair] for a, b from SumHalvesOfTwo.
template <bool kNeighbours>
static inline __m256 SumQuartersOfFour(__m256 a, __m256 b) {
  if constexpr (kNeighbours) {
    return _mm256_add_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  } else {
    return _mm256_add_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
}

// Eight lane sums at once: lane j of the result is v[j]'s eight lanes summed as Tree8 (halves,
// then (0+2) and (1+3), then the pair), or with kNeighbours as Hadd8 (halves, then (0+1) and
// (2+3), then the pair). Each sum is its own additions in its own order: the shuffles only
// move lanes.
template <bool kNeighbours>
static inline __m256 LaneSums8(const __m256* v) {
  const __m256 h04 = SumHalvesOfTwo(v[0], v[4]), h15 = SumHalvesOfTwo(v[1], v[5]);
  const __m256 h26 = SumHalvesOfTwo(v[2], v[6]), h37 = SumHalvesOfTwo(v[3], v[7]);
  // [v0's pair, v1's pair | v4's pair, v5's pair] and [v2, v3 | v6, v7].
  const __m256 s01 = SumQuartersOfFour<kNeighbours>(h04, h15), s23 = SumQuartersOfFour<kNeighbours>(h26, h37);
  return _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// q . key (floats, d elements) up to its last step: the vector whose lane sum (LaneSums8,
// kNeighbours for ggml_vec_dot_f16's AVX2 build) is the product in the order of
// DotF16TinyBlas (d a multiple of kLanes) or of DotF16Ggml (d a multiple of 4 kLanes, so no
// float64 tail).
template <int kLanes, bool kTinyBlas>
static inline __m256 DotPartials(const float* q, const float* key, int64_t d) {
  if constexpr (kTinyBlas) {
    __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
    for (int64_t i = 0; i < d; i += kLanes) {
      low = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(key + i), low);
      if constexpr (kLanes == 16) high = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(key + i + 8), high);
    }
    return kLanes == 16 ? _mm256_add_ps(high, low) : low;
  } else {
    constexpr int kVectors = kLanes / 2;
    __m256 acc[kVectors];
#pragma GCC unroll 8
    for (__m256& v : acc) v = _mm256_setzero_ps();
    for (int64_t i = 0; i < d; i += 4 * kLanes) {
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8 * v), _mm256_loadu_ps(key + i + 8 * v), acc[v]);
    }
    if constexpr (kLanes == 16) {
      // Lanes 0..7 of the 16 and lanes 8..15 (DotF16GgmlVector), then Tree16's halves.
      const __m256 low = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
      const __m256 high = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
      return _mm256_add_ps(high, low);
    } else {
      return _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
    }
  }
}

// Rounds n floats (a multiple of 8) to float16 and back.
static inline void RoundToHalf(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT)));
  }
}

// n float16 values (a multiple of 8) to floats.
static inline void HalfToFloats(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
}

// scores[r * stride + p] = scale * (q row r . key p) for `rows` q rows of d floats (already
// rounded to float16) and positions 0..length-1 (keys[p], float16), in tinyBLAS's or
// ggml_vec_dot_f16's order (d a multiple of 8 and as DotPartials wants). Eight positions at a
// time: their keys converted once for all rows, their eight lane sums taken together.
// `block` holds 8 d floats.
template <int kLanes, bool kTinyBlas>
static void ScoreRows(const float* q, int64_t rows, int64_t d, const uint16_t* const* keys, int64_t length, float scale,
                      float* scores, int64_t stride, float* block) {
  constexpr bool kNeighbours = !kTinyBlas && kLanes == 8;
  const __m256 scale_vector = _mm256_set1_ps(scale);
  for (int64_t p0 = 0; p0 < length; p0 += 8) {
    const int64_t m = std::min<int64_t>(8, length - p0);
    for (int64_t j = 0; j < m; ++j) HalfToFloats(keys[p0 + j], block + j * d, d);
    for (int64_t j = m; j < 8; ++j) std::fill_n(block + j * d, d, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      __m256 partials[8];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) partials[j] = DotPartials<kLanes, kTinyBlas>(q + r * d, block + j * d, d);
      const __m256 s = _mm256_mul_ps(LaneSums8<kNeighbours>(partials), scale_vector);
      float* out = scores + r * stride + p0;
      if (m == 8) {
        _mm256_storeu_ps(out, s);
      } else {
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, s);
        std::copy_n(lanes, m, out);
      }
    }
  }
}

// row[at..at+8) = exp(row - max) with the build's exp, zero from position n on; returns them.
template <int kLanes>
static inline __m256 ExpsBelowMax(float* row, int64_t at, int64_t n, float max) {
  const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(row + at), _mm256_set1_ps(max));
  const __m256 e = kLanes == 16 ? GgmlExpfVector(x) : GgmlExpfAvx2BuildVector(x);
  const __m256 position = _mm256_add_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(static_cast<float>(at)));
  const __m256 kept = _mm256_and_ps(e, _mm256_cmp_ps(position, _mm256_set1_ps(static_cast<float>(n)), _CMP_LT_OQ));
  _mm256_storeu_ps(row + at, kept);
  return kept;
}

// SoftmaxToHalfPrecision over eight positions at a time. `row` has room for n rounded up to
// a multiple of 16; the positions past n are left as zeros.
template <int kLanes>
static void SoftmaxToHalfPrecisionVector(float* row, int64_t n) {
  const int64_t padded = (n + 15) / 16 * 16;
  // The maximum: exact whatever the order (a NaN score never becomes it, as in the scalar
  // std::max; the sign of a zero maximum changes no exp below).
  __m256 max_vector = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) max_vector = _mm256_max_ps(_mm256_loadu_ps(row + p), max_vector);
  alignas(32) float lane_max[8];
  _mm256_store_ps(lane_max, max_vector);
  float max = -std::numeric_limits<float>::infinity();
  for (float m : lane_max) max = std::max(max, m);
  for (; p < n; ++p) max = std::max(max, row[p]);
  // exp(x - max) per 8, zero past n, each group of kLanes positions summed by LaneSum into
  // float64 in order.
  for (int64_t i = n; i < padded; ++i) row[i] = 0.0f;
  double sum = 0;
  for (int64_t g = 0; g < n; g += kLanes) {
    const __m256 low = ExpsBelowMax<kLanes>(row, g, n, max);
    sum += Tree8Of(kLanes == 16 ? _mm256_add_ps(ExpsBelowMax<kLanes>(row, g + 8, n, max), low) : low);
  }
  const __m256 inverse = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(row + i), inverse);
    _mm256_storeu_ps(row + i, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
  }
}

// One class's chains for kRows rows of probabilities and 8 kVectors elements from element i:
// acc_r[i..] = the fused multiply-add chain of probability_r[p] * value p[i..] over the
// positions p = c, c + classes, ... below length, from zero, held in registers.
template <int kRows, int kVectors>
static inline void AccumulateClass(const float* probabilities, int64_t stride, const uint16_t* const* values, int64_t c,
                                   int64_t classes, int64_t length, int64_t i, float* const* acc) {
  __m256 sums[kRows][kVectors];
#pragma GCC unroll 4
  for (auto& row : sums) {
#pragma GCC unroll 4
    for (__m256& v : row) v = _mm256_setzero_ps();
  }
  for (int64_t p = c; p < length; p += classes) {
    __m256 value[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      value[v] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values[p] + i + 8 * v)));
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m256 w = _mm256_broadcast_ss(probabilities + r * stride + p);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm256_fmadd_ps(w, value[v], sums[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(acc[r] + i + 8 * v, sums[r][v]);
  }
}

template <int kRows>
static void AccumulateClassRows(const float* probabilities, int64_t stride, const uint16_t* const* values, int64_t c,
                                int64_t classes, int64_t length, int64_t d, float* const* acc) {
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) AccumulateClass<kRows, 4>(probabilities, stride, values, c, classes, length, i, acc);
  for (; i < d; i += 8) AccumulateClass<kRows, 1>(probabilities, stride, values, c, classes, length, i, acc);
}

// The value product's chains: for each of `rows` rows of probabilities (row r at
// probabilities + r * stride) and each class c below min(classes, length), acc[(r * classes
// + c) * d + i] = the fused multiply-add chain of probability[p] * value p[i] over the
// positions p = c, c + classes, ... in order, from zero: what AccumulateValue builds position
// by position, here one class at a time with the chains in registers (values[p] float16, d a
// multiple of 8).
static void AccumulateValues(const float* probabilities, int64_t rows, int64_t stride, const uint16_t* const* values,
                             int64_t length, int64_t d, int64_t classes, float* acc) {
  const int64_t used = std::min(classes, length);
  for (int64_t c = 0; c < used; ++c) {
    for (int64_t r0 = 0; r0 < rows; r0 += 3) {
      float* class_acc[3];
      for (int64_t r = r0; r < std::min(rows, r0 + 3); ++r) class_acc[r - r0] = acc + (r * classes + c) * d;
      const float* first = probabilities + r0 * stride;
      switch (std::min<int64_t>(3, rows - r0)) {
        case 3: AccumulateClassRows<3>(first, stride, values, c, classes, length, d, class_acc); break;
        case 2: AccumulateClassRows<2>(first, stride, values, c, classes, length, d, class_acc); break;
        default: AccumulateClassRows<1>(first, stride, values, c, classes, length, d, class_acc); break;
      }
    }
  }
}
}  // namespace ggml_avx2
#pragma GCC pop_options

namespace ggml_portable {
#define KILN_HALF_TO_FLOAT(h) support::HalfToFloat(h)
#define KILN_FLOAT_TO_HALF(f) support::FloatToHalf(f)
#include "builtins/ggml_attention_math.inc"
#undef KILN_HALF_TO_FLOAT
#undef KILN_FLOAT_TO_HALF
}  // namespace ggml_portable

namespace {

using vm::BuiltinContext;
using vm::Tensor;
using vm::Value;

using support::FloatToHalf;

// --- the float32 cache's inner loops: dot(q, key) and out += w * value over head_dim. ---

float DotF32(const float* q, const float* k, int64_t d) {
  float s = 0;
  for (int64_t i = 0; i < d; ++i) s += q[i] * k[i];
  return s;
}

void AxpyF32(float w, const float* v, float* out, int64_t d) {
  for (int64_t i = 0; i < d; ++i) out[i] += w * v[i];
}

std::atomic<bool> force_portable{false};

bool HasAvx2F16c() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has && !force_portable.load(std::memory_order_relaxed);
}

absl::Status Error(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("kiln.kv_cache.attention: ", what));
}

absl::Status CheckTensor(const Tensor& t, const char* name, int64_t n, int64_t heads, int64_t d) {
  if (!vm::operator==(t.dtype(), vm::DTypeFloat32()) || !t.strides().empty()) {
    return Error(absl::StrCat(name, " must be a contiguous float32 tensor, got ", t.Describe()));
  }
  if (t.shape() != std::vector<int64_t>{n, heads, d}) {
    return Error(absl::StrCat(name, " must have shape [", n, ", ", heads, ", ", d, "], got ", t.Describe()));
  }
  return absl::OkStatus();
}

// `t` in host memory: itself, or a copy of a tensor on a GPU.
absl::StatusOr<Tensor> OnHost(const Tensor& t) {
  if (t.device().device_type == kDLCPU) return t;
  return t.CopyTo(vm::CpuDevice());
}

struct AttentionJob {
  PagedKvCache* cache;
  int64_t layer;
  const float* q;
  float* out;
  int64_t q_heads, kv_heads, d;
  float scale;
  // Split attention (float16 cache; `parts` > 1): each (token, kv head) is done in `parts`
  // tasks twice over, first its scores over position ranges into `scores` (a block of
  // `scores_block` floats per (token, kv head)), the last range to finish running the
  // softmax, then its output over element ranges. Every score, probability and output
  // element is computed by the same operations as unsplit, so the bits do not depend on the
  // split (llama.cpp's threads likewise split its score matmul by positions and its value
  // matmul by elements).
  int64_t parts = 1;
  float* scores = nullptr;
  int64_t scores_block = 0;
  std::atomic<int64_t>* ranges_done = nullptr;  // per (token, kv head)
};

// Splitting pays where the (token, kv head) pairs are fewer than would keep every thread busy
// (a decode step: one per kv head) and each has enough positions to share (below, the second
// pool round trip costs more than the imbalance).
constexpr int64_t kSplitMinLength = 256;
std::atomic<int> parts_for_testing{0};

// scores[r * stride + p] = scale * (q row r . key p) for `rows` q rows (float32, rounded to
// float16 here) and positions 0..length-1 (keys[p], float16), as llama.cpp's build with
// kLanes lanes computes them: ggml_vec_dot_f16's order, or tinyBLAS's (d a multiple of kLanes).
template <bool kAvx2, int kLanes>
void ScoresF16(const float* q, int64_t rows, int64_t d, const uint16_t* const* keys, int64_t length, float scale,
               bool tiny_blas, float* scores, int64_t stride) {
  thread_local std::vector<float> q_float, block;
  thread_local std::vector<uint16_t> q_half;
  if (kAvx2 && d % 8 == 0 && (tiny_blas || d % (4 * kLanes) == 0)) {
    q_float.resize(static_cast<size_t>(rows * d));
    block.resize(static_cast<size_t>(8 * d));
    ggml_avx2::RoundToHalf(q, q_float.data(), rows * d);
    if (tiny_blas) {
      ggml_avx2::ScoreRows<kLanes, true>(q_float.data(), rows, d, keys, length, scale, scores, stride, block.data());
    } else {
      ggml_avx2::ScoreRows<kLanes, false>(q_float.data(), rows, d, keys, length, scale, scores, stride, block.data());
    }
    return;
  }
  // Other head sizes (and CPUs without AVX2): one product at a time, the float64 tail included.
  q_half.resize(static_cast<size_t>(rows * d));
  for (int64_t i = 0; i < rows * d; ++i) q_half[static_cast<size_t>(i)] = FloatToHalf(q[i]);
  for (int64_t p = 0; p < length; ++p) {
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* q_row = q_half.data() + r * d;
      float s;
      if (tiny_blas) {
        s = kAvx2 ? ggml_avx2::DotF16TinyBlasVector<kLanes>(q_row, keys[p], d)
                  : ggml_portable::DotF16TinyBlas<kLanes>(q_row, keys[p], d);
      } else {
        s = kAvx2 ? ggml_avx2::DotF16GgmlVector<kLanes>(q_row, keys[p], d)
                  : ggml_portable::DotF16Ggml<kLanes>(q_row, keys[p], d);
      }
      scores[r * stride + p] = s * scale;
    }
  }
}

// One (token, kv head) of the step with a float16 cache, and how llama.cpp computes it.
struct HeadF16 {
  int64_t t, g, group, length, stride;
  bool tiny_blas_scores, tiny_blas_values;
  const std::vector<int32_t>* pages;
};

template <int kLanes>
HeadF16 DescribeHeadF16(const AttentionJob& job, int64_t head) {
  const PagedKvCache& cache = *job.cache;
  HeadF16 h;
  h.t = head / job.kv_heads;
  h.g = head % job.kv_heads;
  h.group = job.q_heads / job.kv_heads;
  const PagedKvCache::StepToken& token = cache.step_tokens()[static_cast<size_t>(h.t)];
  const PagedKvCache::StepSequence& sequence = cache.step_sequences()[static_cast<size_t>(token.sequence)];
  h.pages = sequence.pages;
  h.length = token.position + 1;
  // Each row of scores padded to a multiple of 16 positions (the vector softmax's groups).
  h.stride = (h.length + 15) / 16 * 16;
  // A sequence bringing two or more tokens to the step is a batch: llama.cpp computes its
  // float16 attention products with tinyBLAS, a single token's with ggml_vec_dot_f16 (another
  // summation order). Decided per sequence, so a sequence's logits never depend on the others
  // in the step. tinyBLAS takes a product only when its length is a multiple of kLanes and
  // its row count a multiple of 4: the scores' length is head_dim (their rows, the cache's padded
  // length, a multiple of 256), the value product's rows are head_dim (its length, the padded
  // length).
  const bool batch = sequence.count >= 2;
  h.tiny_blas_scores = batch && job.d % kLanes == 0;
  h.tiny_blas_values = batch && job.d % 4 == 0;
  return h;
}

// scores[r * h.stride + p] for positions [begin, end): the scaled q . key products.
template <bool kAvx2, int kLanes>
void ScoreRangeF16(const AttentionJob& job, const HeadF16& h, int64_t begin, int64_t end, float* scores) {
  PagedKvCache& cache = *job.cache;
  const int64_t page_size = cache.config().page_size;
  thread_local std::vector<const uint16_t*> keys;
  keys.resize(static_cast<size_t>(end - begin));
  for (int64_t p = begin; p < end; ++p) {
    const int32_t page = (*h.pages)[static_cast<size_t>(p / page_size)];
    keys[static_cast<size_t>(p - begin)] =
        reinterpret_cast<const uint16_t*>(cache.KeyAt(job.layer, page, h.g, p % page_size));
  }
  ScoresF16<kAvx2, kLanes>(job.q + (h.t * job.q_heads + h.g * h.group) * job.d, h.group, job.d, keys.data(), end - begin,
                           job.scale, h.tiny_blas_scores, scores + begin, h.stride);
}

// Each row of scores (h.group rows of h.stride) replaced by its probabilities, float16-rounded.
template <bool kAvx2, int kLanes>
void SoftmaxRowsF16(const HeadF16& h, float* scores) {
  for (int64_t r = 0; r < h.group; ++r) {
    float* row = scores + r * h.stride;
    kAvx2 ? ggml_avx2::SoftmaxToHalfPrecisionVector<kLanes>(row, h.length)
          : ggml_portable::SoftmaxToHalfPrecision<kLanes>(row, h.length);
  }
}

// Output elements [begin, end) of the head's q rows: the float16 dot products of the
// probabilities with those elements' values over the positions.
template <bool kAvx2, int kLanes>
void OutputRangeF16(const AttentionJob& job, const HeadF16& h, const float* probabilities, int64_t begin, int64_t end) {
  PagedKvCache& cache = *job.cache;
  const int64_t page_size = cache.config().page_size;
  const int64_t width = end - begin;
  thread_local std::vector<float> classes;
  thread_local std::vector<const uint16_t*> values;
  values.resize(static_cast<size_t>(h.length));
  for (int64_t p = 0; p < h.length; ++p) {
    const int32_t page = (*h.pages)[static_cast<size_t>(p / page_size)];
    values[static_cast<size_t>(p)] =
        reinterpret_cast<const uint16_t*>(cache.ValueAt(job.layer, page, h.g, p % page_size)) + begin;
  }
  // Classes (positions mod 4 kLanes, ggml_vec_dot_f16's chains, or mod kLanes, tinyBLAS's
  // lanes) that hold a position; the reduction reads the others as zeros.
  const int64_t class_count = h.tiny_blas_values ? kLanes : 4 * kLanes;
  const int64_t used = std::min<int64_t>(h.length, class_count);
  classes.resize(static_cast<size_t>(h.group * class_count * width));
  // Rows of whole vectors take the AVX2 row functions; other head sizes the per-element ones.
  if (kAvx2 && job.d % 8 == 0) {
    ggml_avx2::AccumulateValues(probabilities, h.group, h.stride, values.data(), h.length, width, class_count,
                                classes.data());
  } else {
    for (int64_t r = 0; r < h.group; ++r) std::fill_n(classes.data() + r * class_count * width, used * width, 0.0f);
    for (int64_t p = 0; p < h.length; ++p) {
      const uint16_t* value = values[static_cast<size_t>(p)];
      for (int64_t r = 0; r < h.group; ++r) {
        float* acc = classes.data() + (r * class_count + p % class_count) * width;
        const float w = probabilities[static_cast<size_t>(r * h.stride + p)];
        kAvx2 ? ggml_avx2::AccumulateValueVector(w, value, width, acc)
              : ggml_portable::AccumulateValue(w, value, width, acc);
      }
    }
  }
  for (int64_t r = 0; r < h.group; ++r) {
    float* out = job.out + (h.t * job.q_heads + h.g * h.group + r) * job.d + begin;
    const float* acc = classes.data() + r * class_count * width;
    if (h.tiny_blas_values) {
      kAvx2 ? ggml_avx2::ReduceClassesTinyBlasVector<kLanes>(acc, width, used, out)
            : ggml_portable::ReduceClassesTinyBlas<kLanes>(acc, width, used, out);
    } else {
      kAvx2 ? ggml_avx2::ReduceClassesVector<kLanes>(acc, width, used, out)
            : ggml_portable::ReduceClasses<kLanes>(acc, width, used, out);
    }
  }
}

// Range `part` of `parts` over [0, n), in multiples of `align` (possibly empty).
void PartRange(int64_t n, int64_t part, int64_t parts, int64_t align, int64_t* begin, int64_t* end) {
  const int64_t size = ((n + parts - 1) / parts + align - 1) / align * align;
  *begin = std::min(n, part * size);
  *end = std::min(n, *begin + size);
}

// One (token, kv head) with a float16 cache, computed as llama.cpp computes it: q rounded to
// float16, q . k as ggml_vec_dot_f16, softmax as ggml_vec_soft_max_f32 with ggml's exp, the
// probabilities rounded to float16, and each output element the float16 dot product of the
// probabilities with that element's values over the positions (ggml_attention_math.inc),
// in the orders of llama.cpp's AVX-512 build (kLanes = 16) or AVX2 build (8).
template <bool kAvx2, int kLanes>
int32_t AttentionTaskF16(int64_t task, int64_t, void* closure) {
  const AttentionJob& job = *static_cast<const AttentionJob*>(closure);
  const HeadF16 h = DescribeHeadF16<kLanes>(job, task);
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(h.group * h.stride));
  ScoreRangeF16<kAvx2, kLanes>(job, h, 0, h.length, scores.data());
  SoftmaxRowsF16<kAvx2, kLanes>(h, scores.data());
  OutputRangeF16<kAvx2, kLanes>(job, h, scores.data(), 0, job.d);
  return 0;
}

// Split attention, first round: positions range task % parts of (token, kv head) task /
// parts; the last range of a head to finish turns its scores into probabilities.
template <bool kAvx2, int kLanes>
int32_t ScoreTaskF16(int64_t task, int64_t, void* closure) {
  const AttentionJob& job = *static_cast<const AttentionJob*>(closure);
  const int64_t head = task / job.parts;
  const HeadF16 h = DescribeHeadF16<kLanes>(job, head);
  float* scores = job.scores + head * job.scores_block;
  int64_t begin, end;
  PartRange(h.length, task % job.parts, job.parts, 8, &begin, &end);
  if (begin < end) ScoreRangeF16<kAvx2, kLanes>(job, h, begin, end, scores);
  // acq_rel: the last range sees the others' scores (written before their increments).
  if (job.ranges_done[head].fetch_add(1, std::memory_order_acq_rel) == job.parts - 1) {
    SoftmaxRowsF16<kAvx2, kLanes>(h, scores);
  }
  return 0;
}

// Split attention, second round: output elements range task % parts of (token, kv head)
// task / parts (in multiples of 8, the vector code's rows).
template <bool kAvx2, int kLanes>
int32_t OutputTaskF16(int64_t task, int64_t, void* closure) {
  const AttentionJob& job = *static_cast<const AttentionJob*>(closure);
  const int64_t head = task / job.parts;
  const HeadF16 h = DescribeHeadF16<kLanes>(job, head);
  int64_t begin, end;
  PartRange(job.d, task % job.parts, job.parts, 8, &begin, &end);
  if (begin < end) OutputRangeF16<kAvx2, kLanes>(job, h, job.scores + head * job.scores_block, begin, end);
  return 0;
}

// The float32 cache (on request): plain float32 arithmetic, closer to the exact result.
int32_t AttentionTask(int64_t task, int64_t, void* closure) {
  const AttentionJob& job = *static_cast<const AttentionJob*>(closure);
  PagedKvCache& cache = *job.cache;
  const int64_t t = task / job.kv_heads;
  const int64_t g = task % job.kv_heads;
  const int64_t group = job.q_heads / job.kv_heads;
  const PagedKvCache::StepToken& token = cache.step_tokens()[static_cast<size_t>(t)];
  const std::vector<int32_t>& pages = *cache.step_sequences()[static_cast<size_t>(token.sequence)].pages;
  const int64_t length = token.position + 1;
  const int64_t page_size = cache.config().page_size;
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(group * length));
  // Scores of every q head of the group against every key, read once.
  for (int64_t p = 0; p < length; ++p) {
    const uint8_t* key = cache.KeyAt(job.layer, pages[static_cast<size_t>(p / page_size)], g, p % page_size);
    for (int64_t r = 0; r < group; ++r) {
      const float* q = job.q + (t * job.q_heads + g * group + r) * job.d;
      const float s = DotF32(q, reinterpret_cast<const float*>(key), job.d);
      scores[static_cast<size_t>(r * length + p)] = s * job.scale;
    }
  }
  for (int64_t r = 0; r < group; ++r) {
    float* row = scores.data() + r * length;
    float max = row[0];
    for (int64_t p = 1; p < length; ++p) max = std::max(max, row[p]);
    float sum = 0;
    for (int64_t p = 0; p < length; ++p) {
      row[p] = std::exp(row[p] - max);
      sum += row[p];
    }
    const float inv = 1.0f / sum;
    for (int64_t p = 0; p < length; ++p) row[p] *= inv;
    float* out = job.out + (t * job.q_heads + g * group + r) * job.d;
    std::fill(out, out + job.d, 0.0f);
  }
  for (int64_t p = 0; p < length; ++p) {
    const uint8_t* value = cache.ValueAt(job.layer, pages[static_cast<size_t>(p / page_size)], g, p % page_size);
    for (int64_t r = 0; r < group; ++r) {
      float* out = job.out + (t * job.q_heads + g * group + r) * job.d;
      const float w = scores[static_cast<size_t>(r * length + p)];
      AxpyF32(w, reinterpret_cast<const float*>(value), out, job.d);
    }
  }
  return 0;
}

absl::Status Attention(BuiltinContext&, const Value* const* args, int, Value* result) {
  PagedKvCache& cache = args[0]->as_object<PagedKvCache>();
  const int64_t layer = args[1]->as_int();
  const Tensor& q = args[2]->as_tensor();
  const Tensor& k = args[3]->as_tensor();
  const Tensor& v = args[4]->as_tensor();
  const double scale = args[5]->as_double();
  const PagedKvCache::Config& c = cache.config();
  if (!cache.in_forward()) return Error("called outside a step (the caller must run BeginForward first)");
  if (layer < 0 || layer >= c.num_layers) return Error(absl::StrCat("layer ", layer, " is outside [0, ", c.num_layers, ")"));
  const int64_t n = static_cast<int64_t>(cache.step_tokens().size());
  if (q.ndim() != 3 || q.shape()[1] <= 0 || q.shape()[1] % c.num_kv_heads != 0) {
    return Error(absl::StrCat("q must be [", n, ", a multiple of ", c.num_kv_heads, " heads, ", c.head_dim, "], got ",
                              q.Describe()));
  }
  const int64_t q_heads = q.shape()[1];
  if (absl::Status s = CheckTensor(q, "q", n, q_heads, c.head_dim); !s.ok()) return s;
  if (absl::Status s = CheckTensor(k, "k", n, c.num_kv_heads, c.head_dim); !s.ok()) return s;
  if (absl::Status s = CheckTensor(v, "v", n, c.num_kv_heads, c.head_dim); !s.ok()) return s;
  // The cache and this attention live on the host. A model compiled for a GPU hands over its
  // q, k and v in device memory: they come here first (the copy waits for the kernels that
  // wrote them), and the output goes back to q's device, where the next kernel reads it.
  vm::Device* kernel_device = nullptr;
  if (q.device().device_type != kDLCPU) {
    absl::StatusOr<vm::Device*> device = vm::GetDevice(q.device());
    if (!device.ok()) return device.status();
    kernel_device = *device;
  }
  absl::StatusOr<Tensor> q_host = OnHost(q), k_host = OnHost(k), v_host = OnHost(v);
  if (!q_host.ok()) return q_host.status();
  if (!k_host.ok()) return k_host.status();
  if (!v_host.ok()) return v_host.status();

  // Store the step's keys and values.
  const bool f16 = cache.element_bytes() == 2;
  for (int64_t t = 0; t < n; ++t) {
    const PagedKvCache::StepToken& token = cache.step_tokens()[static_cast<size_t>(t)];
    const std::vector<int32_t>& pages = *cache.step_sequences()[static_cast<size_t>(token.sequence)].pages;
    const int32_t page = pages[static_cast<size_t>(token.position / c.page_size)];
    const int64_t slot = token.position % c.page_size;
    for (int64_t g = 0; g < c.num_kv_heads; ++g) {
      const float* ks = k_host->data_as<float>() + (t * c.num_kv_heads + g) * c.head_dim;
      const float* vs = v_host->data_as<float>() + (t * c.num_kv_heads + g) * c.head_dim;
      uint8_t* kd = cache.KeyAt(layer, page, g, slot);
      uint8_t* vd = cache.ValueAt(layer, page, g, slot);
      if (f16) {
        for (int64_t i = 0; i < c.head_dim; ++i) {
          reinterpret_cast<uint16_t*>(kd)[i] = FloatToHalf(ks[i]);
          reinterpret_cast<uint16_t*>(vd)[i] = FloatToHalf(vs[i]);
        }
      } else {
        std::memcpy(kd, ks, static_cast<size_t>(c.head_dim) * 4);
        std::memcpy(vd, vs, static_cast<size_t>(c.head_dim) * 4);
      }
    }
  }

  absl::StatusOr<Tensor> out = Tensor::Empty({n, q_heads, c.head_dim}, vm::DTypeFloat32());
  if (!out.ok()) return out.status();
  AttentionJob job{&cache, layer, q_host->data_as<float>(), out->data_as<float>(), q_heads, c.num_kv_heads, c.head_dim,
                   static_cast<float>(scale)};
  const int64_t heads = n * c.num_kv_heads;
  if (heads > 0 && !f16) {
    vm::ThreadPool::Global().ParallelFor(heads, AttentionTask, &job);
  } else if (heads > 0) {
    const bool avx512_build = ActiveGgmlSimd() == GgmlSimd::kAvx512;
    const bool avx2 = HasAvx2F16c();
    int64_t shortest = std::numeric_limits<int64_t>::max(), longest = 0;
    for (const PagedKvCache::StepToken& token : cache.step_tokens()) {
      shortest = std::min(shortest, token.position + 1);
      longest = std::max(longest, token.position + 1);
    }
    const int threads = vm::ThreadPool::Global().num_threads();
    job.parts = threads > 1 && heads < 4 * threads && shortest >= kSplitMinLength ? threads : 1;
    if (const int forced = parts_for_testing.load(std::memory_order_relaxed); forced > 0) job.parts = forced;
    if (job.parts == 1) {
      const auto task = avx2 ? (avx512_build ? AttentionTaskF16<true, 16> : AttentionTaskF16<true, 8>)
                             : (avx512_build ? AttentionTaskF16<false, 16> : AttentionTaskF16<false, 8>);
      vm::ThreadPool::Global().ParallelFor(heads, task, &job);
    } else {
      // Kept by the calling thread from step to step: no allocation once they have grown.
      thread_local std::vector<float> scores;
      thread_local std::unique_ptr<std::atomic<int64_t>[]> ranges_done;
      thread_local int64_t ranges_capacity = 0;
      job.scores_block = (job.q_heads / job.kv_heads) * ((longest + 15) / 16 * 16);
      scores.resize(static_cast<size_t>(heads * job.scores_block));
      if (ranges_capacity < heads) {
        ranges_done = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(heads));
        ranges_capacity = heads;
      }
      for (int64_t i = 0; i < heads; ++i) ranges_done[i].store(0, std::memory_order_relaxed);
      job.scores = scores.data();
      job.ranges_done = ranges_done.get();
      const auto score_task = avx2 ? (avx512_build ? ScoreTaskF16<true, 16> : ScoreTaskF16<true, 8>)
                                   : (avx512_build ? ScoreTaskF16<false, 16> : ScoreTaskF16<false, 8>);
      const auto output_task = avx2 ? (avx512_build ? OutputTaskF16<true, 16> : OutputTaskF16<true, 8>)
                                    : (avx512_build ? OutputTaskF16<false, 16> : OutputTaskF16<false, 8>);
      vm::ThreadPool::Global().ParallelFor(heads * job.parts, score_task, &job);
      vm::ThreadPool::Global().ParallelFor(heads * job.parts, output_task, &job);
    }
  }
  if (kernel_device != nullptr) {
    out = out->CopyTo(kernel_device);
    if (!out.ok()) return out.status();
  }
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

absl::Status Positions(BuiltinContext& ctx, const Value* const* args, int, Value* result) {
  PagedKvCache& cache = args[0]->as_object<PagedKvCache>();
  if (!cache.in_forward()) {
    return absl::FailedPreconditionError(
        "kiln.kv_cache.positions: called outside a step (the caller must run BeginForward first)");
  }
  const int64_t n = static_cast<int64_t>(cache.step_tokens().size());
  absl::StatusOr<Tensor> out = Tensor::Empty({n}, vm::DTypeInt64());
  if (!out.ok()) return out.status();
  for (int64_t t = 0; t < n; ++t) out->data_as<int64_t>()[t] = cache.step_tokens()[static_cast<size_t>(t)].position;
  // The positions feed RoPE, a kernel on the VM's default device (a GPU for a model compiled
  // for one).
  if (ctx.device != nullptr && ctx.device->dl_device().device_type != kDLCPU) {
    out = out->CopyTo(ctx.device);
    if (!out.ok()) return out.status();
  }
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

}  // namespace

void ForcePortableAttentionForTesting(bool portable) { force_portable.store(portable); }

void SetAttentionPartsForTesting(int parts) { parts_for_testing.store(parts); }

std::vector<float> AttentionScoresForTesting(const std::vector<float>& q, int64_t rows, const std::vector<uint16_t>& keys,
                                             int64_t d, float scale, bool prompt) {
  const int64_t length = static_cast<int64_t>(keys.size()) / d;
  std::vector<const uint16_t*> key_rows;
  for (int64_t p = 0; p < length; ++p) key_rows.push_back(keys.data() + p * d);
  const bool avx512_build = ActiveGgmlSimd() == GgmlSimd::kAvx512;
  const bool tiny_blas = prompt && d % (avx512_build ? 16 : 8) == 0;
  std::vector<float> scores(static_cast<size_t>(rows * length));
  const auto scores_f16 = HasAvx2F16c() ? (avx512_build ? ScoresF16<true, 16> : ScoresF16<true, 8>)
                                        : (avx512_build ? ScoresF16<false, 16> : ScoresF16<false, 8>);
  scores_f16(q.data(), rows, d, key_rows.data(), length, scale, tiny_blas, scores.data(), length);
  return scores;
}

void RegisterKvCacheBuiltins(vm::BuiltinRegistry& registry) {
  registry.RegisterBuiltin("kiln.kv_cache.positions", "(object:paged_kv_cache) -> tensor", Positions);
  registry.RegisterBuiltin("kiln.kv_cache.attention",
                           "(object:paged_kv_cache, int, tensor, tensor, tensor, double) -> tensor", Attention);
}

}  // namespace kiln::builtins
