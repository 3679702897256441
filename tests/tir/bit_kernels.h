// Kernels exercising the bit operations and reinterpret of tir/expr.h, with their expected
// outputs worked out by hand. The TIR interpreter (tests/tir/interpreter_test.cc) and the
// LLVM emitter (tests/codegen/llvm_codegen_test.cc) both run them against these numbers,
// so the two agree, out-of-range shift amounts included.
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

namespace kiln::tir::testing {

// A = [0x0ff0, 0x00ff, -8, 3, 40, -1], U = [200, 7]; O and P are outputs.
inline constexpr const char* kBitOps = R"(prim_func @bits(A: Buffer((6,), int32), U: Buffer((2,), uint8), O: Buffer((12,), int32), P: Buffer((4,), uint8)) {
  O[0] = A[0] & A[1]
  O[1] = A[0] | A[1]
  O[2] = A[0] ^ A[1]
  O[3] = ~A[3]
  O[4] = A[2] >> int32(1)
  O[5] = A[2] << A[3]
  O[6] = A[3] << A[4]
  O[7] = A[2] >> A[4]
  O[8] = A[3] >> A[5]
  O[9] = A[1] << A[5]
  O[10] = int32(1) << A[4] - int32(9)
  O[11] = select((A[0] & int32(15)) == int32(0), A[3] | A[2] & ~A[5] ^ A[1], int32(0))
  P[0] = U[0] >> U[1]
  P[1] = U[0] << uint8(1)
  P[2] = ~U[0]
  P[3] = U[0] >> uint8(9)
}
)";
inline const std::vector<int32_t> kBitOpsA = {0x0ff0, 0x00ff, -8, 3, 40, -1};
inline const std::vector<uint8_t> kBitOpsU = {200, 7};
inline const std::vector<int32_t> kBitOpsO = {
    0xf0,          // 0x0ff0 & 0x00ff
    0x0fff,        // 0x0ff0 | 0x00ff
    0x0f0f,        // 0x0ff0 ^ 0x00ff
    -4,            // ~3
    -4,            // -8 >> 1 (arithmetic)
    -64,           // -8 << 3
    0,             // 3 << 40: every bit shifted out
    -1,            // -8 >> 40: the sign fills every bit
    0,             // 3 >> -1: a negative amount is out of range too
    0,             // 0xff << -1
    INT32_MIN,     // 1 << 31 (40 - 9)
    0xff,          // & before ^ before |: 3 | ((-8 & ~(-1)) ^ 0xff) = 3 | (0 ^ 0xff)
};
inline const std::vector<uint8_t> kBitOpsP = {
    1,    // 200 >> 7 (logical)
    144,  // 200 << 1 = 400, modulo 256
    55,   // ~200 = 255 - 200
    0,    // 200 >> 9
};

// The vector forms: O[i] = A[i] >> S[i] lane by lane, with lanes whose amounts are out of
// range, and V = the bits of the int32 pairs W read as int64 (lane 0 in the low half).
inline constexpr const char* kVectorBitOps = R"(prim_func @vbits(A: Buffer((8,), int32), S: Buffer((8,), int32), O: Buffer((8,), int32), M: Buffer((8,), uint32), W: Buffer((4,), int32), V: Buffer((2,), int64)) {
  O[ramp(0, 1, 8)] = A[ramp(0, 1, 8)] >> S[ramp(0, 1, 8)]
  M[ramp(0, 1, 8)] = cast(uint32x8, A[ramp(0, 1, 8)]) >> cast(uint32x8, S[ramp(0, 1, 8)]) & broadcast(uint32(65535), 8)
  V[ramp(0, 1, 2)] = reinterpret(int64x2, W[ramp(0, 1, 4)])
}
)";
inline const std::vector<int32_t> kVectorBitOpsA = {-256, -256, -256, 1024, 1024, 1024, -1, 7};
inline const std::vector<int32_t> kVectorBitOpsS = {4, 31, 32, 3, -5, 100, 0, 2};
inline const std::vector<int32_t> kVectorBitOpsO = {-16, -1, -1, 128, 0, 0, -1, 1};
// As uint32: -256 is 0xffffff00, -1 is 0xffffffff; >> is logical, amounts >= 32 give 0.
inline const std::vector<uint32_t> kVectorBitOpsM = {0xfff0, 0x1, 0, 128, 0, 0, 0xffff, 1};
inline const std::vector<int32_t> kVectorBitOpsW = {1, 2, -1, 0};
inline const std::vector<int64_t> kVectorBitOpsV = {(int64_t{2} << 32) + 1, 0xffffffffLL};

// Reinterpret between same-width types: uint16 bit patterns as float16 and back, float32 as
// int32.
inline constexpr const char* kReinterpret = R"(prim_func @reinterpret(H: Buffer((3,), uint16), F: Buffer((3,), float16), G: Buffer((3,), uint16), X: Buffer((2,), float32), I: Buffer((2,), int32)) {
  for i in serial(0, 3) {
    F[i] = reinterpret(float16, H[i]) * float16(2.0)
    G[i] = reinterpret(uint16, reinterpret(float16, H[i]) + float16(1.0))
  }
  for j in serial(0, 2) {
    I[j] = reinterpret(int32, X[j])
  }
}
)";
inline const std::vector<uint16_t> kReinterpretH = {0x3c00, 0xc000, 0x3800};  // 1.0, -2.0, 0.5
inline const std::vector<uint16_t> kReinterpretF = {0x4000, 0xc400, 0x3c00};  // 2.0, -4.0, 1.0
inline const std::vector<uint16_t> kReinterpretG = {0x4000, 0xbc00, 0x3e00};  // 2.0, -1.0, 1.5
inline const std::vector<float> kReinterpretX = {1.0f, -0.0f};
inline const std::vector<int32_t> kReinterpretI = {0x3f800000, INT32_MIN};

// int4 and uint4 buffers, packed two to a byte, low nibble first: A (int8) is packed into
// Q (int4, wrapping 9 to -7 and -9 to 7), read back into B (int8) and re-typed into U
// (uint4); an odd length leaves the last byte's high nibble as it was. Then eight lanes at
// once: V = Q's first eight elements plus one, through vector loads and stores.
inline constexpr const char* kInt4 = R"(prim_func @int4(A: Buffer((n,), int8), Q: Buffer((n,), int4), B: Buffer((n,), int8), U: Buffer((n,), uint4), V: Buffer((8,), int4)) {
  for i in serial(0, n) {
    Q[i] = cast(int4, A[i])
  }
  for j in serial(0, n) {
    B[j] = cast(int8, Q[j])
    U[j] = cast(uint4, Q[j])
  }
  V[ramp(0, 1, 8)] = Q[ramp(0, 1, 8)] + broadcast(int4(1), 8)
}
)";
inline const std::vector<int8_t> kInt4A = {1, -2, 7, -8, 3, 9, -9, 0, 5};
// Nibbles 1, e, 7, 8, 3, 9, 7, 0, 5; Q starts as all ones (0xff), U and V as zeros.
inline const std::vector<uint8_t> kInt4Q = {0xe1, 0x87, 0x93, 0x07, 0xf5};
inline const std::vector<int8_t> kInt4B = {1, -2, 7, -8, 3, -7, 7, 0, 5};
inline const std::vector<uint8_t> kInt4U = {0xe1, 0x87, 0x93, 0x07, 0x05};
// 2, -1, -8 (7 + 1 wraps), -7, 4, -6, -8, 1: nibbles 2, f, 8, 9, 4, a, 8, 1.
inline const std::vector<uint8_t> kInt4V = {0xf2, 0x98, 0xa4, 0x18};

}  // namespace kiln::tir::testing
