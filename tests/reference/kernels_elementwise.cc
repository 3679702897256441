// Elementwise kernels: binary arithmetic and comparisons with numpy broadcasting, unary
// math, where. Integer division truncates toward zero (C semantics) and a zero divisor is
// an error; an integer power with a negative exponent is 1 / base^-e truncated.
#include <cmath>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

enum class BinOp { kAdd, kSub, kMul, kDiv, kMax, kMin, kPow, kEq, kNe, kLt, kLe, kGt, kGe };

bool IsComparison(BinOp op) { return op >= BinOp::kEq; }

absl::StatusOr<int64_t> IntBinary(const KernelCall& call, BinOp op, int64_t a, int64_t b) {
  // Wrapping arithmetic through uint64 (signed overflow is undefined in C++).
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinOp::kAdd: return static_cast<int64_t>(ua + ub);
    case BinOp::kSub: return static_cast<int64_t>(ua - ub);
    case BinOp::kMul: return static_cast<int64_t>(ua * ub);
    case BinOp::kDiv:
      if (b == 0) return call.Error("integer division by zero");
      if (b == -1) return static_cast<int64_t>(0 - ua);
      return a / b;
    case BinOp::kMax: return std::max(a, b);
    case BinOp::kMin: return std::min(a, b);
    case BinOp::kPow: {
      if (b < 0) {
        if (a == 0) return call.Error("zero to a negative integer power");
        return a == 1 ? 1 : a == -1 ? ((-b) % 2 == 0 ? 1 : -1) : 0;
      }
      uint64_t r = 1, base = ua;
      for (auto e = static_cast<uint64_t>(b); e != 0; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
      }
      return static_cast<int64_t>(r);
    }
    case BinOp::kEq: return a == b;
    case BinOp::kNe: return a != b;
    case BinOp::kLt: return a < b;
    case BinOp::kLe: return a <= b;
    case BinOp::kGt: return a > b;
    case BinOp::kGe: return a >= b;
  }
  return 0;
}

double FloatBinary(BinOp op, double a, double b) {
  switch (op) {
    case BinOp::kAdd: return a + b;
    case BinOp::kSub: return a - b;
    case BinOp::kMul: return a * b;
    case BinOp::kDiv: return a / b;
    case BinOp::kMax: return NanMax(a, b);
    case BinOp::kMin: return NanMin(a, b);
    case BinOp::kPow: return std::pow(a, b);
    case BinOp::kEq: return a == b;
    case BinOp::kNe: return a != b;
    case BinOp::kLt: return a < b;
    case BinOp::kLe: return a <= b;
    case BinOp::kGt: return a > b;
    case BinOp::kGe: return a >= b;
  }
  return 0;
}

template <BinOp kOp>
absl::StatusOr<RefValue> Binary(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* a, call.Tensor(0, "lhs"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* b, call.Tensor(1, "rhs"));
  if (a->dtype() != b->dtype()) {
    return call.Error("lhs is ", a->dtype().ToString(), " but rhs is ", b->dtype().ToString());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(call, a->shape(), b->shape()));
  HostTensor out(IsComparison(kOp) ? DataType::Bool() : a->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    int64_t ia = BroadcastIndex(index, a->shape()), ib = BroadcastIndex(index, b->shape());
    if (ComputesInInt(a->dtype())) {
      KILN_ASSIGN_OR_RETURN(int64_t v, IntBinary(call, kOp, a->GetInt(ia), b->GetInt(ib)));
      out.SetInt(i, v);
    } else {
      out.SetDouble(i, FloatBinary(kOp, a->GetDouble(ia), b->GetDouble(ib)));
    }
  }
  return RefValue(std::move(out));
}

double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Sqrt(double x) { return std::sqrt(x); }
double Rsqrt(double x) { return 1.0 / std::sqrt(x); }
double Tanh(double x) { return std::tanh(x); }
double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// The exact (erf) form, not the tanh approximation.
double Gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double Silu(double x) { return x * Sigmoid(x); }

using UnaryFn = double (*)(double);

template <UnaryFn kFn>
absl::StatusOr<RefValue> FloatUnary(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (!x->dtype().is_floating()) {
    return call.Error("requires a floating-point tensor, got ", x->dtype().ToString());
  }
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) out.SetDouble(i, kFn(x->GetDouble(i)));
  return RefValue(std::move(out));
}

template <bool kRelu>
absl::StatusOr<RefValue> NumericUnary(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (ComputesInInt(x->dtype())) {
      int64_t v = x->GetInt(i);
      out.SetInt(i, kRelu ? std::max<int64_t>(v, 0) : static_cast<int64_t>(0 - static_cast<uint64_t>(v)));
    } else {
      double v = x->GetDouble(i);
      out.SetDouble(i, kRelu ? NanMax(v, 0.0) : -v);
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Where(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* c, call.Tensor(0, "condition"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(1, "x"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* y, call.Tensor(2, "y"));
  if (!c->dtype().is_bool()) return call.Error("condition must be bool, got ", c->dtype().ToString());
  if (x->dtype() != y->dtype()) {
    return call.Error("x is ", x->dtype().ToString(), " but y is ", y->dtype().ToString());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> xy, BroadcastShapes(call, x->shape(), y->shape()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(call, c->shape(), xy));
  HostTensor out(x->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, shape);
    bool take_x = c->GetInt(BroadcastIndex(index, c->shape())) != 0;
    const HostTensor* src = take_x ? x : y;
    out.CopyElement(i, *src, BroadcastIndex(index, src->shape()));
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddElementwiseKernels(KernelTable& t) {
  t["add"] = Binary<BinOp::kAdd>;
  t["subtract"] = Binary<BinOp::kSub>;
  t["multiply"] = Binary<BinOp::kMul>;
  t["divide"] = Binary<BinOp::kDiv>;
  t["maximum"] = Binary<BinOp::kMax>;
  t["minimum"] = Binary<BinOp::kMin>;
  t["power"] = Binary<BinOp::kPow>;
  t["equal"] = Binary<BinOp::kEq>;
  t["not_equal"] = Binary<BinOp::kNe>;
  t["less"] = Binary<BinOp::kLt>;
  t["less_equal"] = Binary<BinOp::kLe>;
  t["greater"] = Binary<BinOp::kGt>;
  t["greater_equal"] = Binary<BinOp::kGe>;
  t["negative"] = NumericUnary<false>;
  t["relu"] = NumericUnary<true>;
  t["exp"] = FloatUnary<Exp>;
  t["log"] = FloatUnary<Log>;
  t["sqrt"] = FloatUnary<Sqrt>;
  t["rsqrt"] = FloatUnary<Rsqrt>;
  t["tanh"] = FloatUnary<Tanh>;
  t["sigmoid"] = FloatUnary<Sigmoid>;
  t["gelu"] = FloatUnary<Gelu>;
  t["silu"] = FloatUnary<Silu>;
  t["where"] = Where;
}

}  // namespace kiln::reference
