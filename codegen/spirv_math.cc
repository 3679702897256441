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
    if (op == "fmod" && args.size() == 2) return w_.Value(Op::OpFRem, type_, {x, args[1]});
    if (op == "exp") return Exp(x);
    if (op == "log") return Log(x);
    if (op == "pow" && args.size() == 2) return Pow(x, args[1]);
    if (op == "sigmoid") return Div(C(1), Add(C(1), Exp(Neg(x))));
    if (op == "log1p") return Log1p(x);
    if (op == "expm1") return Expm1(x);
    if (bits_ == 32) {
      static const std::map<std::string, GLSLstd450> kGlsl = {
          {"tanh", GLSLstd450Tanh},   {"sin", GLSLstd450Sin},     {"cos", GLSLstd450Cos},
          {"tan", GLSLstd450Tan},     {"asin", GLSLstd450Asin},   {"acos", GLSLstd450Acos},
          {"atan", GLSLstd450Atan},   {"sinh", GLSLstd450Sinh},   {"cosh", GLSLstd450Cosh},
          {"asinh", GLSLstd450Asinh}, {"acosh", GLSLstd450Acosh}, {"atanh", GLSLstd450Atanh},
      };
      if (auto it = kGlsl.find(op); it != kGlsl.end()) return Glsl(it->second, x);
      if (op == "erf") return Erf32(x);
      return std::nullopt;
    }
    if (op == "sin") return SinCos64(x, false);
    if (op == "cos") return SinCos64(x, true);
    if (op == "tan") return Div(SinCos64(x, false), SinCos64(x, true));
    if (op == "tanh") return Tanh64(x);
    if (op == "sinh") return Sinh64(x);
    if (op == "cosh") return Cosh64(x);
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

  uint32_t Exp(uint32_t x) { return bits_ == 32 ? Glsl(GLSLstd450Exp, x) : Exp64(x); }
  uint32_t Log(uint32_t x) { return bits_ == 32 ? Glsl(GLSLstd450Log, x) : Log64(x); }

  // exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in two parts (|r| <= 0.35;
  // n ln2_hi is exact for |n| < 2^21), exp(r) by its Taylor series to r^14 / 14!.
  uint32_t Exp64(uint32_t x) {
    constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
    uint32_t in_range = w_.Bool(Op::OpLogicalAnd, Lt(C(-746), x), Lt(x, C(710)));
    uint32_t n = Glsl(GLSLstd450RoundEven, Mul(Sel(in_range, x, C(0)), C(1 / M_LN2)));
    uint32_t r = Sub(Sub(x, Mul(n, C(kLn2Hi))), Mul(n, C(kLn2Lo)));
    uint32_t p = Poly(r, FactorialSeries(14, 0, 1, false));
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

  uint32_t Tanh64(uint32_t x) {
    uint32_t e = Expm1(Mul(C(2), x));
    uint32_t r = Div(e, Add(e, C(2)));
    return Sel(Lt(C(22), Abs(x)), Glsl(GLSLstd450FSign, x), r);  // beyond 22, tanh is +-1
  }
  uint32_t Sinh64(uint32_t x) {
    uint32_t a = Abs(x);
    uint32_t e = Expm1(a);
    uint32_t small = Mul(C(0.5), Add(e, Div(e, Add(e, C(1)))));
    uint32_t r = Sel(Lt(a, C(22)), small, Exp(Sub(a, C(M_LN2))));  // e^a / 2 without overflowing early
    return Sel(Lt(x, C(0)), Neg(r), r);
  }
  uint32_t Cosh64(uint32_t x) {
    uint32_t a = Abs(x);
    uint32_t e = Exp(a);
    return Sel(Lt(a, C(22)), Mul(C(0.5), Add(e, Div(C(1), e))), Exp(Sub(a, C(M_LN2))));
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

  // C's pow: an integral exponent gives a negative base the sign of its parity, another
  // exponent NaN; pow(x, 0) is 1 for every x.
  uint32_t Pow(uint32_t x, uint32_t y) {
    uint32_t ax = Abs(x);
    uint32_t magnitude = bits_ == 32 ? w_.Glsl(type_, GLSLstd450Pow, {ax, y}) : Exp64(Mul(y, Log64(ax)));
    uint32_t integral = Eq(Glsl(GLSLstd450Floor, y), y);
    uint32_t odd = w_.Bool(Op::OpFOrdNotEqual, w_.Value(Op::OpFRem, type_, {y, C(2)}), C(0));
    uint32_t negative = Sel(integral, Sel(odd, Neg(magnitude), magnitude), C(NAN));
    return Sel(Eq(y, C(0)), C(1), Sel(Lt(x, C(0)), negative, magnitude));
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
