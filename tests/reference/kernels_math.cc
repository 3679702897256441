// Elementwise math kernels beyond arithmetic (semantics in relax/op/elementwise.cc): the C
// library's functions in double for the transcendental ones, rounding, abs/sign, isnan/isinf,
// Python's floor division and modulo and C's fmod, logical and bitwise operators, clip. uint
// values are handled as unsigned (a uint64 above 2^63 is not negative), and an integer
// divisor of 0 is an error as in divide.
#include <cmath>
#include <cstdint>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

// ---------------------------------------------------------------- unary

double Reciprocal(double x) { return 1.0 / x; }
double Erf(double x) { return std::erf(x); }
double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }
double Tan(double x) { return std::tan(x); }
double Asin(double x) { return std::asin(x); }
double Acos(double x) { return std::acos(x); }
double Atan(double x) { return std::atan(x); }
double Sinh(double x) { return std::sinh(x); }
double Cosh(double x) { return std::cosh(x); }
double Asinh(double x) { return std::asinh(x); }
double Acosh(double x) { return std::acosh(x); }
double Atanh(double x) { return std::atanh(x); }
double Log1p(double x) { return std::log1p(x); }
double Expm1(double x) { return std::expm1(x); }
double Floor(double x) { return std::floor(x); }
double Ceil(double x) { return std::ceil(x); }
double Round(double x) { return std::nearbyint(x); }  // the default mode: half to even
double Abs(double x) { return std::fabs(x); }
// np.sign: NaN stays NaN, either zero gives +0.
double Sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }

using DoubleFn = double (*)(double);

template <DoubleFn kFn>
absl::StatusOr<RefValue> FloatOnly(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (!x->dtype().is_floating()) return call.Error("requires a floating-point tensor, got ", x->dtype().ToString());
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) out.SetDouble(i, kFn(x->GetDouble(i)));
  return RefValue(std::move(out));
}

enum class IntUnary { kIdentity, kAbs, kSign };

// Float elements through kFn; integer ones by kInt (floor/ceil/round of an integer is itself).
template <DoubleFn kFn, IntUnary kInt>
absl::StatusOr<RefValue> Numeric(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  const DataType t = x->dtype();
  if (t.is_bool() || t.is_handle()) return call.Error("requires a numeric tensor, got ", t.ToString());
  HostTensor out(t, x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (!ComputesInInt(t)) {
      out.SetDouble(i, kFn(x->GetDouble(i)));
      continue;
    }
    const int64_t v = x->GetInt(i);
    const bool negative = t.is_int() && v < 0;
    switch (kInt) {
      case IntUnary::kIdentity: out.SetInt(i, v); break;
      case IntUnary::kAbs: out.SetInt(i, negative ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v); break;
      case IntUnary::kSign: out.SetInt(i, negative ? -1 : v != 0 ? 1 : 0); break;
    }
  }
  return RefValue(std::move(out));
}

template <bool kIsInf>
absl::StatusOr<RefValue> FloatClass(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(std::optional<bool> positive, call.BoolAttr("detect_positive"));
  KILN_ASSIGN_OR_RETURN(std::optional<bool> negative, call.BoolAttr("detect_negative"));
  if (x->dtype().is_bool() || x->dtype().is_handle()) {
    return call.Error("requires a numeric tensor, got ", x->dtype().ToString());
  }
  HostTensor out(DataType::Bool(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    bool v = false;
    if (x->dtype().is_floating()) {
      const double d = x->GetDouble(i);
      v = kIsInf ? (d == INFINITY && positive.value_or(true)) || (d == -INFINITY && negative.value_or(true))
                 : std::isnan(d);
    }
    out.SetInt(i, v ? 1 : 0);
  }
  return RefValue(std::move(out));
}

// ---------------------------------------------------------------- binary

enum class Bin {
  kFloorDivide, kFloorMod, kMod,
  kLogicalAnd, kLogicalOr, kLogicalXor,
  kBitAnd, kBitOr, kBitXor, kShl, kShr,
};

enum class Operands { kNumeric, kBool, kInteger };

constexpr Operands OperandsOf(Bin op) {
  return op <= Bin::kMod ? Operands::kNumeric : op <= Bin::kLogicalXor ? Operands::kBool : Operands::kInteger;
}

// Python's float floor division (as np.floor_divide): the floor of the exact quotient, NaN
// for an infinite or NaN dividend, -1 for a finite nonzero dividend over an infinity of the
// other sign (the quotient is a tiny negative number), a / b for a zero divisor.
double FloatFloorDivide(double a, double b) {
  if (b == 0 || std::isnan(a) || std::isnan(b)) return a / b;
  if (std::isinf(a)) return NAN;
  if (std::isinf(b)) return a != 0 && (a < 0) != (b < 0) ? -1.0 : std::copysign(0.0, a / b);
  return std::floor(a / b);
}

// Python's float modulo (np.mod): the divisor's sign; a zero result takes it too.
double FloatFloorMod(double a, double b) {
  double r = std::fmod(a, b);
  if (r == 0) return std::copysign(0.0, b);
  if ((r < 0) != (b < 0)) r += b;
  return r;
}

absl::StatusOr<int64_t> IntDivision(const KernelCall& call, Bin op, DataType t, int64_t a, int64_t b) {
  if (b == 0) return call.Error("integer division by zero");
  if (t.is_uint()) {
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    return static_cast<int64_t>(op == Bin::kFloorDivide ? ua / ub : ua % ub);
  }
  if (b == -1) return op == Bin::kFloorDivide ? static_cast<int64_t>(0 - static_cast<uint64_t>(a)) : 0;
  int64_t q = a / b, r = a % b;
  if (op == Bin::kMod) return r;
  if (r != 0 && (r < 0) != (b < 0)) {
    --q;
    r += b;
  }
  return op == Bin::kFloorDivide ? q : r;
}

// Shifts by an amount outside [0, bits) shift every bit out (tir/expr.h).
int64_t Shift(Bin op, DataType t, int64_t a, int64_t amount) {
  const int bits = t.bits();
  const bool out_of_range = amount < 0 || amount >= bits;
  if (op == Bin::kShl) return out_of_range ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << amount);
  if (t.is_uint()) {
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return out_of_range ? 0 : static_cast<int64_t>((static_cast<uint64_t>(a) & mask) >> amount);
  }
  if (out_of_range) return a < 0 ? -1 : 0;
  return a >= 0 ? a >> amount : ~(~a >> amount);  // arithmetic, written without relying on >> of negatives
}

template <Bin kOp>
absl::StatusOr<RefValue> Binary(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* a, call.Tensor(0, "lhs"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* b, call.Tensor(1, "rhs"));
  const DataType t = a->dtype();
  if (t != b->dtype()) return call.Error("lhs is ", t.ToString(), " but rhs is ", b->dtype().ToString());
  switch (OperandsOf(kOp)) {
    case Operands::kNumeric:
      if (t.is_bool() || t.is_handle()) return call.Error("requires a numeric tensor, got ", t.ToString());
      break;
    case Operands::kBool:
      if (!t.is_bool()) return call.Error("requires a bool tensor, got ", t.ToString());
      break;
    case Operands::kInteger:
      if (!t.is_integer()) return call.Error("requires an integer tensor, got ", t.ToString());
      break;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(call, a->shape(), b->shape()));
  HostTensor out(t, shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    const int64_t ia = BroadcastIndex(index, a->shape()), ib = BroadcastIndex(index, b->shape());
    if (t.is_floating()) {
      const double x = a->GetDouble(ia), y = b->GetDouble(ib);
      out.SetDouble(i, kOp == Bin::kFloorDivide ? FloatFloorDivide(x, y)
                       : kOp == Bin::kFloorMod  ? FloatFloorMod(x, y)
                                                : std::fmod(x, y));
      continue;
    }
    const int64_t x = a->GetInt(ia), y = b->GetInt(ib);
    int64_t v = 0;
    switch (kOp) {
      case Bin::kFloorDivide:
      case Bin::kFloorMod:
      case Bin::kMod: {
        KILN_ASSIGN_OR_RETURN(v, IntDivision(call, kOp, t, x, y));
        break;
      }
      case Bin::kLogicalAnd: v = (x != 0) && (y != 0); break;
      case Bin::kLogicalOr: v = (x != 0) || (y != 0); break;
      case Bin::kLogicalXor: v = (x != 0) != (y != 0); break;
      case Bin::kBitAnd: v = x & y; break;
      case Bin::kBitOr: v = x | y; break;
      case Bin::kBitXor: v = x ^ y; break;
      case Bin::kShl:
      case Bin::kShr: v = Shift(kOp, t, x, y); break;
    }
    out.SetInt(i, v);
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> LogicalNot(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (!x->dtype().is_bool()) return call.Error("requires a bool tensor, got ", x->dtype().ToString());
  HostTensor out(DataType::Bool(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, x->GetInt(i) == 0 ? 1 : 0);
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> BitwiseNot(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (!x->dtype().is_integer()) return call.Error("requires an integer tensor, got ", x->dtype().ToString());
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, ~x->GetInt(i));
  return RefValue(std::move(out));
}

// ---------------------------------------------------------------- clip

absl::StatusOr<RefValue> Clip(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "x"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* lo, call.Tensor(1, "min"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* hi, call.Tensor(2, "max"));
  const DataType t = x->dtype();
  if (lo->dtype() != t || hi->dtype() != t) {
    return call.Error("x is ", t.ToString(), " but min is ", lo->dtype().ToString(), " and max ",
                      hi->dtype().ToString());
  }
  if (t.is_bool() || t.is_handle()) return call.Error("requires a numeric tensor, got ", t.ToString());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bounds, BroadcastShapes(call, lo->shape(), hi->shape()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(call, x->shape(), bounds));
  HostTensor out(t, shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    const int64_t ix = BroadcastIndex(index, x->shape()), il = BroadcastIndex(index, lo->shape()),
                  ih = BroadcastIndex(index, hi->shape());
    if (t.is_floating()) {
      out.SetDouble(i, NanMin(NanMax(x->GetDouble(ix), lo->GetDouble(il)), hi->GetDouble(ih)));
    } else if (t.is_uint()) {
      const auto v = static_cast<uint64_t>(x->GetInt(ix)), l = static_cast<uint64_t>(lo->GetInt(il)),
                 h = static_cast<uint64_t>(hi->GetInt(ih));
      out.SetInt(i, static_cast<int64_t>(std::min(std::max(v, l), h)));
    } else {
      out.SetInt(i, std::min(std::max(x->GetInt(ix), lo->GetInt(il)), hi->GetInt(ih)));
    }
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddMathKernels(KernelTable& t) {
  t["reciprocal"] = FloatOnly<Reciprocal>;
  t["erf"] = FloatOnly<Erf>;
  t["sin"] = FloatOnly<Sin>;
  t["cos"] = FloatOnly<Cos>;
  t["tan"] = FloatOnly<Tan>;
  t["asin"] = FloatOnly<Asin>;
  t["acos"] = FloatOnly<Acos>;
  t["atan"] = FloatOnly<Atan>;
  t["sinh"] = FloatOnly<Sinh>;
  t["cosh"] = FloatOnly<Cosh>;
  t["asinh"] = FloatOnly<Asinh>;
  t["acosh"] = FloatOnly<Acosh>;
  t["atanh"] = FloatOnly<Atanh>;
  t["log1p"] = FloatOnly<Log1p>;
  t["expm1"] = FloatOnly<Expm1>;
  t["floor"] = Numeric<Floor, IntUnary::kIdentity>;
  t["ceil"] = Numeric<Ceil, IntUnary::kIdentity>;
  t["round"] = Numeric<Round, IntUnary::kIdentity>;
  t["abs"] = Numeric<Abs, IntUnary::kAbs>;
  t["sign"] = Numeric<Sign, IntUnary::kSign>;
  t["isnan"] = FloatClass<false>;
  t["isinf"] = FloatClass<true>;
  t["floor_divide"] = Binary<Bin::kFloorDivide>;
  t["floor_mod"] = Binary<Bin::kFloorMod>;
  t["mod"] = Binary<Bin::kMod>;
  t["logical_and"] = Binary<Bin::kLogicalAnd>;
  t["logical_or"] = Binary<Bin::kLogicalOr>;
  t["logical_xor"] = Binary<Bin::kLogicalXor>;
  t["bitwise_and"] = Binary<Bin::kBitAnd>;
  t["bitwise_or"] = Binary<Bin::kBitOr>;
  t["bitwise_xor"] = Binary<Bin::kBitXor>;
  t["left_shift"] = Binary<Bin::kShl>;
  t["right_shift"] = Binary<Bin::kShr>;
  t["logical_not"] = LogicalNot;
  t["bitwise_not"] = BitwiseNot;
  t["clip"] = Clip;
}

}  // namespace kiln::reference
