// EmitFloatMath: TIR's math intrinsics (tir/expr.h, IsMathIntrinsic) on float32 or float64
// SPIR-V values, with the C library's meaning, special values included.
//
// Drivers implement GLSL.std.450 loosely (lavapipe: exp as exp2(x log2 e), |x| ulp off;
// cos(3e38) = 1; asin / acos / atan 4e-5 off; pow undefined below 0 and wrong for NaN;
// OpFRem NaN for an infinite divisor), and its transcendental functions are 32-bit only.
// So most functions are written out, for both widths:
//  - exp: reduction by ln 2 in two parts, a Taylor polynomial (degree 8 / 14), Ldexp;
//  - log (float64): FrexpStruct and the atanh series of the mantissa; float32 uses Log;
//  - sin / cos: float32 by Payne-Hanek reduction in 64-bit integers (every x), float64 by
//    reduction with pi/2 in three parts (a few ulp for |x| below about 1e5); Taylor
//    polynomials on [-pi/4, pi/4]; tan (float64) is sin / cos;
//  - atan by two argument reductions and its Taylor series; asin and acos through atan;
//  - sinh, cosh, tanh (float64), asinh, acosh, atanh (float64), log1p and expm1 (Kahan's
//    corrections), sigmoid from those; pow with C's special cases; fmod as OpFRem with an
//    infinite divisor fixed; erf: float32 by its Taylor series below 1 and Abramowitz-Stegun
//    7.1.26 above (error below 2e-7), float64 by e^(-x^2) times a series of positive terms.
// GLSL.std.450 stays for sqrt, floor, ceil, fabs, RoundEven, and float32 log, tanh, tan,
// asinh, acosh, atanh, pow's general case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/spirv_builder.h"

namespace kiln::codegen {

// `op` applied to `args` (ids of float values of `bits` 32 or 64); nullopt when `op` has no
// version for that width (the caller reports it).
std::optional<uint32_t> EmitFloatMath(SpirvFunctionWriter& w, const std::string& op, int bits,
                                      const std::vector<uint32_t>& args);

}  // namespace kiln::codegen
