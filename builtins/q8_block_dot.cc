#include "builtins/q8_block_dot.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "support/float16.h"

namespace kiln::builtins {

// The SIMD bodies, compiled for their targets here (the library itself is built for the
// baseline x86-64; BestQ8Isa checks the CPU before any of them runs).
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace q8_avx2 {
#include "builtins/q8_block_dot_x86.inc"
}  // namespace q8_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")
#define KILN_Q8_VNNI 1
namespace q8_vnni {
#include "builtins/q8_block_dot_x86.inc"
}  // namespace q8_vnni
#undef KILN_Q8_VNNI
#pragma GCC pop_options

namespace {

using support::FloatToHalf;
using support::HalfToFloat;

float Half(const uint8_t* p) { return HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// maxps: the second operand unless the first is greater (so NaN handling matches the SIMD code).
float MaxPs(float a, float b) { return a > b ? a : b; }

// cvtps2dq of a value already rounded to an integer: NaN and out-of-range give INT32_MIN.
int32_t ConvertToInt32(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

int8_t SaturateToInt8(int32_t v) { return static_cast<int8_t>(std::clamp<int32_t>(v, -128, 127)); }

void QuantizeRowScalar(const float* x, int64_t k, Q8Block* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    // The maximum in the SIMD code's order: 8 lanes over the four 8-element quarters, then
    // halves, pairs, and the last two.
    float lanes[8];
    for (int i = 0; i < 8; ++i) {
      float m = std::fabs(x[i]);
      for (int quarter = 1; quarter < 4; ++quarter) m = MaxPs(m, std::fabs(x[quarter * 8 + i]));
      lanes[i] = m;
    }
    float four[4];
    for (int i = 0; i < 4; ++i) four[i] = MaxPs(lanes[i + 4], lanes[i]);
    const float amax = MaxPs(MaxPs(four[0], four[2]), MaxPs(four[1], four[3]));
    const float d = amax / 127.0f;
    const float scale = amax != 0.0f ? 127.0f / amax : 0.0f;
    uint32_t sum = 0;  // wraps as the SIMD integer adds do (only for NaN or infinite input)
    for (int j = 0; j < 32; ++j) {
      const int32_t q = ConvertToInt32(std::nearbyint(x[j] * scale));
      sum += static_cast<uint32_t>(q);
      out[b].q[j] = SaturateToInt8(q);
    }
    out[b].d = HalfToFloat(FloatToHalf(d));
    out[b].s = HalfToFloat(FloatToHalf(d * static_cast<float>(static_cast<int32_t>(sum))));
  }
}

int WeightAt(QuantWeightFormat format, const uint8_t* block, int j) {
  switch (format) {
    case QuantWeightFormat::kQ4_0: return (j < 16 ? block[2 + j] & 15 : block[2 + j - 16] >> 4) - 8;
    case QuantWeightFormat::kQ4_1: return j < 16 ? block[4 + j] & 15 : block[4 + j - 16] >> 4;
    case QuantWeightFormat::kQ8_0: return static_cast<int8_t>(block[2 + j]);
    case QuantWeightFormat::kIQ4_NL: return kIq4NlValues[j < 16 ? block[2 + j] & 15 : block[2 + j - 16] >> 4];
  }
  return 0;
}

// IQ4_NL's vec_dot: even and odd blocks in two sets of lanes, added lane by lane at the end,
// and an odd count's last block as a scalar fused multiply-add after the lanes' sum.
void DotRowsIq4NlScalar(const uint8_t* w, const Q8Block* x, int64_t blocks, int64_t rows, float* out,
                        int64_t out_stride) {
  constexpr int64_t kBytes = 18;
  const int64_t paired = blocks & ~int64_t{1};
  for (int64_t r = 0; r < rows; ++r) {
    float acc[2][8] = {};
    const uint8_t* block = w;
    for (int64_t b = 0; b < paired; ++b, block += kBytes) {
      const Q8Block& xb = x[r * blocks + b];
      const float scale = xb.d * Half(block);
      for (int lane = 0; lane < 8; ++lane) {
        int32_t sum = 0;
        for (int j = 4 * lane; j < 4 * lane + 4; ++j) sum += WeightAt(QuantWeightFormat::kIQ4_NL, block, j) * xb.q[j];
        acc[b % 2][lane] = std::fma(scale, static_cast<float>(sum), acc[b % 2][lane]);
      }
    }
    float lanes[8];
    for (int lane = 0; lane < 8; ++lane) lanes[lane] = acc[0][lane] + acc[1][lane];
    float four[4];
    for (int i = 0; i < 4; ++i) four[i] = lanes[i + 4] + lanes[i];
    float result = (four[0] + four[2]) + (four[1] + four[3]);
    if (paired < blocks) {
      const Q8Block& xb = x[r * blocks + paired];
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) sum += WeightAt(QuantWeightFormat::kIQ4_NL, block, j) * xb.q[j];
      result = std::fma(xb.d * Half(block), static_cast<float>(sum), result);
    }
    out[r * out_stride] = result;
  }
}

void DotRowsScalar(QuantWeightFormat format, const uint8_t* w, const Q8Block* x, int64_t blocks, int64_t rows,
                   float* out, int64_t out_stride) {
  if (format == QuantWeightFormat::kIQ4_NL) return DotRowsIq4NlScalar(w, x, blocks, rows, out, out_stride);
  const int64_t block_bytes = QuantWeightBlockBytes(format);
  for (int64_t r = 0; r < rows; ++r) {
    float acc[8] = {};
    float summs = 0.0f;
    const uint8_t* block = w;
    for (int64_t b = 0; b < blocks; ++b, block += block_bytes) {
      const Q8Block& xb = x[r * blocks + b];
      const float scale = Half(block) * xb.d;
      for (int lane = 0; lane < 8; ++lane) {
        int32_t sum = 0;
        for (int j = 4 * lane; j < 4 * lane + 4; ++j) sum += WeightAt(format, block, j) * xb.q[j];
        acc[lane] = std::fma(scale, static_cast<float>(sum), acc[lane]);
      }
      if (format == QuantWeightFormat::kQ4_1) summs = std::fma(Half(block + 2), xb.s, summs);
    }
    float four[4];
    for (int i = 0; i < 4; ++i) four[i] = acc[i + 4] + acc[i];
    float result = (four[0] + four[2]) + (four[1] + four[3]);
    if (format == QuantWeightFormat::kQ4_1) result += summs;
    out[r * out_stride] = result;
  }
}

// One weight row at a time; the SIMD code's leftover rows (fewer than 8) come here too.
void DotRowsByBlockScalar(QuantWeightFormat format, const uint8_t* weights, int64_t weight_rows, const Q8Block* x,
                          int64_t blocks, int64_t rows, float* out, int64_t out_stride) {
  const int64_t block_bytes = QuantWeightBlockBytes(format);
  for (int64_t i = 0; i < weight_rows; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      float acc = 0.0f;
      const uint8_t* block = weights + i * blocks * block_bytes;
      for (int64_t b = 0; b < blocks; ++b, block += block_bytes) {
        const Q8Block& xb = x[r * blocks + b];
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) sum += WeightAt(format, block, j) * xb.q[j];
        acc = std::fma(static_cast<float>(sum), Half(block) * xb.d, acc);
      }
      out[r * out_stride + i] = acc;
    }
  }
}

}  // namespace

int64_t QuantWeightBlockBytes(QuantWeightFormat format) {
  switch (format) {
    case QuantWeightFormat::kQ4_0: return 18;
    case QuantWeightFormat::kQ4_1: return 20;
    case QuantWeightFormat::kQ8_0: return 34;
    case QuantWeightFormat::kIQ4_NL: return 18;
  }
  return 0;
}

bool Q8IsaSupported(Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kScalar: return true;
    case Q8Isa::kAvx2: {
      static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                              __builtin_cpu_supports("f16c");
      return has;
    }
    case Q8Isa::kAvx512Vnni: {
      static const bool has = Q8IsaSupported(Q8Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
                              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                              __builtin_cpu_supports("avx512vnni");
      return has;
    }
  }
  return false;
}

Q8Isa BestQ8Isa() {
  static const Q8Isa best = Q8IsaSupported(Q8Isa::kAvx512Vnni) ? Q8Isa::kAvx512Vnni
                            : Q8IsaSupported(Q8Isa::kAvx2)     ? Q8Isa::kAvx2
                                                               : Q8Isa::kScalar;
  return best;
}

const char* Q8IsaName(Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kScalar: return "scalar";
    case Q8Isa::kAvx2: return "avx2";
    case Q8Isa::kAvx512Vnni: return "avx512vnni";
  }
  return "?";
}

void QuantizeRowQ8(const float* x, int64_t k, Q8Block* out, Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kScalar: return QuantizeRowScalar(x, k, out);
    case Q8Isa::kAvx2: return q8_avx2::QuantizeRow(x, k, out);
    case Q8Isa::kAvx512Vnni: return q8_vnni::QuantizeRow(x, k, out);
  }
}

void DotQ8Rows(QuantWeightFormat format, const uint8_t* weight_row, const Q8Block* x, int64_t blocks, int64_t rows,
               float* out, int64_t out_stride, Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kScalar: return DotRowsScalar(format, weight_row, x, blocks, rows, out, out_stride);
    case Q8Isa::kAvx2: return q8_avx2::DotRows(format, weight_row, x, blocks, rows, out, out_stride);
    case Q8Isa::kAvx512Vnni: return q8_vnni::DotRows(format, weight_row, x, blocks, rows, out, out_stride);
  }
}

void DotQ8RowsByBlock(QuantWeightFormat format, const uint8_t* weights, int64_t weight_rows, const Q8Block* x,
                      int64_t blocks, int64_t rows, float* out, int64_t out_stride, Q8Isa isa) {
  // The SIMD code takes 8 weight rows at a time; the rest go one by one, in the same order.
  int64_t done = 0;
  if (isa == Q8Isa::kAvx2) done = q8_avx2::DotRowsByBlock(format, weights, weight_rows, x, blocks, rows, out, out_stride);
  if (isa == Q8Isa::kAvx512Vnni) {
    done = q8_vnni::DotRowsByBlock(format, weights, weight_rows, x, blocks, rows, out, out_stride);
  }
  const int64_t row_bytes = blocks * QuantWeightBlockBytes(format);
  DotRowsByBlockScalar(format, weights + done * row_bytes, weight_rows - done, x, blocks, rows, out + done, out_stride);
}

}  // namespace kiln::builtins
