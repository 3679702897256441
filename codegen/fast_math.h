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
// The coefficients come from scripts/fast_math_coefficients.py (Remez exchange). The code
// is correct whether or not the backend contracts multiply-adds into FMAs.
#pragma once

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Value.h"

namespace kiln::codegen {

// True for float and <N x float>: the types these emitters accept.
bool IsFloat32OrVector(const llvm::Type* type);

llvm::Value* EmitFastExpF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastErfF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastTanhF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastSigmoidF32(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastLogF32(llvm::IRBuilderBase& b, llvm::Value* x);

}  // namespace kiln::codegen
