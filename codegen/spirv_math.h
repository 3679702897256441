// EmitFloatMath: TIR's math intrinsics (tir/expr.h, IsMathIntrinsic) on float32 or float64
// SPIR-V values, with the C library's meaning.
//
// float32: GLSL.std.450 where it has the function (exp log sqrt tanh sin cos tan asin acos
// atan sinh cosh asinh acosh atanh pow floor ceil fabs RoundEven); `fmod` is OpFRem (C's
// sign); written out: sigmoid, rsqrt, erf (Taylor series below 1, Abramowitz-Stegun 7.1.26
// above: error below 2e-7), log1p and expm1 (Kahan's corrections), pow of a negative base.
//
// float64: GLSL.std.450's transcendental functions are 16- and 32-bit only, so exp and log
// are written out to double precision (Cody-Waite reduction by ln 2 and a degree-14 Taylor
// polynomial, scaled by Ldexp; frexp and the atanh series of the mantissa), sin / cos / tan
// reduce by pi/2 in three parts (accurate to a few ulp for |x| below about 1e5) with Taylor
// polynomials on [-pi/4, pi/4], and pow, log1p, expm1, sigmoid, tanh, sinh, cosh, asinh,
// acosh, atanh are built on those. asin, acos, atan and erf have no float64 version yet.
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
