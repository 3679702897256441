// IR-building helpers shared by the inline math emitters (codegen/fast_math*.cc): typed
// constants that splat for vector types, integer and float64 types of the same lane count,
// Horner evaluation, fabs / copysign / sqrt intrinsics and round-to-nearest without a
// float-to-int conversion. Internal to those files.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

namespace kiln::codegen::fast_math_ir {

// A float constant of `type` (float, double or a vector of them: a splat).
inline llvm::Constant* F(llvm::Type* type, double v) { return llvm::ConstantFP::get(type, v); }

// The integer type of `type`'s width and lane count: i32 for float, i64 for double.
inline llvm::Type* IntLike(llvm::IRBuilderBase& b, llvm::Type* type) {
  llvm::Type* lane = type->getScalarType()->isDoubleTy() ? b.getInt64Ty() : b.getInt32Ty();
  if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    return llvm::FixedVectorType::get(lane, vec->getNumElements());
  }
  return lane;
}

// double or <N x double> for float or <N x float>.
inline llvm::Type* DoubleLike(llvm::IRBuilderBase& b, llvm::Type* type) {
  if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    return llvm::FixedVectorType::get(b.getDoubleTy(), vec->getNumElements());
  }
  return b.getDoubleTy();
}

inline llvm::Constant* I(llvm::Type* int_type, int64_t v) {
  return llvm::ConstantInt::get(int_type, static_cast<uint64_t>(v), /*IsSigned=*/true);
}

inline llvm::Value* MulAdd(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
  return b.CreateFAdd(b.CreateFMul(x, y), z);
}

// c[0] + c[1] u + c[2] u^2 + ... by Horner's rule, in u's type.
template <typename T>
llvm::Value* Horner(llvm::IRBuilderBase& b, llvm::Value* u, std::initializer_list<T> c) {
  llvm::Type* type = u->getType();
  const T* coef = c.begin();
  size_t n = c.size();
  llvm::Value* acc = F(type, static_cast<double>(coef[n - 1]));
  for (size_t i = n - 1; i-- > 0;) acc = MulAdd(b, acc, u, F(type, static_cast<double>(coef[i])));
  return acc;
}

inline llvm::Value* Fabs(llvm::IRBuilderBase& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}

inline llvm::Value* CopySign(llvm::IRBuilderBase& b, llvm::Value* magnitude, llvm::Value* sign) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, sign);
}

// llvm.sqrt is one instruction (sqrtps / sqrtpd) on every x86-64, never a libm call.
inline llvm::Value* Sqrt(llvm::IRBuilderBase& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
}

// x rounded to the nearest integer (ties to even), for float64 x of any magnitude: adding
// 2^52 to |x| < 2^52 leaves no fraction bits, subtracting it again is exact; |x| >= 2^52 is
// an integer already. Written out because llvm.roundeven is a libm call on x86-64 without
// SSE4.1. NaN stays NaN.
inline llvm::Value* RoundF64(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Value* ax = Fabs(b, x);
  llvm::Value* rounded = b.CreateFSub(b.CreateFAdd(ax, F(type, 0x1p52)), F(type, 0x1p52));
  return b.CreateSelect(b.CreateFCmpOLT(ax, F(type, 0x1p52)), CopySign(b, rounded, x), x);
}

}  // namespace kiln::codegen::fast_math_ir
