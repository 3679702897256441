// IEEE 754 binary16 ("float16", "half") and bfloat16 conversions to and from float (and
// double -> half), for the runtime's tools (checksums, generated inputs) and the compilers'
// constants. Narrowing rounds to nearest even; values
// beyond the format's range become infinities; NaN stays NaN (quiet).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln::support {

inline float HalfToFloat(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  } else if (exponent == 31) {
    magnitude = mantissa != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

inline uint16_t FloatToHalf(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude >= 0x7f800000) return sign | (magnitude > 0x7f800000 ? 0x7e00 : 0x7c00);  // NaN, inf
  if (magnitude >= 0x477ff000) return sign | 0x7c00;  // rounds to 65520 or more: inf
  if (magnitude < 0x38800000) {
    // Below the smallest normal half (2^-14): a multiple of 2^-24, rounded to nearest even
    // by nearbyint in the default rounding mode. 0x400 is the smallest normal's encoding.
    float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t rebiased = magnitude - 0x38000000;  // exponent bias 127 -> 15
  rebiased += 0xfff + ((rebiased >> 13) & 1);  // round to nearest even
  return sign | static_cast<uint16_t>(rebiased >> 13);
}

// double -> half, rounded once to nearest even. Through float it would round twice (wrong
// at some ties: 1 + 2^-11 + 2^-40 is above a half tie, but its nearest float is the tie,
// which rounds down). Rounding to float *to odd* (toward zero, the last bit set when
// inexact) keeps the information a second rounding needs, since float has 13 more bits than
// half. The CPU code generator emits the same two steps as IR (DoubleToHalf in
// codegen/llvm_expr_lowering.cc); the SPIR-V emitter folds float16 constants with this.
inline uint16_t DoubleToHalf(double d) {
  const float nearest = static_cast<float>(d);
  const double back = nearest;
  if (std::isnan(d) || back == d) return FloatToHalf(nearest);
  uint32_t bits = std::bit_cast<uint32_t>(nearest);
  // One step toward zero is one less in magnitude (float bits are sign and magnitude); from
  // infinity it is the largest float, which still rounds to half's infinity.
  if (std::fabs(back) > std::fabs(d)) bits -= 1;
  return FloatToHalf(std::bit_cast<float>(bits | 1));
}

inline float BFloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t FloatToBFloat16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace kiln::support
