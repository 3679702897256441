// Quantized dot products with the activations quantized to 8 bits per 32-element block, the
// numerics of llama.cpp's CPU backend (ggml-cpu) for GGML's Q4_0, Q4_1, Q8_0 and IQ4_NL weights, so
// that a model run by Kiln computes the same floats as llama.cpp and generates the same
// tokens (docs/llm.md, "Numerics").
//
// Activations (QuantizeRowQ8): per block of 32, amax = max |x|, d = amax / 127 (float32),
// q = round-half-to-even(x * (127 / amax)) (0 when amax is 0); d is stored rounded to
// float16, and s = float16(d * sum(q)) for the Q4_1 dot product (GGML's Q8_1; Q8_0 ignores s).
//
// Dot product of one weight row with one activation row (DotQ8Rows): the integer products
// of a block are summed exactly in 8 lanes of 4 consecutive elements (lane l holds elements
// 4l..4l+3), each lane converted to float and accumulated across blocks with one fused
// multiply-add by the block's (weight d * activation d); Q4_1 adds weight m * activation s
// per block into a scalar with fused multiply-adds. At the end the 8 lanes are added
// pairwise as (l0+l4 + l2+l6) + (l1+l5 + l3+l7), then the scalar. This is the order of
// ggml's AVX2 vec_dot (and of its AVX-512 build, which uses the same 256-bit code).
//
// IQ4_NL (18 bytes: d as float16, then 16 bytes of nibbles laid out as Q4_0's) maps each
// nibble through ggml's 16-value table (kIq4NlValues) instead of subtracting 8. Its vec_dot
// (ggml_vec_dot_iq4_nl_q8_0) keeps two sets of 8 lanes: blocks 0, 2, 4, ... go into the
// first, blocks 1, 3, 5, ... into the second, each with one fused multiply-add by (weight d
// * activation d); the two are added lane by lane, then the lanes as above. A last block of
// an odd count is added after that as one fused multiply-add of its 32-product integer sum
// (the scalar tail, which GCC contracts).
//
// llama.cpp computes Q4_0 weights with a multiple of 8 rows another way on AVX2 and AVX-512
// CPUs: it repacks them, 8 rows interleaved, for its GEMV/GEMM kernels (ggml-cpu "repack",
// q4_0_8x8), which sum each block's 32 integer products exactly into one integer, convert it
// to float and accumulate it across blocks with one fused multiply-add by (weight d *
// activation d), one float per output from zero, with no lanes to add at the end
// (DotQ8RowsByBlock; the weights stay in GGUF's layout here: only the order matters).
// llama.cpp repacks IQ4_NL weights with a multiple of 8 rows the same way (iq4_nl_8x8),
// for the same kernels with its table as the nibble lookup: the same order.
//
// Three implementations give bit-identical results, whichever the CPU runs: portable C++
// (std::fma), AVX2 (+FMA, F16C) and AVX-512 VNNI (the integer sums with vpdpbusd). BestQ8Isa
// picks the fastest the CPU has; tests force each one.
#pragma once

#include <cstdint>

namespace kiln::builtins {

enum class QuantWeightFormat { kQ4_0, kQ4_1, kQ8_0, kIQ4_NL };

// The 16 values of an IQ4_NL (and IQ4_XS) nibble, ggml's kvalues_iq4nl.
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Bytes of one 32-element block of each weight format (GGML's block layouts).
int64_t QuantWeightBlockBytes(QuantWeightFormat format);

// One block of quantized activations. d and s hold float16 values, widened.
struct Q8Block {
  int8_t q[32];
  float d;
  float s;
};

enum class Q8Isa { kScalar, kAvx2, kAvx512Vnni };

bool Q8IsaSupported(Q8Isa isa);
Q8Isa BestQ8Isa();
const char* Q8IsaName(Q8Isa isa);

// Quantizes k floats (k a multiple of 32) into k / 32 blocks. `isa` must be supported.
void QuantizeRowQ8(const float* x, int64_t k, Q8Block* out, Q8Isa isa);

// The dot products of one weight row (`blocks` blocks of `format`) with `rows` activation
// rows of `blocks` blocks each (row r at x + r * blocks): out[r * out_stride]. A row's result
// does not depend on how many rows the call has.
void DotQ8Rows(QuantWeightFormat format, const uint8_t* weight_row, const Q8Block* x, int64_t blocks, int64_t rows,
               float* out, int64_t out_stride, Q8Isa isa);

// The dot products of `weight_rows` consecutive weight rows (each `blocks` blocks of Q4_0,
// Q8_0 or IQ4_NL) with `rows` activation rows in the block order above: out[r * out_stride + i] is
// activation row r with weight row i. Results depend only on the two rows, never on how
// many rows the call has.
void DotQ8RowsByBlock(QuantWeightFormat format, const uint8_t* weights, int64_t weight_rows, const Q8Block* x,
                      int64_t blocks, int64_t rows, float* out, int64_t out_stride, Q8Isa isa);

}  // namespace kiln::builtins
