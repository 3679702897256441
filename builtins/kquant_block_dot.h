// Dot products of GGML's K-quantized weights (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: super-blocks of
// 256 weights) with activations quantized to Q8_K, the numerics of llama.cpp's CPU backend
// (ggml_vec_dot_q2_K_q8_K / q3_K / q4_K / q5_K / q6_K, AVX2 code, which its AVX-512 builds run too), so a K-quant model run by Kiln
// computes the same floats as llama.cpp's non-repacked path (docs/llm.md, "Numerics").
//
// Weight layouts (little-endian float16 d, dmin):
//   Q4_K, 144 bytes: d, dmin, 12 bytes of eight 6-bit scales and eight 6-bit mins (scale and
//     min of group g < 4 in the low 6 bits of bytes g and g + 4; of g >= 4 the low nibbles
//     and high nibbles of byte g + 4 with their top two bits in the top bits of bytes g - 4
//     and g), 128 bytes of nibbles: byte 32c + l holds weight 64c + l low and 64c + 32 + l
//     high. Weight = d * scale(g) * q - dmin * min(g), g the weight's group of 32.
//   Q5_K, 176 bytes: as Q4_K with 32 bytes of fifth bits between the scales and the nibbles:
//     weight 64c + l has bit 2c of byte l, weight 64c + 32 + l bit 2c + 1.
//   Q6_K, 210 bytes: 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8 scales
//     (one per 16 weights), d last. For half c (128 weights) and l < 32, the low-nibble bytes
//     64c + l and 64c + 32 + l and the high byte 32c + l give weights 128c + l (low nibble,
//     bits 0-1), 128c + 32 + l (low, bits 2-3), 128c + 64 + l (high nibble, bits 4-5) and
//     128c + 96 + l (high, bits 6-7); weight = d * scale * (q - 32).
//   Q3_K, 110 bytes: 32 bytes of high bits, 64 bytes of 2-bit lows, 12 bytes of sixteen
//     6-bit scales (one per 16 weights, minus 32), d last. Weight 128n + 32j + l (l < 32)
//     has the bits 2j of low byte 32n + l and bit 4n + j of high byte l; q = low - 4 when
//     that bit is clear, else low (-4..3); weight = d * scale * q. Scale i: low nibble of
//     byte i % 8 at bit 4 * (i / 8), top two bits at bit 2 * (i / 4) of byte 8 + i % 4.
//   Q2_K, 84 bytes: 16 bytes of 4-bit scales (low nibble) and mins (high nibble), one per 16
//     weights, 64 bytes of 2-bit quants (weight 128n + 32j + l, l < 32: bits 2j of byte 16 +
//     32n + l, q 0..3), d, dmin. Weight = d * scale * q - dmin * min, per 16 weights.
//   IQ4_XS, 136 bytes: d, a little-endian uint16 of high scale bits, 4 bytes of low scale
//     nibbles, 128 bytes of nibbles: group g (32 weights) has scale ((byte 4 + g / 2) >> 4 *
//     (g % 2) & 15 | (high >> 2g & 3) << 4) - 32 and its weights in bytes 8 + 16g .. 8 + 16g
//     + 15 (weight l < 16 the low nibble of byte l, weight 16 + l its high nibble); weight =
//     d * scale * v[nibble], v IQ4_NL's table (kIq4NlValues). ggml_vec_dot_iq4_xs_q8_K sums
//     its products into the 8 lanes as Q4_K's (scale per group, no mins).
//
// Activations (QuantizeRowQ8K, ggml's quantize_row_q8_K, which x86 builds take from the
// reference code): per 256, max = the first element of largest magnitude, iscale = -127 / max,
// q = min(127, round-half-to-even(iscale * x)), d = 1 / iscale as float32 (not float16), and
// the sums of each 16 q's. A block of zeros has d = 0 and q = 0.
//
// Order (DotQ8KRows): each super-block's integer products are summed exactly into 8 lanes:
// lane t holds, over the eight groups of 32, scale(group) * (sum of the products of the
// group's elements 4t..4t+3) (Q3_K and Q6_K: the scale of the elements' 16; Q3_K's q signed,
// its - 4 inside each lane as ggml takes it; Q6_K: the scale of those elements' 16, q without its - 32,
// and lane t then loses 32 * (scale(2t) * sum(2t) + scale(2t + 1) * sum(2t + 1)), sum(i) the
// activations' 16-sums: ggml takes the offset from them, so it lands in other lanes than
// the products of (q - 32) would put it, and the lanes' floats differ). Each lane is
// converted to float and accumulated over the super-blocks with one fused multiply-add by
// d = activation d * weight d. The mins (Q4_K, Q5_K) use the 16-sums: prod[t] = min(2t) *
// s(2t) + min(2t + 1) * s(2t + 1), s(g) the sum of group g's activations, with dmin =
// -activation d * weight dmin; Q4_K accumulates prod[t] into 4 float lanes with fused
// multiply-adds, added at the end as (m0 + m2) + (m1 + m3); Q5_K adds the integer sum of the
// four into a scalar with one fused multiply-add per super-block. Q2_K (scale per 16, q 0..3)
// puts its mins into the same 8 lanes, first: per super-block lane t = fma(-activation d *
// weight dmin, float(min(2t) * s(2t) + min(2t + 1) * s(2t + 1)), lane t), s(i) the 16-sums and
// min(i) the min of weights 16i..16i+15, then the products' fma. The 8 lanes are added
// (l0+l4 + l2+l6) + (l1+l5 + l3+l7), then the mins (Q4_K, Q5_K).
//
// llama.cpp has three more orders for K-quant weights (KQuantSummation), from exact integers
// per super-block: isum, the sum of all 8 lanes above (Q6_K's offset included), and imin =
// the sum over groups g of min(g) * s(g) (Q4_K/Q5_K), or the same per quarter:
//   kBlocks, its repacked Q4_K GEMV kernel (ggml-cpu repack.cpp q4_K_8x8: Q4_K weights
//     with a multiple of 8 rows, on AVX2 and AVX-512 CPUs): acc = fma(float(isum), weight d *
//     activation d, acc) and mins = fma(float(imin), weight dmin * activation d, mins) over
//     the super-blocks from zero, result acc - mins;
//   kBlockQuarters, its repacked Q4_K GEMM kernel (the same weights, for the first n - n % 4
//     of a call's n > 3 activation rows; the rest go to the GEMV): the same with one integer
//     per quarter super-block (64 weights, groups 2i and 2i + 1, and their two mins), four
//     fused multiply-adds into acc and four into mins per super-block (its activations come
//     from quantize_mat_q8_K_4x8, which may pick the opposite sign for d and every q: the
//     products, and so the results, are the same);
//   kBlockHalves, its repacked Q2_K GEMM kernel (q2_K_8x8, which llama.cpp builds only on
//     AVX-512 CPUs, for Q2_K weights with a multiple of 8 rows; its GEMV is kBlocks): as
//     kBlockQuarters with one integer per half super-block (128 weights, 8 scales, 8 mins);
//   kTiles, its tiled K-quant matmul (ggml-cpu tiled/, for the Q2_K and Q4_K weights it does
//     not repack, Q3_K, Q5_K, Q6_K and IQ4_XS, when the call has 8 or more activation rows):
//     per super-block r = float(isum) * weight d, then r = fma(-weight dmin, float(imin), r)
//     (Q2_K/Q4_K/Q5_K), and acc =
//     fma(r, activation d, acc) over the super-blocks from zero (its AVX2 and AVX-512 VNNI
//     kernels alike; the VNNI kernel's add of a product is contracted to that fma).
//
// Portable and AVX2 code give identical bits (the integer sums are exact, the float
// operations the same); the AVX-512 VNNI choice of q8_block_dot.h runs the AVX2 code.
#pragma once

#include <cstdint>

#include "builtins/q8_block_dot.h"

namespace kiln::builtins {

// IQ4_XS shares the K-quants' Q8_K activations and vec_dot lanes (its 32-weight groups'
// signed scales as Q4_K's, no mins).
enum class KQuantFormat { kQ4_K, kQ5_K, kQ6_K, kQ3_K, kIQ4_XS, kQ2_K };

inline constexpr int64_t kKQuantBlockWeights = 256;

// Bytes of one 256-weight super-block of `format`.
int64_t KQuantBlockBytes(KQuantFormat format);

// One super-block of quantized activations (ggml's block_q8_K).
struct Q8KBlock {
  float d;
  int8_t q[256];
  int16_t sums[16];  // of q[16i .. 16i + 15]
};

// Quantizes k floats (k a multiple of 256) into k / 256 blocks.
void QuantizeRowQ8K(const float* x, int64_t k, Q8KBlock* out);

// How the super-blocks' integer sums become a float (see the orders above).
enum class KQuantSummation { kLanes, kBlocks, kBlockQuarters, kBlockHalves, kTiles };

// The dot products of one weight row (`blocks` super-blocks of `format`) with `rows`
// activation rows of `blocks` blocks each (row r at x + r * blocks): out[r * out_stride],
// summed in `summation` order. `isa` must be supported (Q8IsaSupported); a row's result does
// not depend on `rows`.
void DotQ8KRows(KQuantFormat format, KQuantSummation summation, const uint8_t* weight_row, const Q8KBlock* x,
                int64_t blocks, int64_t rows, float* out, int64_t out_stride, Q8Isa isa);

}  // namespace kiln::builtins
