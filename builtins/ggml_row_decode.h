// Weights of GGML's Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS rows decoded to
// float32 as ggml's dequantize_row_* computes them (layouts in builtins/q5_block_dot.h and
// builtins/kquant_block_dot.h), for the float32-activation matmul kernels and for rows that
// cannot be quantized (an inf or NaN). Each weight is computed in float32 without fused
// operations: Q5_0 (q - 16) * d; Q5_1 q * d + m; Q2_K/Q4_K/Q5_K (d * scale) * q - dmin * min;
// Q6_K (d * scale) * (q - 32); Q3_K (d * (scale - 32)) * q; IQ4_XS (d * (scale - 32)) *
// v[q], v the IQ4_NL table.
#pragma once

#include <cstdint>

namespace kiln::builtins {

enum class DecodableFormat { kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K, kQ3_K, kIQ4_XS, kQ2_K };

// Weights per block (32 or 256) and bytes per block.
int64_t DecodableBlockWeights(DecodableFormat format);
int64_t DecodableBlockBytes(DecodableFormat format);

// Decodes the k weights (a multiple of the block's) of `row` into out[0, k).
void DecodeRow(DecodableFormat format, const uint8_t* row, int64_t k, float* out);

}  // namespace kiln::builtins
