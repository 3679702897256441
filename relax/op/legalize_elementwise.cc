// Legalization of the elementwise operators (semantics in relax/op/elementwise.cc): one
// spatial block over the broadcast output. Integer divide truncates (tir Div on integers).
// Integer power goes through float64 pow, rounded to the nearest integer before the cast: exact
// while |result| < 2^53 (a larger result, which wraps in the reference, is not) even where pow
// is a few ulp off (CUDA's pow(3.0, 1.0) may give 2.9999999999999996, which truncates to 2); a
// negative exponent of |x| >= 2 gives |result| <= 0.5, which rounds to 0 as truncation would. The transcendental functions,
// gelu and silu need a float dtype.
// Integer remainders avoid the one overflowing division: x % -1 is 0 for every x, so a -1
// divisor selects 0 and the division (in the other branch) is checked only for 0
// (tir/transform/insert_division_checks.h). Float remainders come from fmod, which is exact.
#include <cmath>
#include <cstring>
#include <optional>

#include "relax/op/legalize_common.h"
#include "relax/op/ggml_numerics.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

using BinaryFn = PrimExpr (*)(PrimExpr, PrimExpr);

KernelLegalizeFn Binary(BinaryFn fn, bool float_only) {
  return [fn, float_only](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    if (p.inputs.size() != 2) return OpError(call, "cannot legalize: expects two tensor operands");
    const Buffer& a = p.inputs[0];
    const Buffer& b = p.inputs[1];
    if (float_only && !a->dtype.is_float()) {
      return absl::UnimplementedError(
          absl::StrCat(OpName(call), ": no CPU lowering for dtype ", a->dtype.ToString()));
    }
    Stmt body = ComputeBlock(OpName(call), p.outputs[0], [&](const std::vector<PrimExpr>& i) {
      return fn(a.Load(BroadcastIndex(a, i)), b.Load(BroadcastIndex(b, i)));
    });
    return MakePrimFunc(p, body, "broadcast");
  };
}

// A float power whose exponent is a constant small integer (x^2 from ONNX's Pow, squares in
// decomposed norms) is written as multiplications: libm's pow is a call per element, lane by
// lane in vector loops. x^0 = 1 and x^1 = x match pow for every x (NaN included); x^2
// rounds once as pow does; x^3 and x^4 round twice (within an ulp or so of pow); x^-1 is
// 1 / x, exact. Other exponents (and x^-2, where 1 / (x x) would lose bits to a denormal
// x x that pow keeps) stay pow.
std::optional<int> SmallIntegerExponent(const CallNode& call) {
  if (call.args.size() != 2) return std::nullopt;
  const auto* c = call.args[1].as<ConstantNode>();
  if (c == nullptr || c->data.is_external() || c->data.numel() != 1 || c->data.bytes == nullptr) return std::nullopt;
  const DataType t = c->data.dtype;
  double v = 0;
  const uint8_t* p = c->data.bytes->data();
  if (t == DataType::Float32()) {
    float f;
    std::memcpy(&f, p, sizeof f);
    v = f;
  } else if (t == DataType::Float(64)) {
    std::memcpy(&v, p, sizeof v);
  } else {
    return std::nullopt;
  }
  if (v != std::floor(v) || v < -1 || v > 4) return std::nullopt;
  return static_cast<int>(v);
}

PrimExpr Pow(PrimExpr a, PrimExpr b);

PrimExpr PowerByMultiplication(PrimExpr x, int k) {
  const DataType t = x.dtype();
  switch (k) {
    case -1: return tir::Div(Const(t, 1.0), x);
    case 0: return Const(t, 1.0);
    case 1: return x;
    case 2: return x * x;
    case 3: return x * x * x;
    default: return (x * x) * (x * x);
  }
}

KernelLegalizeFn Power() {
  KernelLegalizeFn general = Binary(Pow, false);
  return [general](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    std::optional<int> k = SmallIntegerExponent(call);
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    if (!k || p.inputs.size() != 2 || !p.inputs[0]->dtype.is_float()) return general(call);
    const Buffer& a = p.inputs[0];
    Stmt body = ComputeBlock("power", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
      return PowerByMultiplication(a.Load(BroadcastIndex(a, i)), *k);
    });
    return MakePrimFunc(p, body, "broadcast");
  };
}

PrimExpr Pow(PrimExpr a, PrimExpr b) {
  const DataType t = a.dtype();
  if (t.is_float()) return tir::Call("pow", {std::move(a), std::move(b)});
  const DataType f64 = DataType::Float(64);
  PrimExpr power = tir::Call("pow", {tir::Cast(f64, std::move(a)), tir::Cast(f64, std::move(b))});
  return tir::Cast(t, tir::Call("round", {std::move(power)}));
}

using UnaryFn = PrimExpr (*)(PrimExpr);

KernelLegalizeFn Unary(UnaryFn fn, bool float_only) {
  return [fn, float_only](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    if (p.inputs.size() != 1) return OpError(call, "cannot legalize: expects one tensor operand");
    const Buffer& a = p.inputs[0];
    if (float_only && !a->dtype.is_float()) {
      return absl::UnimplementedError(
          absl::StrCat(OpName(call), ": no CPU lowering for dtype ", a->dtype.ToString()));
    }
    Stmt body = ComputeBlock(OpName(call), p.outputs[0],
                             [&](const std::vector<PrimExpr>& i) { return fn(a.Load(i)); });
    return MakePrimFunc(p, body, "elementwise");
  };
}

PrimExpr Negative(PrimExpr x) { return Const(x.dtype(), 0) - x; }
PrimExpr Relu(PrimExpr x) { return tir::Max(x, Const(x.dtype(), 0)); }
PrimExpr Exp(PrimExpr x) { return tir::Call("exp", {std::move(x)}); }
PrimExpr Log(PrimExpr x) { return tir::Call("log", {std::move(x)}); }
PrimExpr Sqrt(PrimExpr x) { return tir::Call("sqrt", {std::move(x)}); }
PrimExpr Rsqrt(PrimExpr x) { return tir::Call("rsqrt", {std::move(x)}); }
PrimExpr Tanh(PrimExpr x) { return tir::Call("tanh", {std::move(x)}); }
PrimExpr Sigmoid(PrimExpr x) { return tir::Call("sigmoid", {std::move(x)}); }
PrimExpr Gelu(PrimExpr x) {
  const DataType t = x.dtype();
  PrimExpr erf = tir::Call("erf", {tir::Mul(x, Const(t, 1.0 / std::sqrt(2.0)))});
  return tir::Mul(tir::Mul(Const(t, 0.5), x), tir::Add(Const(t, 1.0), erf));
}
PrimExpr Silu(PrimExpr x) { return tir::Mul(x, tir::Call("sigmoid", {x})); }
PrimExpr Reciprocal(PrimExpr x) {
  const DataType t = x.dtype();
  return tir::Div(Const(t, 1.0), std::move(x));
}

// The float math intrinsic `kName` (tir/expr.h) of x.
template <const char* kName>
PrimExpr Math(PrimExpr x) {
  return tir::Call(kName, {std::move(x)});
}
constexpr char kErf[] = "erf", kSin[] = "sin", kCos[] = "cos", kTan[] = "tan", kAsin[] = "asin", kAcos[] = "acos",
               kAtan[] = "atan", kSinh[] = "sinh", kCosh[] = "cosh", kAsinh[] = "asinh", kAcosh[] = "acosh",
               kAtanh[] = "atanh", kLog1p[] = "log1p", kExpm1[] = "expm1", kFloor[] = "floor", kCeil[] = "ceil",
               kRound[] = "round";

// floor, ceil, round: an integer is its own rounding.
template <const char* kName>
PrimExpr Rounding(PrimExpr x) {
  if (!x.dtype().is_float()) return x;
  return tir::Call(kName, {std::move(x)});
}

PrimExpr Abs(PrimExpr x) {
  const DataType t = x.dtype();
  if (t.is_float()) return tir::Call("fabs", {std::move(x)});
  if (t.is_uint()) return x;
  return tir::Select(tir::LT(x, Const(t, 0)), Const(t, 0) - x, x);
}

// -1, 0 or 1; a NaN is returned as is, and -0.0 gives +0.0 (as np.sign).
PrimExpr Sign(PrimExpr x) {
  const DataType t = x.dtype();
  PrimExpr zero_or_nan = t.is_float() ? tir::Select(tir::EQ(x, x), Const(t, 0), x) : Const(t, 0);
  PrimExpr non_positive = t.is_uint() ? zero_or_nan : tir::Select(tir::LT(x, Const(t, 0)), Const(t, -1), zero_or_nan);
  return tir::Select(tir::GT(x, Const(t, 0)), Const(t, 1), non_positive);
}

PrimExpr IsNan(PrimExpr x) {
  if (!x.dtype().is_float()) return tir::IntImm(DataType::Bool(), 0);
  return tir::NE(x, x);
}

// Floats as NumPy's floor_divide (npy_divmod): (a - fmod(a, b)) / b is within rounding of
// an integer, so the floor of the exact quotient even where floor(a / b) would round a
// quotient just below an integer up to it; NaN for an infinite dividend, -1 for a finite
// one over an infinity of the other sign, a / b for a zero divisor.
PrimExpr FloorDivide(PrimExpr a, PrimExpr b) {
  const DataType t = a.dtype();
  if (!t.is_float()) return tir::FloorDiv(std::move(a), std::move(b));
  PrimExpr zero = Const(t, 0);
  PrimExpr mod = tir::Call("fmod", {a, b});
  PrimExpr div = tir::Div(a - mod, b);
  PrimExpr other_sign = tir::And(tir::NE(mod, zero), tir::NE(tir::LT(b, zero), tir::LT(mod, zero)));
  div = tir::Select(other_sign, div - Const(t, 1), div);
  PrimExpr floor = tir::Call("floor", {div});
  floor = tir::Select(tir::GT(div - floor, Const(t, 0.5)), floor + Const(t, 1), floor);
  // A zero quotient keeps the sign of a / b.
  PrimExpr quotient = tir::Div(a, b);
  PrimExpr signed_zero = tir::Select(tir::EQ(quotient, zero), quotient,
                                     tir::Select(tir::LT(quotient, zero), Const(t, -0.0), zero));
  return tir::Select(tir::EQ(b, zero), quotient, tir::Select(tir::EQ(div, zero), signed_zero, floor));
}

// Integer remainder with a -1 divisor selected to 0 (see the file comment).
PrimExpr IntRemainder(PrimExpr a, PrimExpr b, PrimExpr remainder) {
  const DataType t = a.dtype();
  if (t.is_uint()) return remainder;
  return tir::Select(tir::EQ(b, Const(t, -1)), Const(t, 0), std::move(remainder));
}

PrimExpr FloorModOp(PrimExpr a, PrimExpr b) {
  const DataType t = a.dtype();
  if (!t.is_float()) return IntRemainder(a, b, tir::FloorMod(a, b));
  // fmod has the dividend's sign: a nonzero remainder of the other sign than b moves by b; a
  // zero one takes b's sign (np.mod). A NaN remainder fails both tests and stays.
  PrimExpr r = tir::Call("fmod", {a, b});
  PrimExpr zero = Const(t, 0);
  PrimExpr signed_zero = tir::Select(tir::LT(b, zero), Const(t, -0.0), zero);
  PrimExpr other_sign = tir::NE(tir::LT(r, zero), tir::LT(b, zero));
  return tir::Select(tir::EQ(r, zero), signed_zero, tir::Select(other_sign, r + b, r));
}

PrimExpr ModOp(PrimExpr a, PrimExpr b) {
  if (a.dtype().is_float()) return tir::Call("fmod", {std::move(a), std::move(b)});
  // Div truncates on integers: a - trunc(a / b) * b has a's sign.
  return IntRemainder(a, b, a - tir::Div(a, b) * b);
}

PrimExpr LogicalXor(PrimExpr a, PrimExpr b) { return tir::NE(std::move(a), std::move(b)); }

KernelLegalizeFn IsInf() {
  return [](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    if (p.inputs.size() != 1) return OpError(call, "cannot legalize: expects one tensor operand");
    KILN_ASSIGN_OR_RETURN(std::optional<bool> positive, BoolAttr(call, "detect_positive"));
    KILN_ASSIGN_OR_RETURN(std::optional<bool> negative, BoolAttr(call, "detect_negative"));
    const Buffer& a = p.inputs[0];
    const DataType t = a->dtype;
    Stmt body = ComputeBlock("isinf", p.outputs[0], [&](const std::vector<PrimExpr>& i) -> PrimExpr {
      PrimExpr x = a.Load(i);
      PrimExpr no = tir::IntImm(DataType::Bool(), 0);
      if (!t.is_float()) return no;
      PrimExpr pos = positive.value_or(true) ? tir::EQ(x, Const(t, INFINITY)) : no;
      PrimExpr neg = negative.value_or(true) ? tir::EQ(x, Const(t, -INFINITY)) : no;
      return tir::Or(pos, neg);
    });
    return MakePrimFunc(p, body, "elementwise");
  };
}

absl::StatusOr<tir::PrimFunc> Clip(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  if (p.inputs.size() != 3) return OpError(call, "cannot legalize: expects three tensor operands");
  const Buffer& x = p.inputs[0];
  const Buffer& lo = p.inputs[1];
  const Buffer& hi = p.inputs[2];
  Stmt body = ComputeBlock("clip", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
    return tir::Min(tir::Max(x.Load(BroadcastIndex(x, i)), lo.Load(BroadcastIndex(lo, i))),
                    hi.Load(BroadcastIndex(hi, i)));
  });
  return MakePrimFunc(p, body, "broadcast");
}

}  // namespace

void RegisterElementwiseLegalize(OpRegistry& registry) {
  registry.SetLegalize("add", Binary(tir::Add, false));
  registry.SetLegalize("subtract", Binary(tir::Sub, false));
  registry.SetLegalize("multiply", Binary(tir::Mul, false));
  registry.SetLegalize("divide", Binary(tir::Div, false));
  registry.SetLegalize("maximum", Binary(tir::Max, false));
  registry.SetLegalize("minimum", Binary(tir::Min, false));
  registry.SetLegalize("power", Power());
  registry.SetLegalize("equal", Binary(tir::EQ, false));
  registry.SetLegalize("not_equal", Binary(tir::NE, false));
  registry.SetLegalize("less", Binary(tir::LT, false));
  registry.SetLegalize("less_equal", Binary(tir::LE, false));
  registry.SetLegalize("greater", Binary(tir::GT, false));
  registry.SetLegalize("greater_equal", Binary(tir::GE, false));
  registry.SetLegalize("negative", Unary(Negative, false));
  registry.SetLegalize("relu", Unary(Relu, false));
  registry.SetLegalize("exp", Unary(Exp, true));
  registry.SetLegalize("log", Unary(Log, true));
  registry.SetLegalize("sqrt", Unary(Sqrt, true));
  registry.SetLegalize("rsqrt", Unary(Rsqrt, true));
  registry.SetLegalize("tanh", Unary(Tanh, true));
  registry.SetLegalize("sigmoid", Unary(Sigmoid, true));
  registry.SetLegalize("gelu", Unary(Gelu, true));
  registry.SetLegalize("silu", [](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(GgmlNumerics numerics, GgmlNumericsAttr(call));
    return numerics != GgmlNumerics::kDefault ? LegalizeGgmlSilu(call, numerics) : Unary(Silu, true)(call);
  });
  registry.SetLegalize("reciprocal", Unary(Reciprocal, true));
  registry.SetLegalize("erf", Unary(Math<kErf>, true));
  registry.SetLegalize("sin", Unary(Math<kSin>, true));
  registry.SetLegalize("cos", Unary(Math<kCos>, true));
  registry.SetLegalize("tan", Unary(Math<kTan>, true));
  registry.SetLegalize("asin", Unary(Math<kAsin>, true));
  registry.SetLegalize("acos", Unary(Math<kAcos>, true));
  registry.SetLegalize("atan", Unary(Math<kAtan>, true));
  registry.SetLegalize("sinh", Unary(Math<kSinh>, true));
  registry.SetLegalize("cosh", Unary(Math<kCosh>, true));
  registry.SetLegalize("asinh", Unary(Math<kAsinh>, true));
  registry.SetLegalize("acosh", Unary(Math<kAcosh>, true));
  registry.SetLegalize("atanh", Unary(Math<kAtanh>, true));
  registry.SetLegalize("log1p", Unary(Math<kLog1p>, true));
  registry.SetLegalize("expm1", Unary(Math<kExpm1>, true));
  registry.SetLegalize("floor", Unary(Rounding<kFloor>, false));
  registry.SetLegalize("ceil", Unary(Rounding<kCeil>, false));
  registry.SetLegalize("round", Unary(Rounding<kRound>, false));
  registry.SetLegalize("abs", Unary(Abs, false));
  registry.SetLegalize("sign", Unary(Sign, false));
  registry.SetLegalize("isnan", Unary(IsNan, false));
  registry.SetLegalize("isinf", IsInf());
  registry.SetLegalize("floor_divide", Binary(FloorDivide, false));
  registry.SetLegalize("floor_mod", Binary(FloorModOp, false));
  registry.SetLegalize("mod", Binary(ModOp, false));
  registry.SetLegalize("logical_and", Binary(tir::And, false));
  registry.SetLegalize("logical_or", Binary(tir::Or, false));
  registry.SetLegalize("logical_xor", Binary(LogicalXor, false));
  registry.SetLegalize("logical_not", Unary(tir::Not, false));
  registry.SetLegalize("bitwise_and", Binary(tir::BitAnd, false));
  registry.SetLegalize("bitwise_or", Binary(tir::BitOr, false));
  registry.SetLegalize("bitwise_xor", Binary(tir::BitXor, false));
  registry.SetLegalize("left_shift", Binary(tir::Shl, false));
  registry.SetLegalize("right_shift", Binary(tir::Shr, false));
  registry.SetLegalize("bitwise_not", Unary(tir::BitNot, false));
  registry.SetLegalize("clip", Clip);
  registry.SetLegalize("where", [](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    if (p.inputs.size() != 3) return OpError(call, "cannot legalize: expects three tensor operands");
    const Buffer& c = p.inputs[0];
    const Buffer& x = p.inputs[1];
    const Buffer& y = p.inputs[2];
    Stmt body = ComputeBlock("where", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
      return tir::Select(c.Load(BroadcastIndex(c, i)), x.Load(BroadcastIndex(x, i)),
                         y.Load(BroadcastIndex(y, i)));
    });
    return MakePrimFunc(p, body, "broadcast");
  });
}

}  // namespace kiln::relax::op
