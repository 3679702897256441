// Inline float32 math functions as LLVM IR, for scalars and vectors alike.
//
// There is no vector math library behind the CPU backend: a vectorized loop that calls
// `llvm.exp` or libm's `erff` is scalarized into one call per lane. These emitters write the
// function out as straight-line IR instead (range reduction, a minimax polynomial, bit
// manipulation of the exponent, selects for the special cases), so it works for `float` and
// for `<N x float>` of any N and the loop stays SIMD code. Each takes a value of type float
// or <N x float> and returns one of the same type.
//
// Accuracy (checked by tests/codegen/fast_math_test.cc against the C library in double
// precision over every special value and ~1e6 random inputs, with and without FMA):
//   exp      a few ulp; +inf above ln(FLT_MAX), correctly rounded denormals, 0 below
//            ln(2^-150), exp(+-inf) = +inf / 0, NaN in NaN out
//   erf      a few ulp, +-1 for |x| >= 4 (and +-inf), erf(-0) = -0, NaN in NaN out
//   tanh     a few ulp, +-1 for large |x|, tanh(-0) = -0, NaN in NaN out
//   sigmoid  a few ulp relative (also on the far negative side), NaN in NaN out
//   log      a few ulp; log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, denormals handled
//   expm1, log1p, sinh, cosh, asinh, acosh, atanh: a few ulp (bounds in the test), the C
//            library's special values (signed zeros, infinities, NaN outside the domain)
//   sin, cos, tan, asin, acos, atan: computed in float64 and rounded once (below 1 ulp), for
//            every float32 argument (sin/cos/tan reduce exactly, even at 1e38)
// The coefficients come from scripts/fast_math_coefficients.py (Remez exchange). The code
// is correct whether or not the backend contracts multiply-adds into FMAs.
#pragma once

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Value.h"

namespace kiln::codegen {

// True for float and <N x float>: the types these emitters accept.
bool IsFloat32OrVector(const llvm::Type* type);

// avx512 (exp, and tanh, sigmoid, expm1 through their exp): the code runs on AVX-512F, so
// vectors of 16 x 2^j lanes scale by 2^k with vscalefps (the same bits, fewer instructions).
// erf has no exp inside (its 2^k is one shift) and takes the flag only for the common
// signature.
llvm::Value* EmitFastExpF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512 = false);
llvm::Value* EmitFastErfF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512 = false);
llvm::Value* EmitFastTanhF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512 = false);
llvm::Value* EmitFastSigmoidF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512 = false);
llvm::Value* EmitFastLogF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastExpm1F32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512 = false);
llvm::Value* EmitFastLog1pF32(llvm::IRBuilderBase& b, llvm::Value* x);

// codegen/fast_math_trig.cc: computed in float64 inside, rounded once to float32.
llvm::Value* EmitFastSinF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastCosF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastTanF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastAsinF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastAcosF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastAtanF32(llvm::IRBuilderBase& b, llvm::Value* x);

// codegen/fast_math_hyperbolic.cc: from exp, expm1, log and log1p.
llvm::Value* EmitFastSinhF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastCoshF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastAsinhF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastAcoshF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastAtanhF32(llvm::IRBuilderBase& b, llvm::Value* x);

}  // namespace kiln::codegen
