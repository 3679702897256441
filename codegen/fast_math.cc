#include "codegen/fast_math.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "codegen/fast_math_ir.h"
#include "support/check.h"

// Coefficients: minimax polynomials from scripts/fast_math_coefficients.py (Remez exchange
// against mpmath at 40 digits, then rounded to float32 with the leading coefficient fixed
// first and the rest refitted). The comment above each table gives the fitted function,
// the interval and the error of the rounded polynomial. Multiply-adds are written as
// fmul + fadd: the backend fuses them into FMAs where the CPU has them
// (FPOpFusion::Fast); every step below is accurate either way.

namespace kiln::codegen {
namespace {

using namespace fast_math_ir;  // NOLINT: the IR helpers read better unqualified

// ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with 13 significant bits so that k * kLn2Hi is exact for
// |k| < 2^11.
constexpr float kLn2Hi = 0x1.62ep-1f;
constexpr float kLn2Lo = 0x1.0bfbe8p-15f;
constexpr float kLog2e = 0x1.715476p+0f;

}  // namespace

bool IsFloat32OrVector(const llvm::Type* type) { return type->getScalarType()->isFloatTy(); }

// exp(x) = 2^k exp(r), k = round(x / ln2), r = x - k ln2 (Cody-Waite, two parts of ln2), so
// |r| <= ln2 / 2. The rounding adds 1.5 * 2^23 to x / ln2: the float sum then holds k in
// its low mantissa bits (read back by a bitcast, no float-to-int conversion that a NaN would
// make poison), and subtracting the constant again gives k as a float. x is first clamped to
// [-104, 89]: exp(89) and everything above overflow to +inf through the scaling, exp(-104)
// and everything below round to 0, and k stays within [-150, 129]. 2^k is applied as two
// factors 2^(k/2) and 2^(k - k/2), both normal, so results in the denormal range are rounded
// once, correctly. NaN fails both clamp comparisons and propagates through the arithmetic.
namespace {

// x = k ln2 + r as EmitFastExpF32 reduces it (x already clamped to [-104, 89]): k as a float,
// r with |r| <= ln2 / 2, and the bits of the rounding sum, 0x4b400000 + (k + kExpBias),
// from which the exponent fields of powers of 2 are cut (ScaleByPow2, Pow2OfK).
struct ExpReduction {
  llvm::Value* k;  // float
  llvm::Value* r;
  llvm::Value* biased_bits;  // i32
};

// Twice the float exponent bias: the rounding sum carries k + 254, whose half is the biased
// exponent of 2^floor(k/2) and whose rest that of 2^(k - floor(k/2)).
constexpr int32_t kExpBias = 254;

ExpReduction ReduceExp(llvm::IRBuilderBase& b, llvm::Value* xc) {
  llvm::Type* type = xc->getType();
  llvm::Type* int_type = IntLike(b, type);
  // 1.5 * 2^23 + 254, exact: the sum's low mantissa bits are round(x / ln2) + 254 (an even
  // offset, so ties round as they would without it).
  constexpr float kShifter = 0x1.8p23f + kExpBias;
  llvm::Value* shifted = MulAdd(b, xc, F(type, kLog2e), F(type, kShifter));
  llvm::Value* k = b.CreateFSub(shifted, F(type, kShifter));
  llvm::Value* r = MulAdd(b, k, F(type, -kLn2Hi), xc);  // exact
  r = MulAdd(b, k, F(type, -kLn2Lo), r);
  return {k, r, b.CreateBitCast(shifted, int_type)};
}

// 2^k for k in [-126, 127] (expm1's |k| <= 24): the reduction's bits less 127 hold k + 127
// in their low bits, and shifted left by 23 the constant leaves the word.
llvm::Value* Pow2OfK(llvm::IRBuilderBase& b, const ExpReduction& red) {
  llvm::Type* int_type = red.biased_bits->getType();
  llvm::Value* bits = b.CreateShl(b.CreateSub(red.biased_bits, I(int_type, kExpBias - 127)), I(int_type, 23));
  return b.CreateBitCast(bits, red.k->getType());
}

// p * 2^k as two exact factors 2^floor(k/2) and 2^(k - floor(k/2)), both normal for k in
// [-150, 129], built from the reduction's bits with four integer operations: the bits are
// 0x4b400000 + (k + 254) with k + 254 in [104, 383]; half of them is 0x25a00000 +
// floor((k + 254) / 2), and the other half 0x25a00000 + the rest; shifted left by 23 the
// constants leave the word and each biased exponent (below 256) lands in the exponent field.
// Three operations fewer than from k itself, on targets without vscalefps (AVX2: the
// softmax's exp pass).
llvm::Value* ScaleByPow2(llvm::IRBuilderBase& b, llvm::Value* p, const ExpReduction& red) {
  llvm::Type* type = p->getType();
  llvm::Type* int_type = red.biased_bits->getType();
  llvm::Value* half = b.CreateLShr(red.biased_bits, I(int_type, 1));
  llvm::Value* rest = b.CreateSub(red.biased_bits, half);
  llvm::Value* first = b.CreateBitCast(b.CreateShl(half, I(int_type, 23)), type);
  llvm::Value* second = b.CreateBitCast(b.CreateShl(rest, I(int_type, 23)), type);
  return b.CreateFMul(b.CreateFMul(p, first), second);
}

// q(r) with exp(r) = 1 + r + r^2 q(r), |r| <= 0.35; relative error of exp 3.7e-9 (float32
// coefficients). The same q gives expm1(r) = r + r^2 q(r) with relative error below
// 3.7e-9 * |r| / |expm1(r)|, about as small.
llvm::Value* ExpQ(llvm::IRBuilderBase& b, llvm::Value* r) {
  return Horner(b, r, {0x1.fffffcp-2f, 0x1.555482p-3f, 0x1.55581ep-5f, 0x1.1245e4p-7f, 0x1.6b1c26p-10f});
}

// p * 2^k for exp's reduction (k a float holding an integer in [-150, 129]) with
// vscalefps, 16 lanes at a time: one instruction and one rounding, the same bits as the two
// exact factors of EmitFastExpF32 (p * 2^k is exact unless it is denormal, then rounded
// once either way). Measured on the softmax of 1024 x 1024 scores (AVX-512 Zen, one
// thread): the exp pass was 58 % of the kernel, eight of its ~24 vector operations the
// two factors. Null unless the value has 16 x 2^j lanes.
llvm::Value* ScaleByPow2Avx512(llvm::IRBuilderBase& b, llvm::Value* p, llvm::Value* k) {
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(p->getType());
  constexpr unsigned kZmmLanes = 16;
  if (vec == nullptr || vec->getNumElements() % kZmmLanes != 0) return nullptr;
  const unsigned zmms = vec->getNumElements() / kZmmLanes;
  if ((zmms & (zmms - 1)) != 0) return nullptr;
  llvm::Function* scalef = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(),
                                                           llvm::Intrinsic::x86_avx512_mask_scalef_ps_512);
  llvm::Type* zmm = llvm::FixedVectorType::get(b.getFloatTy(), kZmmLanes);
  constexpr int kCurrentRounding = 4;  // _MM_FROUND_CUR_DIRECTION
  std::vector<llvm::Value*> parts;
  for (unsigned at = 0; at < vec->getNumElements(); at += kZmmLanes) {
    std::vector<int> lanes;
    for (unsigned l = 0; l < kZmmLanes; ++l) lanes.push_back(static_cast<int>(at + l));
    llvm::Value* pp = vec->getNumElements() == kZmmLanes ? p : b.CreateShuffleVector(p, lanes);
    llvm::Value* kk = vec->getNumElements() == kZmmLanes ? k : b.CreateShuffleVector(k, lanes);
    parts.push_back(b.CreateCall(scalef, {pp, kk, llvm::UndefValue::get(zmm), b.getInt16(0xffff),
                                          b.getInt32(kCurrentRounding)}));
  }
  // Joined pairwise (a shufflevector concatenates two vectors of one length) until one
  // vector remains.
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    const unsigned n = llvm::cast<llvm::FixedVectorType>(parts[0]->getType())->getNumElements();
    std::vector<int> both;
    for (unsigned l = 0; l < 2 * n; ++l) both.push_back(static_cast<int>(l));
    for (size_t i = 0; i < parts.size(); i += 2) joined.push_back(b.CreateShuffleVector(parts[i], parts[i + 1], both));
    parts = std::move(joined);
  }
  return parts[0];
}

}  // namespace

llvm::Value* EmitFastExpF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOLT(x, F(type, -104.0f)), F(type, -104.0f), x);
  xc = b.CreateSelect(b.CreateFCmpOGT(xc, F(type, 89.0f)), F(type, 89.0f), xc);
  ExpReduction red = ReduceExp(b, xc);
  llvm::Value* r = red.r;
  llvm::Value* q = ExpQ(b, r);
  llvm::Value* p = MulAdd(b, MulAdd(b, q, r, F(type, 1.0f)), r, F(type, 1.0f));
  if (avx512) {
    if (llvm::Value* scaled = ScaleByPow2Avx512(b, p, red.k)) return scaled;
  }
  return ScaleByPow2(b, p, red);
}

// expm1(x) = 2^k expm1(r) + (2^k - 1) with exp's reduction, for |x| <= 16 (|k| <= 23: both
// terms exact, one rounding in the sum, and the sum is never much smaller than its first
// term, so expm1(r)'s relative error carries over). Beyond, exp(x) - 1 is what float32 can
// represent anyway (-1 below -16.6, exp(x) rounded above 16). -0 is returned as is.
llvm::Value* EmitFastExpm1F32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* ax = Fabs(b, x);
  llvm::Value* near = b.CreateFCmpOLE(ax, F(type, 16.0f));
  llvm::Value* xc = b.CreateSelect(near, x, F(type, 0.0f));
  ExpReduction red = ReduceExp(b, xc);
  llvm::Value* r = red.r;
  llvm::Value* em = MulAdd(b, b.CreateFMul(ExpQ(b, r), r), r, r);
  llvm::Value* scale = Pow2OfK(b, red);
  llvm::Value* mid = b.CreateFAdd(b.CreateFMul(scale, em), b.CreateFSub(scale, F(type, 1.0f)));
  llvm::Value* far = b.CreateFSub(EmitFastExpF32(b, x, avx512), F(type, 1.0f));
  llvm::Value* result = b.CreateSelect(near, mid, far);
  return b.CreateSelect(b.CreateFCmpOEQ(x, F(type, 0.0f)), x, result);
}

// |x| < 0.5: erf(x) = x + x Q(x^2). Otherwise erf(|x|) = 1 - erfc(|x|) with
// erfc(a) = 2^(L(a - 0.5) - 1), L a polynomial fitted to log2(erfc) + 1: no division and no
// exp's range reduction (L is the exponent already: k = round(L), r = L - k, 2^r by a
// polynomial, 2^(k-1) from the bits of the rounding sum). Written in u = a - 0.5 and offset
// by 1, L and its Horner steps are small where erfc is largest (L(0) = -0.06, erfc = 0.48)
// and their rounding costs least. |x| is clamped to 4, where erfc < 2^-25 and 1 - erfc
// rounds to 1, and the sign is copied back. Both sides are computed and one selected per
// lane. The same operations for every lane count and target (no vscalefps: 2^(k-1) is one
// shift), so scalar and vector code give the same bits.
//
// 19 multiplies and multiply-adds per vector, which bound it, where the previous method had
// 28 and a division (|x| < 0.875: x + x Q(x^2), degree 6; above, 1 - exp(-x^2) R(t) with
// t = 1 / (1 + |x|/2), degree 8, and a whole exp). R.erf on 1024 x 256, one thread, CPU time
// per call: 0.148 -> 0.102 ms on AVX-512 (Zen 4), 0.228 -> 0.163 ms on AVX2 (docs/codegen.md).
llvm::Value* EmitFastErfF32(llvm::IRBuilderBase& b, llvm::Value* x, bool /*avx512*/) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* int_type = IntLike(b, type);
  llvm::Value* one = F(type, 1.0f);
  llvm::Value* ax = Fabs(b, x);
  // Q on [0, 0.5^2], relative error of erf 2.7e-9 (float32 coefficients). x P(x^2) with
  // P(0) = 2/sqrt(pi) would lose 5e-8 to rounding that constant; Q(0) = 2/sqrt(pi) - 1.
  llvm::Value* s = b.CreateFMul(x, x);
  llvm::Value* q =
      Horner(b, s, {0x1.06eba8p-3f, -0x1.812734p-2f, 0x1.ce256ep-4f, -0x1.b66d84p-6f, 0x1.35780ep-8f});
  llvm::Value* small = MulAdd(b, x, q, x);
  // L on u in [0, 3.5], erfc(a) = 2^(L(u) - 1): error of erfc 0.084 ulp of erf (float32
  // coefficients; erf is in [0.52, 1) there, its ulp 2^-24).
  llvm::Value* a = b.CreateSelect(b.CreateFCmpOGT(ax, F(type, 4.0f)), F(type, 4.0f), ax);
  llvm::Value* u = b.CreateFSub(a, F(type, 0.5f));
  llvm::Value* l = Horner(b, u,
                          {-0x1.eec588p-5f, -0x1.526fbcp+1f, -0x1.19d156p+0f, -0x1.8c654p-4f, 0x1.745a7ap-6f,
                           -0x1.ef45c6p-9f, 0x1.4fef1cp-12f});
  // L is in [-24.94, -0.06] on [0, 3.5] (and below 1.01 for the small side's lanes, u in
  // [-0.5, 0)): adding 1.5 * 2^23 + 126 rounds it to k in the sum's low mantissa bits, which
  // then hold k + 126 in [101, 127]; shifted left by 23 they are the float 2^(k-1), a normal
  // number (the constant's bits leave the word). r = L - k is exact, |r| <= 1/2. A NaN gives
  // a NaN r, and so a NaN result.
  constexpr float kShifter = 0x1.8p23f + 126;
  llvm::Value* shifted = b.CreateFAdd(l, F(type, kShifter));
  llvm::Value* k = b.CreateFSub(shifted, F(type, kShifter));
  llvm::Value* r = b.CreateFSub(l, k);
  llvm::Value* scale = b.CreateBitCast(b.CreateShl(b.CreateBitCast(shifted, int_type), I(int_type, 23)), type);
  // 2^r = 1 + r P(r), relative error 6.4e-9 (float32 coefficients), and erf = 1 - 2^(k-1) 2^r
  // = (1 - 2^(k-1)) - (2^(k-1) r) P(r): the parentheses are exact (the first for k >= -23;
  // below, erfc < 2^-24.5 and the result is within 0.71 ulp of 1 either way), so 2^r itself
  // is never rounded and P's rounding counts times |r| <= 1/2: 0.84 ulp at most where
  // rounding 2^r first gave 1.02 (measured, FMA), for one subtraction more.
  llvm::Value* p = Horner(b, r,
                          {0x1.62e432p-1f, 0x1.ebfbe6p-3f, 0x1.c6ad6ep-5f, 0x1.3b2508p-7f, 0x1.5fe1a4p-10f,
                           0x1.4862e8p-13f});
  llvm::Value* head = b.CreateFSub(one, scale);
  llvm::Value* large = CopySign(b, b.CreateFSub(head, b.CreateFMul(b.CreateFMul(scale, r), p)), x);
  return b.CreateSelect(b.CreateFCmpOLT(ax, F(type, 0.5f)), small, large);
}

// |x| < 0.625: tanh(x) = x + x^3 P(x^2). Otherwise tanh(|x|) = (1 - e) / (1 + e) with
// e = exp(-2|x|) in [0, 0.29): no overflow, no cancellation, 1 once e underflows; the sign
// is copied back.
llvm::Value* EmitFastTanhF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* one = F(type, 1.0f);
  llvm::Value* ax = Fabs(b, x);
  // P on [0, 0.625^2], relative error of tanh 1.8e-10.
  llvm::Value* s = b.CreateFMul(x, x);
  llvm::Value* p = Horner(b, s,
                          {-0x1.555554p-2f, 0x1.11107ap-3f, -0x1.b9f188p-5f, 0x1.63a54ep-6f, -0x1.0c5eb8p-7f,
                           0x1.1a2788p-9f});
  llvm::Value* small = MulAdd(b, b.CreateFMul(x, s), p, x);
  llvm::Value* e = EmitFastExpF32(b, b.CreateFMul(ax, F(type, -2.0f)), avx512);
  llvm::Value* large = b.CreateFDiv(b.CreateFSub(one, e), b.CreateFAdd(one, e));
  // The sign of x on both sides: x^3 P(x^2) + x is +0 for x = -0.
  return CopySign(b, b.CreateSelect(b.CreateFCmpOLT(ax, F(type, 0.625f)), small, large), x);
}

// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, e = exp(-|x|) in (0, 1]:
// never overflows, and keeps relative accuracy on the far negative side.
llvm::Value* EmitFastSigmoidF32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* one = F(type, 1.0f);
  llvm::Value* e = EmitFastExpF32(b, b.CreateFNeg(Fabs(b, x)), avx512);
  llvm::Value* numerator = b.CreateSelect(b.CreateFCmpOLT(x, F(type, 0.0f)), e, one);
  return b.CreateFDiv(numerator, b.CreateFAdd(one, e));
}

// log(x) = k ln2 + log(1 + f), x = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact).
// k and m come from the bits: subtracting the bits of sqrt(1/2) makes the exponent field
// k and leaves m's mantissa, which the same offset turns back into m. Denormals are scaled
// by 2^23 first. Special inputs are selected at the end.
llvm::Value* EmitFastLogF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Type* int_type = IntLike(b, type);
  constexpr int32_t kSqrtHalfBits = 0x3f3504f3;
  llvm::Value* denormal = b.CreateFCmpOLT(x, F(type, 0x1p-126f));
  llvm::Value* xs = b.CreateSelect(denormal, b.CreateFMul(x, F(type, 0x1p23f)), x);
  llvm::Value* offset = b.CreateSub(b.CreateBitCast(xs, int_type), I(int_type, kSqrtHalfBits));
  llvm::Value* k = b.CreateAShr(offset, I(int_type, 23));
  llvm::Value* m_bits = b.CreateAdd(b.CreateAnd(offset, I(int_type, 0x7fffff)), I(int_type, kSqrtHalfBits));
  llvm::Value* f = b.CreateFSub(b.CreateBitCast(m_bits, type), F(type, 1.0f));
  llvm::Value* kf = b.CreateFAdd(b.CreateSIToFP(k, type), b.CreateSelect(denormal, F(type, -23.0f), F(type, 0.0f)));
  // log(1 + f) = f + f^2 P(f) on [sqrt(1/2) - 1, sqrt(2) - 1], relative error 2.2e-9.
  llvm::Value* p = Horner(b, f,
                          {-0x1p-1f, 0x1.555554p-2f, -0x1.ffffd4p-3f, 0x1.999a14p-3f, -0x1.5563b2p-3f, 0x1.248f28p-3f,
                           -0x1.fce734p-4f, 0x1.c40b0cp-4f, -0x1.bb2bcep-4f, 0x1.b37caep-4f, -0x1.e99e4ap-5f});
  llvm::Value* y = MulAdd(b, b.CreateFMul(f, f), p, f);
  llvm::Value* result = MulAdd(b, kf, F(type, kLn2Hi), MulAdd(b, kf, F(type, kLn2Lo), y));
  result = b.CreateSelect(b.CreateFCmpOEQ(x, F(type, INFINITY)), x, result);
  result = b.CreateSelect(b.CreateFCmpOEQ(x, F(type, 0.0f)), F(type, -INFINITY), result);
  // x < 0 and NaN: NaN.
  return b.CreateSelect(b.CreateFCmpOGE(x, F(type, 0.0f)), result, F(type, NAN));
}

// log1p(x) = log(u) + t / u, u = 1 + x rounded and t = (1 + x) - u its rounding error, exact
// by Knuth's two-sum (no magnitude order needed): log(u) is log's few ulp and t / u the first
// order correction, |t / u| <= 2^-24 |u| / |u|. Special inputs: log1p(+-0) = +-0, log1p(-1) =
// -inf (u = 0, where t / u would be 0 / 0), log1p(+inf) = +inf (where t is inf - inf), x < -1
// and NaN give NaN through log.
llvm::Value* EmitFastLog1pF32(llvm::IRBuilderBase& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  KILN_CHECK(IsFloat32OrVector(type));
  llvm::Value* one = F(type, 1.0f);
  llvm::Value* u = b.CreateFAdd(one, x);
  llvm::Value* x_part = b.CreateFSub(u, one);
  llvm::Value* one_part = b.CreateFSub(u, x_part);
  llvm::Value* t = b.CreateFAdd(b.CreateFSub(one, one_part), b.CreateFSub(x, x_part));
  llvm::Value* result = b.CreateFAdd(EmitFastLogF32(b, u), b.CreateFDiv(t, u));
  result = b.CreateSelect(b.CreateFCmpOEQ(u, F(type, 0.0f)), F(type, -INFINITY), result);
  result = b.CreateSelect(b.CreateFCmpOEQ(x, F(type, INFINITY)), x, result);
  return b.CreateSelect(b.CreateFCmpOEQ(x, F(type, 0.0f)), x, result);
}

}  // namespace kiln::codegen
