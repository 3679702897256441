#include "codegen/spirv_math.h"

#include <cmath>
#include <map>

namespace kiln::codegen {

namespace {

using spv::Op;

// Arithmetic on values of one float type, named so the formulas below read as formulas.
class FloatMath {
 public:
  FloatMath(SpirvFunctionWriter& w, int bits)
      : w_(w), b_(w.builder()), bits_(bits), type_(b_.TypeFloat(bits)), int_(b_.TypeInt(32)) {}

  std::optional<uint32_t> Call(const std::string& op, const std::vector<uint32_t>& args) {
    const uint32_t x = args[0];
    if (op == "sqrt") return Glsl(GLSLstd450Sqrt, x);
    if (op == "rsqrt") return Div(C(1), Glsl(GLSLstd450Sqrt, x));
    if (op == "fabs") return Abs(x);
    if (op == "floor") return Glsl(GLSLstd450Floor, x);
    if (op == "ceil") return Glsl(GLSLstd450Ceil, x);
    if (op == "round") return Glsl(GLSLstd450RoundEven, x);
    if (op == "fmod" && args.size() == 2) {
      // OpFRem is x - y * trunc(x / y) on some drivers: NaN for an infinite y, where C's
      // fmod gives x (a finite x; an infinite x stays NaN).
      uint32_t r = w_.Value(Op::OpFRem, type_, {x, args[1]});
      return Sel(w_.Bool(Op::OpLogicalAnd, IsInf(args[1]), w_.Value(Op::OpLogicalNot, b_.TypeBool(), {IsInf(x)})), x, r);
    }
    if (op == "fma" && args.size() == 3) {
      // GLSL.std.450 Fma may round twice (lavapipe does, even decorated NoContraction):
      // float32 is computed exactly in float64 instead; float64 has nothing wider.
      return bits_ == 32 ? FusedMultiplyAdd32(x, args[1], args[2]) : w_.Glsl(type_, GLSLstd450Fma, {x, args[1], args[2]});
    }
    if (op == "exp") return Exp(x);
    if (op == "log") return Log(x);
    if (op == "pow" && args.size() == 2) return Pow(x, args[1]);
    if (op == "sigmoid") return Div(C(1), Add(C(1), Exp(Neg(x))));
    if (op == "log1p") return Log1p(x);
    if (op == "expm1") return Expm1(x);
    if (op == "atan") return Atan(x);
    // asin x = atan(x / sqrt(1 - x^2)), acos x = 2 atan(sqrt((1 - x) / (1 + x))): exact
    // at +-1 (through infinities), NaN beyond.
    if (op == "asin") return Atan(Div(x, Glsl(GLSLstd450Sqrt, Mul(Sub(C(1), x), Add(C(1), x)))));
    if (op == "acos") return Mul(C(2), Atan(Glsl(GLSLstd450Sqrt, Div(Sub(C(1), x), Add(C(1), x)))));
    if (op == "sinh") return Sinh(x);
    if (op == "cosh") return Cosh(x);
    if (bits_ == 32) {
      static const std::map<std::string, GLSLstd450> kGlsl = {
          {"tanh", GLSLstd450Tanh},   {"tan", GLSLstd450Tan},     {"asinh", GLSLstd450Asinh},
          {"acosh", GLSLstd450Acosh}, {"atanh", GLSLstd450Atanh},
      };
      if (auto it = kGlsl.find(op); it != kGlsl.end()) return Glsl(it->second, x);
      if (op == "sin") return SinCos32(x, false);
      if (op == "cos") return SinCos32(x, true);
      if (op == "erf") return Erf32(x);
      return std::nullopt;
    }
    if (op == "sin") return SinCos64(x, false);
    if (op == "cos") return SinCos64(x, true);
    if (op == "tan") return Div(SinCos64(x, false), SinCos64(x, true));
    if (op == "tanh") return Tanh64(x);
    if (op == "erf") return Erf64(x);
    if (op == "atanh") return Mul(C(0.5), Log1p(Div(Mul(C(2), x), Sub(C(1), x))));
    if (op == "asinh") {
      uint32_t a = Abs(x);
      uint32_t small = Log1p(Add(a, Div(Mul(a, a), Add(C(1), Glsl(GLSLstd450Sqrt, Add(C(1), Mul(a, a)))))));
      uint32_t r = Sel(Lt(C(1e150), a), Add(Log(a), C(M_LN2)), small);  // a * a would overflow
      return Sel(Lt(x, C(0)), Neg(r), r);
    }
    if (op == "acosh") {
      uint32_t r = Log(Add(x, Glsl(GLSLstd450Sqrt, Sub(Mul(x, x), C(1)))));
      return Sel(Lt(C(1e150), x), Add(Log(x), C(M_LN2)), r);
    }
    return std::nullopt;
  }

 private:
  uint32_t C(double v) { return b_.ConstantFloat(bits_, v); }
  uint32_t Add(uint32_t a, uint32_t b) { return w_.Value(Op::OpFAdd, type_, {a, b}); }
  uint32_t Sub(uint32_t a, uint32_t b) { return w_.Value(Op::OpFSub, type_, {a, b}); }
  uint32_t Mul(uint32_t a, uint32_t b) { return w_.Value(Op::OpFMul, type_, {a, b}); }
  uint32_t Div(uint32_t a, uint32_t b) { return w_.Value(Op::OpFDiv, type_, {a, b}); }
  uint32_t Neg(uint32_t a) { return w_.Value(Op::OpFNegate, type_, {a}); }
  uint32_t Abs(uint32_t a) { return Glsl(GLSLstd450FAbs, a); }
  uint32_t Glsl(GLSLstd450 inst, uint32_t a) { return w_.Glsl(type_, inst, {a}); }
  uint32_t Sel(uint32_t c, uint32_t a, uint32_t b) { return w_.Select(type_, c, a, b); }
  uint32_t Lt(uint32_t a, uint32_t b) { return w_.Bool(Op::OpFOrdLessThan, a, b); }
  uint32_t Eq(uint32_t a, uint32_t b) { return w_.Bool(Op::OpFOrdEqual, a, b); }
  uint32_t Or(uint32_t a, uint32_t b) { return w_.Bool(Op::OpLogicalOr, a, b); }
  uint32_t IsNan(uint32_t a) { return w_.Value(Op::OpIsNan, b_.TypeBool(), {a}); }
  uint32_t IsInf(uint32_t a) { return w_.Value(Op::OpIsInf, b_.TypeBool(), {a}); }

  // sum c[k] z^k, c highest degree first (Horner).
  uint32_t Poly(uint32_t z, const std::vector<double>& c) {
    uint32_t acc = C(c[0]);
    for (size_t i = 1; i < c.size(); ++i) acc = Add(Mul(acc, z), C(c[i]));
    return acc;
  }
  // Taylor coefficients sign^k / (first + step * k)!, k = 0..n, highest degree first.
  static std::vector<double> FactorialSeries(int n, int first, int step, bool alternate) {
    std::vector<double> c;
    for (int k = 0; k <= n; ++k) {
      double f = 1;
      for (int i = 2; i <= first + step * k; ++i) f *= i;
      c.insert(c.begin(), (alternate && k % 2 ? -1.0 : 1.0) / f);
    }
    return c;
  }

  uint32_t Exp(uint32_t x) { return ExpReduced(x); }
  uint32_t Log(uint32_t x) { return bits_ == 32 ? Glsl(GLSLstd450Log, x) : Log64(x); }

  // exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in two parts (|r| <= 0.35;
  // n ln2_hi is exact), exp(r) by its Taylor series (to r^14 / 14! for float64, r^8 / 8! for
  // float32). GLSL's Exp is not used for float32 either: drivers compute it as
  // exp2(x * log2 e), whose rounding costs |x| ulp (3e-6 at x = 50).
  uint32_t ExpReduced(uint32_t x) {
    const bool f64 = bits_ == 64;
    const double ln2_hi = f64 ? 6.93147180369123816490e-01 : 0.693145751953125;
    const double ln2_lo = f64 ? 1.90821492927058770002e-10 : 1.428606765330187045e-06;
    uint32_t in_range = w_.Bool(Op::OpLogicalAnd, Lt(C(f64 ? -746 : -104), x), Lt(x, C(f64 ? 710 : 89)));
    uint32_t n = Glsl(GLSLstd450RoundEven, Mul(Sel(in_range, x, C(0)), C(1 / M_LN2)));
    uint32_t r = Sub(Sub(x, Mul(n, C(ln2_hi))), Mul(n, C(ln2_lo)));
    uint32_t p = Poly(r, FactorialSeries(f64 ? 14 : 8, 0, 1, false));
    uint32_t scaled = w_.Glsl(type_, GLSLstd450Ldexp, {p, w_.Value(Op::OpConvertFToS, int_, {n})});
    uint32_t out = Sel(Lt(x, C(0)), C(0), C(INFINITY));
    return Sel(IsNan(x), x, Sel(in_range, scaled, out));
  }

  // log(x) = e ln 2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s),
  // s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^23.
  uint32_t Log64(uint32_t x) {
    constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
    uint32_t parts = w_.Value(Op::OpExtInst, b_.TypeStruct({type_, int_}),
                              {b_.GlslStd450(), static_cast<uint32_t>(GLSLstd450FrexpStruct), x});
    uint32_t m = w_.Value(Op::OpCompositeExtract, type_, {parts, 0});
    uint32_t e = w_.Value(Op::OpCompositeExtract, int_, {parts, 1});
    uint32_t small = Lt(m, C(M_SQRT1_2));
    m = Sel(small, Mul(m, C(2)), m);
    e = w_.Select(int_, small, w_.Value(Op::OpISub, int_, {e, b_.ConstantInt(32, 1)}), e);
    uint32_t f = Sub(m, C(1));
    uint32_t s = Div(f, Add(C(2), f));
    std::vector<double> series;
    for (int k = 11; k >= 0; --k) series.push_back(2.0 / (2 * k + 1));
    uint32_t log_m = Mul(s, Poly(Mul(s, s), series));
    uint32_t ed = w_.Value(Op::OpConvertSToF, type_, {e});
    uint32_t r = Add(Mul(ed, C(kLn2Hi)), Add(log_m, Mul(ed, C(kLn2Lo))));
    r = Sel(Eq(x, C(0)), C(-INFINITY), r);
    r = Sel(Lt(x, C(0)), C(NAN), r);
    return Sel(Or(IsNan(x), IsInf(x)), Sel(Lt(x, C(0)), C(NAN), x), r);
  }

  // sin or cos: x = k pi/2 + r (pi/2 in three parts of 33 bits: k * part is exact for
  // |k| < 2^20), the quadrant k mod 4 picks +-sin(r) or +-cos(r).
  // fma(a, b, c) for float32 a, b, c with one rounding, from float64 operations that each
  // round once (NoContraction): a * b is exact in float64 (48 significant bits); the sum
  // p + c is rounded to odd (TwoSum gives its error e; a nonzero e with an even last bit
  // moves the sum one unit toward e), and a float64 rounded to odd rounds to float32 as the
  // exact value would, having 2 or more bits beyond float32's 24 (Boldo and Melquiond,
  // "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd").
  uint32_t FusedMultiplyAdd32(uint32_t a, uint32_t b, uint32_t c) {
    const uint32_t f64 = b_.TypeFloat(64), u64 = b_.TypeInt(64), f32 = b_.TypeFloat(32);
    auto wide = [&](uint32_t v) { return w_.Value(Op::OpFConvert, f64, {v}); };
    auto add = [&](uint32_t x, uint32_t y) { return w_.Value(Op::OpFAdd, f64, {x, y}); };
    auto sub = [&](uint32_t x, uint32_t y) { return w_.Value(Op::OpFSub, f64, {x, y}); };
    const uint32_t p = w_.Value(Op::OpFMul, f64, {wide(a), wide(b)});
    const uint32_t q = wide(c);
    const uint32_t s = add(p, q);
    const uint32_t bp = sub(s, p);
    const uint32_t e = add(sub(p, sub(s, bp)), sub(q, bp));
    const uint32_t bits = w_.Value(Op::OpBitcast, u64, {s});
    const uint32_t one = b_.ConstantInt(64, 1);
    const uint32_t zero = b_.ConstantFloat(64, 0);
    const uint32_t even = w_.Bool(Op::OpIEqual, w_.Value(Op::OpBitwiseAnd, u64, {bits, one}), b_.ConstantInt(64, 0));
    const uint32_t inexact = w_.Bool(Op::OpFUnordNotEqual, e, zero);
    // |s| grows by one unit when e has s's sign, shrinks otherwise.
    const uint32_t same_sign = w_.Bool(Op::OpLogicalEqual, w_.Bool(Op::OpFOrdLessThan, s, zero), w_.Bool(Op::OpFOrdLessThan, e, zero));
    const uint32_t nudged = w_.Select(u64, same_sign, w_.Value(Op::OpIAdd, u64, {bits, one}), w_.Value(Op::OpISub, u64, {bits, one}));
    // Only for a finite sum: an inf or NaN sum (e is then NaN) passes through.
    const uint32_t finite = w_.Value(Op::OpLogicalNot, b_.TypeBool(),
                                     {w_.Value(Op::OpLogicalOr, b_.TypeBool(), {IsInf(s), IsNan(s)})});
    const uint32_t adjust = w_.Value(Op::OpLogicalAnd, b_.TypeBool(),
                                     {finite, w_.Value(Op::OpLogicalAnd, b_.TypeBool(), {even, inexact})});
    const uint32_t odd = w_.Value(Op::OpBitcast, f64, {w_.Select(u64, adjust, nudged, bits)});
    return w_.Value(Op::OpFConvert, f32, {odd});
  }

  uint32_t SinCos64(uint32_t x, bool cosine) {
    constexpr double kPio2_1 = 1.57079632673412561417e+00, kPio2_2 = 6.07710050630396597660e-11,
                     kPio2_3 = 2.02226624871116645580e-21;
    uint32_t k = Glsl(GLSLstd450RoundEven, Mul(x, C(M_2_PI)));
    uint32_t r = Sub(Sub(Sub(x, Mul(k, C(kPio2_1))), Mul(k, C(kPio2_2))), Mul(k, C(kPio2_3)));
    uint32_t z = Mul(r, r);
    uint32_t sin_r = Mul(r, Poly(z, FactorialSeries(8, 1, 2, true)));
    uint32_t cos_r = Poly(z, FactorialSeries(8, 0, 2, true));
    // The quadrant from k, kept finite (a NaN or infinite x gives NaN through r anyway).
    uint32_t finite_k = Sel(Lt(Abs(k), C(1e9)), k, C(0));
    uint32_t q = w_.Value(Op::OpBitwiseAnd, int_,
                          {w_.Value(Op::OpConvertFToS, int_, {finite_k}), b_.ConstantInt(32, 3)});
    if (cosine) q = w_.Value(Op::OpIAdd, int_, {q, b_.ConstantInt(32, 1)});  // cos x = sin(x + pi/2)
    auto quadrant = [&](int v) {
      return w_.Bool(Op::OpIEqual, w_.Value(Op::OpBitwiseAnd, int_, {q, b_.ConstantInt(32, 3)}), b_.ConstantInt(32, v));
    };
    return Sel(quadrant(0), sin_r, Sel(quadrant(1), cos_r, Sel(quadrant(2), Neg(sin_r), Neg(cos_r))));
  }

  // float32 sin or cos for every x: |x| * 2/pi mod 4 exactly enough by Payne and Hanek's
  // method in 64-bit integers (drivers' reductions lose everything for large x: cos(3e38)
  // came out 1). With x = m 2^e (m the 24-bit significand), only the 64 bits of 2/pi from
  // 2^-(e-1) down matter modulo 4: m times that window, modulo 2^64, holds the quadrant in
  // its top 2 bits and the fraction below (error under 2^-38). |x| <= pi/4 needs no reduction.
  uint32_t SinCos32(uint32_t x, bool cosine) {
    const uint32_t u32 = b_.TypeInt(32), u64 = b_.TypeInt(64);
    auto k32 = [&](uint64_t v) { return b_.ConstantInt(32, v); };
    auto k64 = [&](uint64_t v) { return b_.ConstantInt(64, v); };
    auto op32 = [&](Op o, uint32_t a, uint32_t b) { return w_.Value(o, u32, {a, b}); };
    auto op64 = [&](Op o, uint32_t a, uint32_t b) { return w_.Value(o, u64, {a, b}); };
    // The fraction bits of 2/pi, 32 to a word.
    static constexpr uint32_t kTwoOverPi[] = {0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041};
    auto word = [&](uint32_t index) {  // kTwoOverPi[index], index in [0, 5]
      uint32_t w = k32(kTwoOverPi[5]);
      for (int i = 4; i >= 0; --i) w = w_.Select(u32, w_.Bool(Op::OpIEqual, index, k32(i)), k32(kTwoOverPi[i]), w);
      return w_.Value(Op::OpUConvert, u64, {w});
    };
    uint32_t a = Abs(x);
    uint32_t bits = w_.Value(Op::OpBitcast, u32, {a});
    uint32_t biased = op32(Op::OpShiftRightLogical, bits, k32(23));
    uint32_t m = w_.Value(Op::OpUConvert, u64, {op32(Op::OpBitwiseOr, op32(Op::OpBitwiseAnd, bits, k32(0x7fffff)), k32(0x800000))});
    // The window's first bit is bit p = biased - 151 of 2/pi (1-based; none at or below 0).
    uint32_t p = w_.Value(Op::OpISub, u32, {biased, k32(151)});
    uint32_t p_positive = w_.Bool(Op::OpSGreaterThan, p, k32(0));
    uint32_t p1 = w_.Select(u32, p_positive, w_.Value(Op::OpISub, u32, {p, k32(1)}), k32(0));
    uint32_t index = op32(Op::OpShiftRightLogical, p1, k32(5));
    uint32_t offset = op32(Op::OpBitwiseAnd, p1, k32(31));
    uint32_t hi = op64(Op::OpBitwiseOr, op64(Op::OpShiftLeftLogical, word(index), k64(32)), word(op32(Op::OpIAdd, index, k32(1))));
    uint32_t lo = word(op32(Op::OpIAdd, index, k32(2)));
    uint32_t offset64 = w_.Value(Op::OpUConvert, u64, {offset});
    uint32_t spill = op64(Op::OpShiftRightLogical, lo, op64(Op::OpISub, k64(32), offset64));  // offset 0: 32, all out
    uint32_t general = op64(Op::OpBitwiseOr, op64(Op::OpShiftLeftLogical, hi, offset64),
                            w_.Select(u64, w_.Bool(Op::OpIEqual, offset, k32(0)), k64(0), spill));
    // p <= 0: the first two words shifted right by 1 - p (in [1, 26] for |x| > pi/4).
    uint32_t head = op64(Op::OpBitwiseOr, op64(Op::OpShiftLeftLogical, word(k32(0)), k64(32)), word(k32(1)));
    uint32_t right = w_.Value(Op::OpUConvert, u64, {w_.Value(Op::OpISub, u32, {k32(1), w_.Select(u32, p_positive, k32(1), p)})});
    uint32_t window = w_.Select(u64, p_positive, general, op64(Op::OpShiftRightLogical, head, right));
    uint32_t product = op64(Op::OpIMul, m, window);
    // Quadrant in the top 2 bits, the fraction below as a signed fixed-point number in
    // [-1/2, 1/2) (a fraction of 1/2 or more rounds to the next quadrant).
    uint32_t fraction = op64(Op::OpShiftLeftLogical, product, k64(2));
    uint32_t negative = w_.Bool(Op::OpSLessThan, fraction, k64(0));
    uint32_t quadrant = w_.Value(Op::OpUConvert, u32, {op64(Op::OpShiftRightLogical, product, k64(62))});
    quadrant = op32(Op::OpIAdd, quadrant, w_.Select(u32, negative, k32(1), k32(0)));
    uint32_t reduced = Mul(w_.Value(Op::OpConvertSToF, type_, {fraction}), C(M_PI_2 * std::ldexp(1.0, -64)));
    uint32_t small = Lt(a, C(M_PI_4));
    uint32_t r = Sel(small, a, reduced);
    quadrant = w_.Select(u32, small, k32(0), quadrant);
    uint32_t z = Mul(r, r);
    uint32_t sin_r = Mul(r, Poly(z, FactorialSeries(5, 1, 2, true)));
    uint32_t cos_r = Poly(z, FactorialSeries(5, 0, 2, true));
    if (cosine) quadrant = op32(Op::OpIAdd, quadrant, k32(1));  // cos a = sin(a + pi/2)
    auto in = [&](int v) { return w_.Bool(Op::OpIEqual, op32(Op::OpBitwiseAnd, quadrant, k32(3)), k32(v)); };
    uint32_t value = Sel(in(0), sin_r, Sel(in(1), cos_r, Sel(in(2), Neg(sin_r), Neg(cos_r))));
    if (!cosine) value = Sel(Lt(x, C(0)), Neg(value), value);  // sin is odd, cos even
    return Sel(Or(IsNan(x), IsInf(x)), C(NAN), value);
  }

  uint32_t Tanh64(uint32_t x) {
    uint32_t e = Expm1(Mul(C(2), x));
    uint32_t r = Div(e, Add(e, C(2)));
    return Sel(Lt(C(22), Abs(x)), Glsl(GLSLstd450FSign, x), r);  // beyond 22, tanh is +-1
  }
  // sinh from expm1 below 22 (no cancellation near 0), beyond e^a / 2 as h * (h / 2) with
  // h = e^(a/2), which does not overflow before the result does.
  uint32_t Sinh(uint32_t x) {
    uint32_t a = Abs(x);
    uint32_t e = Expm1(a);
    uint32_t small = Mul(C(0.5), Add(e, Div(e, Add(e, C(1)))));
    uint32_t h = Exp(Mul(a, C(0.5)));
    uint32_t r = Sel(Lt(a, C(22)), small, Mul(h, Mul(h, C(0.5))));
    return Sel(Lt(x, C(0)), Neg(r), r);
  }
  uint32_t Cosh(uint32_t x) {
    uint32_t a = Abs(x);
    uint32_t e = Exp(a);
    uint32_t h = Exp(Mul(a, C(0.5)));
    return Sel(Lt(a, C(22)), Mul(C(0.5), Add(e, Div(C(1), e))), Mul(h, Mul(h, C(0.5))));
  }

  // atan: |x| > 1 through pi/2 - atan(1/x), then above tan(pi/8) through
  // pi/4 + atan((t - 1) / (t + 1)), leaving |u| <= 0.4143 for the Taylor series (to u^17
  // for float32, u^41 for float64).
  uint32_t Atan(uint32_t x) {
    uint32_t a = Abs(x);
    uint32_t big = Lt(C(1), a);
    uint32_t t = Sel(big, Div(C(1), a), a);
    uint32_t mid = Lt(C(0.41421356237309503), t);
    uint32_t u = Sel(mid, Div(Sub(t, C(1)), Add(t, C(1))), t);
    std::vector<double> series;
    for (int k = bits_ == 64 ? 20 : 8; k >= 0; --k) series.push_back((k % 2 ? -1.0 : 1.0) / (2 * k + 1));
    uint32_t r = Add(Mul(u, Poly(Mul(u, u), series)), Sel(mid, C(M_PI_4), C(0)));
    r = Sel(big, Sub(C(M_PI_2), r), r);
    return Sel(Lt(x, C(0)), Neg(r), r);
  }

  // log1p(x) = log(u) * x / (u - 1) with u = 1 + x: the division cancels u's rounding error.
  uint32_t Log1p(uint32_t x) {
    uint32_t u = Add(C(1), x);
    uint32_t d = Sub(u, C(1));
    uint32_t log_u = Log(u);
    uint32_t fixed = Mul(log_u, Div(x, d));
    return Sel(Eq(d, C(0)), x, Sel(IsInf(u), log_u, fixed));
  }

  // expm1(x) = (u - 1) * x / log(u) with u = exp(x) (Kahan); x itself where u rounds to 1.
  uint32_t Expm1(uint32_t x) {
    uint32_t u = Exp(x);
    uint32_t um1 = Sub(u, C(1));
    uint32_t fixed = Mul(um1, Div(x, Log(u)));
    uint32_t plain = Or(Eq(um1, C(-1)), IsInf(u));
    return Sel(Eq(u, C(1)), x, Sel(plain, um1, fixed));
  }

  // C's pow, special cases included (drivers compute GLSL's Pow as exp2(y log2 x), undefined
  // for x < 0 and wrong for NaN): pow(x, 0) = pow(1, y) = 1; NaN otherwise when x or y is;
  // y = +-inf by whether |x| is below, at or above 1; |x| = 0 or inf by the sign of y; a
  // negative x takes an integral y's parity as its sign, and a non-integral y gives NaN
  // (except for x = -inf).
  uint32_t Pow(uint32_t x, uint32_t y) {
    auto and_ = [&](uint32_t a, uint32_t b) { return w_.Bool(Op::OpLogicalAnd, a, b); };
    uint32_t ax = Abs(x);
    uint32_t ay = Abs(y);
    uint32_t y_positive = Lt(C(0), y);
    uint32_t general = bits_ == 32 ? w_.Glsl(type_, GLSLstd450Pow, {ax, y}) : ExpReduced(Mul(y, Log64(ax)));
    // |x|^y where x or y is 0 or infinite.
    uint32_t magnitude = Sel(Eq(ax, C(0)), Sel(y_positive, C(0), C(INFINITY)), general);
    magnitude = Sel(IsInf(ax), Sel(y_positive, C(INFINITY), C(0)), magnitude);
    uint32_t y_inf = Sel(Eq(ax, C(1)), C(1), Sel(w_.Bool(Op::OpLogicalEqual, Lt(C(1), ax), y_positive), C(INFINITY), C(0)));
    magnitude = Sel(IsInf(ay), y_inf, magnitude);
    uint32_t integral = Eq(Glsl(GLSLstd450Floor, y), y);
    uint32_t odd = and_(integral, w_.Bool(Op::OpFOrdNotEqual, w_.Value(Op::OpFRem, type_, {y, C(2)}), C(0)));
    uint32_t signed_result = Sel(odd, Neg(magnitude), magnitude);
    uint32_t negative = Sel(Or(Or(integral, IsInf(ay)), IsInf(ax)), signed_result, C(NAN));
    uint32_t r = Sel(Lt(x, C(0)), negative, magnitude);
    r = Sel(Or(IsNan(x), IsNan(y)), C(NAN), r);
    return Sel(Or(Eq(y, C(0)), Eq(x, C(1))), C(1), r);
  }

  // float64 erf(x) = 2/sqrt(pi) e^(-x^2) sum_n (2x^2)^n x / (2n+1)!!: every term positive, so
  // no cancellation; 98 terms reach 1e-17 at |x| = 6, beyond which erf is +-1 in float64.
  uint32_t Erf64(uint32_t x) {
    std::vector<double> series;
    double c = 1;
    for (int n = 0; n < 98; ++n) {
      series.insert(series.begin(), c);
      c *= 2.0 / (2 * n + 3);
    }
    uint32_t x2 = Mul(x, x);
    uint32_t sum = Poly(x2, series);
    uint32_t r = Mul(Mul(C(M_2_SQRTPI), ExpReduced(Neg(x2))), Mul(x, sum));
    return Sel(Lt(C(6), Abs(x)), Glsl(GLSLstd450FSign, x), r);
  }

  // erf: below 1 its Taylor series in x^2 to x^23 (terms under 1e-9); beyond, Abramowitz
  // and Stegun 7.1.26 (absolute error under 1.5e-7 where erf >= 0.84).
  uint32_t Erf32(uint32_t x) {
    std::vector<double> taylor;
    double factorial = 1;
    for (int n = 0; n <= 11; ++n) {
      if (n > 0) factorial *= n;
      taylor.insert(taylor.begin(), (n % 2 ? -1.0 : 1.0) * M_2_SQRTPI / (factorial * (2 * n + 1)));
    }
    uint32_t ax = Abs(x);
    uint32_t x2 = Mul(x, x);
    uint32_t small = Mul(x, Poly(x2, taylor));
    uint32_t t = Div(C(1), Add(C(1), Mul(C(0.3275911), ax)));
    uint32_t p = Mul(t, Poly(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}));
    uint32_t large = Sub(C(1), Mul(p, Exp(Neg(x2))));
    large = Sel(Lt(x, C(0)), Neg(large), large);
    return Sel(Lt(ax, C(1)), small, large);
  }

  SpirvFunctionWriter& w_;
  SpirvBuilder& b_;
  const int bits_;
  const uint32_t type_, int_;
};

}  // namespace

std::optional<uint32_t> EmitFloatMath(SpirvFunctionWriter& w, const std::string& op, int bits,
                                      const std::vector<uint32_t>& args) {
  if (args.empty() || (bits != 32 && bits != 64)) return std::nullopt;
  return FloatMath(w, bits).Call(op, args);
}

}  // namespace kiln::codegen
