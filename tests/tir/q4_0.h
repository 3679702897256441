// The Q4_0 block format of GGML / llama.cpp, dequantized by a TIR kernel written with the
// bit operations and reinterpret of tir/expr.h, and by a reference written here in plain
// C++ (the float16 decoding spelled out, not taken from the code under test). The TIR
// interpreter (tests/tir/interpreter_test.cc) and the LLVM emitter
// (tests/codegen/llvm_codegen_test.cc) both run the kernels against the reference.
//
// A block is 18 bytes: the scale d as a little-endian float16, then 16 bytes of 4-bit
// quants; byte j holds weight j in its low nibble and weight j + 16 in its high nibble, and
// weight = (q - 8) * d.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace kiln::tir::testing {

inline constexpr int kQ4_0BlockBytes = 18;
inline constexpr int kQ4_0BlockWeights = 32;

// One block per outer iteration; the scale is read once, as uint16 from two bytes, and
// reinterpreted as float16.
inline constexpr const char* kDequantizeQ4_0 = R"(prim_func @dequantize_q4_0(Q: Buffer((nb, 18), uint8), W: Buffer((nb, 32), float32)) {
  for b in parallel(0, nb) {
    let d = cast(float32, reinterpret(float16, cast(uint16, Q[b, 0]) | cast(uint16, Q[b, 1]) << uint16(8))) {
      for j in serial(0, 16) {
        let q = Q[b, j + 2] {
          W[b, j] = cast(float32, cast(int32, q & uint8(15)) - int32(8)) * d
          W[b, j + 16] = cast(float32, cast(int32, q >> uint8(4)) - int32(8)) * d
        }
      }
    }
  }
}
)";

// The same with the 16 quant bytes of a block as one vector of lanes: SIMD shifts and masks.
inline constexpr const char* kDequantizeQ4_0Vectorized = R"(prim_func @dequantize_q4_0_simd(Q: Buffer((nb, 18), uint8), W: Buffer((nb, 32), float32)) {
  for b in parallel(0, nb) {
    let d = cast(float32, reinterpret(float16, cast(uint16, Q[b, 0]) | cast(uint16, Q[b, 1]) << uint16(8))) {
      for j in vectorized(0, 16) {
        W[b, j] = cast(float32, cast(int32, Q[b, j + 2] & uint8(15)) - int32(8)) * d
        W[b, j + 16] = cast(float32, cast(int32, Q[b, j + 2] >> uint8(4)) - int32(8)) * d
      }
    }
  }
}
)";

// IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
inline float ReferenceHalfToFloat(uint16_t h) {
  const int sign = h >> 15;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * std::ldexp(1.0f, -24);  // subnormal: m * 2^-24
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f, exponent - 15);
  }
  return sign ? -magnitude : magnitude;
}

// Weights of `blocks` (nb * 18 bytes) in order: nb * 32 floats.
inline std::vector<float> ReferenceDequantizeQ4_0(const std::vector<uint8_t>& blocks) {
  const size_t nb = blocks.size() / kQ4_0BlockBytes;
  std::vector<float> out(nb * kQ4_0BlockWeights);
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* block = blocks.data() + b * kQ4_0BlockBytes;
    const float d = ReferenceHalfToFloat(static_cast<uint16_t>(block[0] | (block[1] << 8)));
    for (int j = 0; j < 16; ++j) {
      const int low = block[2 + j] & 0x0f;
      const int high = block[2 + j] >> 4;
      out[b * kQ4_0BlockWeights + j] = static_cast<float>(low - 8) * d;
      out[b * kQ4_0BlockWeights + j + 16] = static_cast<float>(high - 8) * d;
    }
  }
  return out;
}

// `nb` random blocks. Scales are mostly ordinary magnitudes; the first blocks have the
// scales a reader is likeliest to get wrong: a subnormal, -0, the largest float16, inf and
// a NaN.
inline std::vector<uint8_t> RandomQ4_0Blocks(int64_t nb, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> blocks(static_cast<size_t>(nb) * kQ4_0BlockBytes);
  const uint16_t special[] = {0x0001, 0x8000, 0x7bff, 0x7c00, 0x7e01, 0x3555};
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* block = blocks.data() + b * kQ4_0BlockBytes;
    uint16_t d;
    if (b < static_cast<int64_t>(sizeof(special) / sizeof(special[0]))) {
      d = special[b];
    } else {
      // Sign, an exponent of 2^-6 .. 2^4, any mantissa.
      d = static_cast<uint16_t>(((rng() & 1) << 15) | ((9 + rng() % 11) << 10) | (rng() & 0x3ff));
    }
    block[0] = static_cast<uint8_t>(d & 0xff);
    block[1] = static_cast<uint8_t>(d >> 8);
    for (int j = 2; j < kQ4_0BlockBytes; ++j) block[j] = static_cast<uint8_t>(rng());
  }
  return blocks;
}

// Equal, or both NaN.
inline bool SameWeight(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace kiln::tir::testing
