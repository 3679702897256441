// LowerIntrinsics: math intrinsics -> what the function's target computes them with.
//
// cpu target (the emitter then maps exp, log, sqrt, fabs, floor, ceil, round, sin, cos and
// pow to LLVM intrinsics, fmod to frem):
//  - float32, scalar or vector: exp, log, erf, tanh, sigmoid, expm1, log1p, sin, cos, tan,
//    asin, acos, atan, sinh, cosh, asinh, acosh, atanh -> fast_exp, ... (inline code,
//    codegen/fast_math.h: a SIMD loop stays SIMD, where LLVM would call libm once per lane);
//  - float16: the same through float32, cast(float16, fast_exp(cast(float32, x)));
//  - float64: sigmoid -> 1 / (1 + exp(0 - x)); exp, log, sin, cos stay (LLVM intrinsics);
//    the others -> libm_tanh, libm_erf, ... (the C library's double functions);
//  - rsqrt(x) -> 1 / sqrt(x) in x's type, for every width.
// cuda and vulkan targets keep every intrinsic: their languages have each of them.
// Everything else is unchanged (bfloat16 and non-float arguments too: the emitter refuses
// them with a message).
#pragma once

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir::transform {

absl::StatusOr<PrimFunc> LowerIntrinsics(const PrimFunc& func);

}  // namespace kiln::tir::transform
