// TIR expressions that read one GGML block of a quantized weight row (layouts in
// relax/op/quantize.cc), shared by the float32-activation quantized_matmul
// (legalize_quantize.cc) and the 8-bit-activation one (legalize_quantized_matmul_q8.cc).
//
// A block is addressed by the row's index into `data` and the block's index kb in the row;
// a weight in the block by (h, j): position h * 16 + j (h in {0, 1}, j in [0, 16)), so that
// a q4 block's byte j is read at an offset that does not depend on h (the nibble is chosen
// by h alone) and no floordiv or floormod of a position appears.
#pragma once

#include "relax/op/quantize.h"
#include "tir/buffer.h"
#include "tir/expr.h"

namespace kiln::relax::op {

// The float16 at byte `offset` of the block (little-endian), widened to float32 exactly: the
// scale d at offset 0, q4_1's minimum m at offset 2.
tir::PrimExpr QuantBlockHalf(const tir::Buffer& data, const tir::PrimExpr& row, const tir::PrimExpr& kb,
                             const QuantFormat& format, int64_t offset);

// The integer quant of weight (h, j) as int32: q8_0 its int8, q4_0 its nibble - 8, q4_1 its
// nibble (0..15). The weight is quant * d (+ m for q4_1).
tir::PrimExpr QuantBlockInt(const tir::Buffer& data, const tir::PrimExpr& row, const tir::PrimExpr& kb,
                            const QuantFormat& format, const tir::PrimExpr& h, const tir::PrimExpr& j);

// The float32 weight (h, j): float(quant) * d, one rounding, plus m for q4_1 (a second).
tir::PrimExpr QuantBlockWeight(const tir::Buffer& data, const tir::PrimExpr& row, const tir::PrimExpr& kb,
                               const QuantFormat& format, const tir::PrimExpr& h, const tir::PrimExpr& j);

}  // namespace kiln::relax::op
