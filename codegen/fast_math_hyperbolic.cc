// Inline float32 sinh, cosh, asinh, acosh, atanh (codegen/fast_math.h), built on the inline
// exp, expm1, log and log1p so that they stay SIMD code, with each formula chosen so that no
// step cancels or overflows early. The arguments of log1p in asinh, acosh and atanh are
// formed in float64, where they are exact enough, and rounded once to float32; log1p's
// condition number there is at most 1, so the few-ulp accuracy of log1p carries over.
#include <cmath>

#include "codegen/fast_math.h"
#include "codegen/fast_math_ir.h"
#include "support/check.h"

namespace kiln::codegen {
namespace {

using namespace fast_math_ir;  // NOLINT: the IR helpers read better unqualified

constexpr float kLn2 = 0x1.62e43p-1f;

// Above 88, where e^-|x| is far below an ulp of e^|x|, sinh and cosh are e^|x| / 2, computed
// as exp(|x| - s) * (e^s / 2) with s = 2 kLn2Hi: the subtraction is exact (s has 13 bits,
// |x| in [64, 128) is a multiple of 2^-17), exp(|x| - s) stays finite up to where sinh and
// cosh overflow (89.416), and e^s / 2 (just below 2) is one float constant. Below 88,
// exp(|x|) cannot overflow.
constexpr float kExpSafe = 88.0f;
constexpr float kShift = 2 * 0x1.62ep-1f;

llvm::Value* HalfExp(llvm::IRBuilderBase& b, llvm::Value* a) {
  llvm::Type* type = a->getType();
  const double factor = std::exp(static_cast<double>(kShift)) / 2;
  return b.CreateFMul(EmitFastExpF32(b, b.CreateFSub(a, F(type, kShift))), F(type, factor));
}

// log(|x|) + ln 2, asinh and acosh for |x| >= 2^20, where the neglected terms (1/(4 x^2)) are
// below 2^-40 of the result.
constexpr float kLarge = 0x1p20f;

llvm::Value* LogTwice(llvm::IRBuilderBase& b, llvm::Value* a) {
  return b.CreateFAdd(EmitFastLogF32(b, a), F(a->getType(), kLn2));
}

}  // namespace

// sinh(|x|) = (m + m / (m + 1)) / 2 with m = expm1(|x|): both terms positive, no cancellation
// near 0 (sinh(x) ~ x keeps its relative accuracy). The sign is copied back.
llvm::Value* EmitFastSinhF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* a = Fabs(b, x);
  llvm::Value* big = b.CreateFCmpOGT(a, F(type, kExpSafe));
  llvm::Value* m = EmitFastExpm1F32(b, b.CreateSelect(big, F(type, kExpSafe), a));
  llvm::Value* mid = b.CreateFMul(b.CreateFAdd(m, b.CreateFDiv(m, b.CreateFAdd(m, F(type, 1.0f)))), F(type, 0.5f));
  return CopySign(b, b.CreateSelect(big, HalfExp(b, a), mid), x);
}

// cosh(x) = e / 2 + 1 / (2 e), e = exp(|x|).
llvm::Value* EmitFastCoshF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* a = Fabs(b, x);
  llvm::Value* big = b.CreateFCmpOGT(a, F(type, kExpSafe));
  llvm::Value* e = EmitFastExpF32(b, b.CreateSelect(big, F(type, kExpSafe), a));
  llvm::Value* mid = MulAdd(b, e, F(type, 0.5f), b.CreateFDiv(F(type, 0.5f), e));
  return b.CreateSelect(big, HalfExp(b, a), mid);
}

// asinh(|x|) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) (that argument is a + sqrt(1 + a^2) - 1
// without the cancellation), log(a) + ln 2 from 2^20 on. The sign is copied back.
llvm::Value* EmitFastAsinhF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  llvm::Value* a = Fabs(b, x);
  llvm::Value* ad = b.CreateFPExt(a, dt);
  llvm::Value* a2 = b.CreateFMul(ad, ad);
  llvm::Value* arg = b.CreateFAdd(ad, b.CreateFDiv(a2, b.CreateFAdd(F(dt, 1.0), Sqrt(b, b.CreateFAdd(F(dt, 1.0), a2)))));
  llvm::Value* near = EmitFastLog1pF32(b, b.CreateFPTrunc(arg, type));
  llvm::Value* large = b.CreateFCmpOGE(a, F(type, kLarge));
  return CopySign(b, b.CreateSelect(large, LogTwice(b, a), near), x);
}

// acosh(x) = log1p(t + sqrt(t (t + 2))), t = x - 1 (exact in double), log(x) + ln 2 from 2^20
// on; NaN below 1; acosh(+inf) = +inf.
llvm::Value* EmitFastAcoshF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  llvm::Value* t = b.CreateFSub(b.CreateFPExt(x, dt), F(dt, 1.0));
  llvm::Value* arg = b.CreateFAdd(t, Sqrt(b, b.CreateFMul(t, b.CreateFAdd(t, F(dt, 2.0)))));
  llvm::Value* near = EmitFastLog1pF32(b, b.CreateFPTrunc(arg, type));
  llvm::Value* large = b.CreateFCmpOGE(x, F(type, kLarge));
  // Below 1 (NaN included) the answer is NaN: for x far below -1, t + sqrt(t (t + 2))
  // cancels to about -1 and would not give NaN reliably.
  llvm::Value* result = b.CreateSelect(large, LogTwice(b, x), near);
  return b.CreateSelect(b.CreateFCmpOGE(x, F(type, 1.0f)), result, F(type, NAN));
}

// atanh(|x|) = log1p(2a / (1 - a)) / 2: atanh(+-1) = +-inf (2 / 0), |x| > 1 gives log1p of
// a number below -2: NaN. The sign is copied back.
llvm::Value* EmitFastAtanhF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  llvm::Value* ad = b.CreateFPExt(Fabs(b, x), dt);
  llvm::Value* arg = b.CreateFDiv(b.CreateFMul(ad, F(dt, 2.0)), b.CreateFSub(F(dt, 1.0), ad));
  llvm::Value* half = b.CreateFMul(EmitFastLog1pF32(b, b.CreateFPTrunc(arg, type)), F(type, 0.5f));
  return CopySign(b, half, x);
}

}  // namespace kiln::codegen
