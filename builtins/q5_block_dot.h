// Dot products of GGML's Q5_0 and Q5_1 weights with activations quantized to 8 bits per 32
// (Q8Block, builtins/q8_block_dot.h: Q8_0 for Q5_0, Q8_1 for Q5_1), the numerics of
// llama.cpp's CPU backend (ggml_vec_dot_q5_0_q8_0 / q5_1_q8_1), whose float operations are
// those of Q4_0 / Q4_1: the weights only gain a fifth bit.
//
// Layouts (little-endian float16 d, m):
//   Q5_0, 22 bytes: d, 4 bytes of fifth bits (bit j of the little-endian uint32 for weight j),
//     16 bytes of nibbles (byte j: weight j low, weight j + 16 high); weight = (q - 16) * d.
//   Q5_1, 24 bytes: d, m, then as Q5_0; weight = q * d + m.
//
// Order: each block's integer products summed exactly in 8 lanes of 4 consecutive elements,
// each lane accumulated over the blocks with one fused multiply-add by weight d * activation
// d; Q5_1 adds m * activation s per block into a scalar with fused multiply-adds; the lanes
// are added (l0+l4 + l2+l6) + (l1+l5 + l3+l7), then the scalar. Portable, AVX2 and AVX-512
// VNNI code give identical bits (the integer lane sums are exact whichever instructions
// form them; the float steps are the same in every lane).
#pragma once

#include <cstdint>

#include "builtins/q8_block_dot.h"

namespace kiln::builtins {

enum class Q5Format { kQ5_0, kQ5_1 };

// Bytes of one 32-weight block.
int64_t Q5BlockBytes(Q5Format format);

// The dot products of one weight row (`blocks` blocks) with `rows` activation rows of
// `blocks` blocks each (row r at x + r * blocks): out[r * out_stride].
void DotQ5Rows(Q5Format format, const uint8_t* weight_row, const Q8Block* x, int64_t blocks, int64_t rows, float* out,
               int64_t out_stride, Q8Isa isa);

// The same for `weight_rows` weight rows, `row_bytes` apart: out[r * out_stride + i] is
// activation row r with weight row i, bit for bit what DotQ5Rows gives for that pair. The
// AVX-512 VNNI code takes 4 weight rows (two to a 512-bit vector) and up to 8 activation
// rows at a time, so each weight block is decoded once per 8 activation rows and each
// activation block loaded once per 4 weight rows (prefill's many rows).
void DotQ5Tile(Q5Format format, const uint8_t* weights, int64_t weight_rows, int64_t row_bytes, const Q8Block* x,
               int64_t blocks, int64_t rows, float* out, int64_t out_stride, Q8Isa isa);

}  // namespace kiln::builtins
