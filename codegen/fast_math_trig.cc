// Inline float32 sin, cos, tan, asin, acos, atan (codegen/fast_math.h), computed in float64
// inside: the float32 argument is widened, the reduction and the polynomial run in double
// (vector double where x is a vector) and the result is rounded once to float32. The
// polynomials' relative errors are around 1e-14, so the float32 results are correctly
// rounded but for rare cases a hair from a rounding boundary.
//
// sin, cos and tan reduce x exactly, whatever its size (a float32 reaches 2^128): x (24
// significant bits) times 2/pi cut into 24-bit chunks gives products exact in double; each is
// reduced modulo 4 exactly, and the residues are summed with two-sum so that the sum is known
// to about 2^-100 even after the cancellation that leaves the fraction r in [-1/2, 1/2] (the
// angle in quarter turns, r pi/2 in [-pi/4, pi/4]) and the quadrant. No table lookups, no
// branches: every lane does the same ten chunks.
//
// Coefficients and the chunks of 2/pi: scripts/fast_math_double_coefficients.py.
#include <cmath>
#include <cstdint>

#include "codegen/fast_math.h"
#include "codegen/fast_math_ir.h"
#include "support/check.h"

namespace kiln::codegen {
namespace {

using namespace fast_math_ir;  // NOLINT: the IR helpers read better unqualified

constexpr double kPiOver2 = 0x1.921fb54442d18p+0;
constexpr double kPiOver2Lo = 0x1.1a62633145c07p-54;
constexpr double kPiOver4 = 0x1.921fb54442d18p-1;
constexpr double kPi = 0x1.921fb54442d18p+1;

// 2/pi = sum_i kTwoOverPi[i] 2^(-24 (i + 1)): 240 bits, enough for the largest float32
// (2^128 x 2^-240 leaves an error of 2^-112 quarter turns; the float32 closest to a multiple
// of pi/2 is about 2^-30 quarter turns from it).
constexpr uint32_t kTwoOverPi[] = {0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd,
                                   0xc0db62, 0x95993c, 0x439041, 0xfe5163, 0xabdebb};

struct Reduced {
  llvm::Value* r;        // double: x - quadrant pi/2, in [-pi/4, pi/4]
  llvm::Value* quadrant;  // i64: the number of quarter turns modulo 4, in [0, 3]
};

Reduced ReduceQuarterTurns(llvm::IRBuilderBase& b, llvm::Value* xd) {
  llvm::Type* dt = xd->getType();
  llvm::Value* sum = F(dt, 0.0);
  llvm::Value* err = F(dt, 0.0);
  for (size_t i = 0; i < sizeof kTwoOverPi / sizeof kTwoOverPi[0]; ++i) {
    double chunk = std::ldexp(static_cast<double>(kTwoOverPi[i]), -24 * static_cast<int>(i + 1));
    llvm::Value* p = b.CreateFMul(xd, F(dt, chunk));  // 24 x 24 bits: exact
    // p modulo 4, in [-2, 2]: exact (p and 4 round(p / 4) are within 2 of each other).
    llvm::Value* residue = b.CreateFSub(p, b.CreateFMul(F(dt, 4.0), RoundF64(b, b.CreateFMul(p, F(dt, 0.25)))));
    // Two-sum: sum + err += residue, the rounding error of the addition kept in err.
    llvm::Value* s = b.CreateFAdd(sum, residue);
    llvm::Value* residue_part = b.CreateFSub(s, sum);
    llvm::Value* sum_part = b.CreateFSub(s, residue_part);
    err = b.CreateFAdd(err, b.CreateFAdd(b.CreateFSub(sum, sum_part), b.CreateFSub(residue, residue_part)));
    sum = s;
  }
  llvm::Value* n = RoundF64(b, sum);  // |sum| <= 20
  llvm::Value* f = b.CreateFAdd(b.CreateFSub(sum, n), err);
  llvm::Value* r = MulAdd(b, f, F(dt, kPiOver2), b.CreateFMul(f, F(dt, kPiOver2Lo)));
  // n mod 4 from the low bits of n + 1.5 * 2^52 (a bitcast: a NaN lane gives some bits, never
  // poison as a float-to-int conversion would).
  llvm::Type* it = IntLike(b, dt);
  llvm::Value* bits = b.CreateBitCast(b.CreateFAdd(n, F(dt, 0x1.8p52)), it);
  return {r, b.CreateAnd(bits, I(it, 3))};
}

// sin(r) and cos(r) for |r| <= pi/4, relative errors 5e-15 and 1e-16.
llvm::Value* SinPoly(llvm::IRBuilderBase& b, llvm::Value* r) {
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* s = Horner(b, z,
                          {-0x1.5555555552232p-3, 0x1.1111110c8636ep-7, -0x1.a019f937f7446p-13,
                           0x1.71d76c4bbff59p-19, -0x1.a96156a1f192fp-26});
  return MulAdd(b, b.CreateFMul(r, z), s, r);
}

llvm::Value* CosPoly(llvm::IRBuilderBase& b, llvm::Value* r) {
  llvm::Type* dt = r->getType();
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* c = Horner(b, z,
                          {0x1.5555555552de4p-5, -0x1.6c16c16722666p-10, 0x1.a019fa61ebc22p-16,
                           -0x1.27e00cb2fb495p-22, 0x1.1bbeff9884ec9p-29});
  return MulAdd(b, b.CreateFMul(z, z), c, MulAdd(b, z, F(dt, -0.5), F(dt, 1.0)));
}

enum class Trig { kSin, kCos, kTan };

// sin(x) by quadrant q: sin r, cos r, -sin r, -cos r; cos(x) is sin(x + pi/2), one quadrant
// on; tan(x) is sin r / cos r for even q and -cos r / sin r for odd q. +-inf and NaN give
// NaN (inf - inf in the reduction); sin(-0) and tan(-0) keep the sign.
llvm::Value* EmitTrig(llvm::IRBuilderBase& b, llvm::Value* x, Trig fn) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  Reduced red = ReduceQuarterTurns(b, b.CreateFPExt(x, dt));
  llvm::Value* s = SinPoly(b, red.r);
  llvm::Value* c = CosPoly(b, red.r);
  llvm::Type* it = red.quadrant->getType();
  llvm::Value* q = fn == Trig::kCos ? b.CreateAdd(red.quadrant, I(it, 1)) : red.quadrant;
  llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(q, I(it, 1)), I(it, 0));
  llvm::Value* result;
  if (fn == Trig::kTan) {
    result = b.CreateSelect(odd, b.CreateFNeg(b.CreateFDiv(c, s)), b.CreateFDiv(s, c));
  } else {
    llvm::Value* negative = b.CreateICmpNE(b.CreateAnd(q, I(it, 2)), I(it, 0));
    llvm::Value* v = b.CreateSelect(odd, c, s);
    result = b.CreateSelect(negative, b.CreateFNeg(v), v);
  }
  llvm::Value* narrowed = b.CreateFPTrunc(result, type);
  if (fn == Trig::kCos) return narrowed;
  return b.CreateSelect(b.CreateFCmpOEQ(x, F(type, 0.0)), x, narrowed);
}

// atan(t) for 0 <= t <= tan(pi/8) (and a little beyond), relative error 3e-14.
llvm::Value* AtanPoly(llvm::IRBuilderBase& b, llvm::Value* t) {
  llvm::Value* z = b.CreateFMul(t, t);
  llvm::Value* p = Horner(b, z,
                          {-0x1.555555550bc8ap-2, 0x1.9999992bb9108p-3, -0x1.24922d01bd354p-3, 0x1.c715717e8a078p-4,
                           -0x1.73e0c720f69b2p-4, 0x1.35fbb242ac2ddp-4, -0x1.e26b3585443c2p-5, 0x1.f9a8069f2dcd9p-6});
  return MulAdd(b, b.CreateFMul(t, z), p, t);
}

// asin(x) for 0 <= x <= 1/2, relative error 6e-14.
llvm::Value* AsinPoly(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Value* z = b.CreateFMul(x, x);
  llvm::Value* p = Horner(b, z,
                          {0x1.555555565bc18p-3, 0x1.333331f126befp-4, 0x1.6db7632c886cap-5, 0x1.f1ab2dc7961cbp-6,
                           0x1.7028fb9f247adp-6, 0x1.0e0995965605ep-6, 0x1.30fb66fdc7cf6p-6, -0x1.724f25328cd70p-9,
                           0x1.059347fb45c53p-5});
  return MulAdd(b, b.CreateFMul(x, z), p, x);
}

// asin(a) for 1/2 < a <= 1 as pi/2 - 2 asin(w), w = sqrt((1 - a) / 2) <= 1/2; returns
// asin(w) (the caller scales it). a > 1 gives sqrt of a negative: NaN.
llvm::Value* AsinOfHalfComplement(llvm::IRBuilderBase& b, llvm::Value* a) {
  llvm::Type* dt = a->getType();
  llvm::Value* w = Sqrt(b, b.CreateFMul(b.CreateFSub(F(dt, 1.0), a), F(dt, 0.5)));
  return AsinPoly(b, w);
}

}  // namespace

llvm::Value* EmitFastSinF32(llvm::IRBuilderBase& b, llvm::Value* x) { return EmitTrig(b, x, Trig::kSin); }
llvm::Value* EmitFastCosF32(llvm::IRBuilderBase& b, llvm::Value* x) { return EmitTrig(b, x, Trig::kCos); }
llvm::Value* EmitFastTanF32(llvm::IRBuilderBase& b, llvm::Value* x) { return EmitTrig(b, x, Trig::kTan); }

// atan(|x|): above 1 it is pi/2 - atan(1/|x|); above tan(pi/8) pi/4 + atan((t - 1)/(t + 1)),
// which maps [tan(pi/8), 1] into [-tan(pi/8), 0]. The sign of x is copied back (atan(-0) =
// -0, atan(+-inf) = +-pi/2, NaN in NaN out).
llvm::Value* EmitFastAtanF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  llvm::Value* xd = b.CreateFPExt(x, dt);
  llvm::Value* a = Fabs(b, xd);
  llvm::Value* inverted = b.CreateFCmpOGT(a, F(dt, 1.0));
  llvm::Value* t = b.CreateSelect(inverted, b.CreateFDiv(F(dt, 1.0), a), a);
  llvm::Value* shifted = b.CreateFCmpOGT(t, F(dt, 0x1.a827999fcef32p-2));  // tan(pi/8)
  llvm::Value* u = b.CreateSelect(shifted, b.CreateFDiv(b.CreateFSub(t, F(dt, 1.0)), b.CreateFAdd(t, F(dt, 1.0))), t);
  llvm::Value* at = b.CreateFAdd(AtanPoly(b, u), b.CreateSelect(shifted, F(dt, kPiOver4), F(dt, 0.0)));
  at = b.CreateSelect(inverted, b.CreateFSub(F(dt, kPiOver2), at), at);
  return b.CreateFPTrunc(CopySign(b, at, xd), type);
}

// asin(|x|) = AsinPoly(|x|) up to 1/2, pi/2 - 2 asin(sqrt((1 - |x|) / 2)) beyond; the sign
// is copied back. |x| > 1 and NaN give NaN.
llvm::Value* EmitFastAsinF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  llvm::Value* xd = b.CreateFPExt(x, dt);
  llvm::Value* a = Fabs(b, xd);
  llvm::Value* small = AsinPoly(b, a);
  llvm::Value* large = MulAdd(b, AsinOfHalfComplement(b, a), F(dt, -2.0), F(dt, kPiOver2));
  llvm::Value* result = b.CreateSelect(b.CreateFCmpOLE(a, F(dt, 0.5)), small, large);
  return b.CreateFPTrunc(CopySign(b, result, xd), type);
}

// acos(x) = pi/2 - asin(x) for |x| <= 1/2; 2 asin(w) for x > 1/2 and pi - 2 asin(w) for
// x < -1/2, w = sqrt((1 - |x|) / 2). |x| > 1 and NaN give NaN.
llvm::Value* EmitFastAcosF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* dt = DoubleLike(b, type);
  llvm::Value* xd = b.CreateFPExt(x, dt);
  llvm::Value* a = Fabs(b, xd);
  llvm::Value* small = b.CreateFSub(F(dt, kPiOver2), CopySign(b, AsinPoly(b, a), xd));
  llvm::Value* twice = b.CreateFMul(AsinOfHalfComplement(b, a), F(dt, 2.0));
  llvm::Value* large = b.CreateSelect(b.CreateFCmpOGT(xd, F(dt, 0.0)), twice, b.CreateFSub(F(dt, kPi), twice));
  llvm::Value* result = b.CreateSelect(b.CreateFCmpOLE(a, F(dt, 0.5)), small, large);
  return b.CreateFPTrunc(result, type);
}

}  // namespace kiln::codegen
