// Converting a tensor to one of ONNX's narrow element types (bfloat16, float8, float4, int4,
// int2), held widened (narrow_types.h): the result has the type's storage dtype and only
// values of the narrow type. What ONNX's reference (onnx.reference, ml_dtypes) does:
//  - bfloat16: float32 rounded to nearest, ties to even, on its upper 16 bits (a value past
//    the largest finite one becomes infinity; `saturate` is float8's only); NaN stays NaN.
//    Wider inputs go through float32 first, as ml_dtypes does.
//  - float8 / float4: round to nearest, ties to even, on the type's grid (subnormals
//    included). A result beyond the largest finite value: with `saturate` (Cast's default)
//    the largest value of that sign; without, infinity (E5M2) or NaN (the others). Infinity
//    inputs likewise; NaN stays NaN, the FNUZ types have no -0 (it becomes +0). FLOAT4E2M1
//    has neither infinity nor NaN: it always saturates, and NaN gives 0.
//  - FLOAT8E8M0 (powers of two, 2^-127 .. 2^127, no sign): the float32 exponent, rounded by
//    `round_mode` ("up": any mantissa bits round up, "down": truncate, "nearest": as ONNX's
//    numpy_helper.to_float8e8m0); saturating keeps 2^127 from rounding up to NaN; NaN and
//    infinities give NaN.
//  - int4 / uint4 / int2 / uint2: as C's conversion to int32 (floats truncated), then
//    wrapped to the type's bits (two's complement): Cast(-9 -> INT4) is 7. QuantizeLinear
//    clamps to the type's range first, so nothing wraps there.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/node_context.h"
#include "relax/expr.h"

namespace kiln::frontends::onnx {

// Host data of any float dtype as float32 data holding bfloat16 values (rounded as above).
relax::ConstantData RoundDataToBFloat16(const relax::ConstantData& data);

absl::StatusOr<relax::Expr> NarrowTo(NodeContext& context, relax::Expr x, tir::DataType x_dtype,
                                     const NarrowType& type, bool saturate, std::string_view round_mode = "up");

}  // namespace kiln::frontends::onnx
