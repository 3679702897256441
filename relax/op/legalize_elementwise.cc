// Legalization of the elementwise operators (semantics in relax/op/elementwise.cc): one
// spatial block over the broadcast output. Integer divide truncates (tir Div on integers).
// Integer power goes through float64 pow, rounded to the nearest integer before the cast: exact
// while |result| < 2^53 (a larger result, which wraps in the reference, is not) even where pow
// is a few ulp off (CUDA's pow(3.0, 1.0) may give 2.9999999999999996, which truncates to 2); a
// negative exponent of |x| >= 2 gives |result| <= 0.5, which rounds to 0 as truncation would. The transcendental functions,
// gelu and silu need a float dtype.
#include <cmath>

#include "relax/op/legalize_common.h"
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

}  // namespace

void RegisterElementwiseLegalize(OpRegistry& registry) {
  registry.SetLegalize("add", Binary(tir::Add, false));
  registry.SetLegalize("subtract", Binary(tir::Sub, false));
  registry.SetLegalize("multiply", Binary(tir::Mul, false));
  registry.SetLegalize("divide", Binary(tir::Div, false));
  registry.SetLegalize("maximum", Binary(tir::Max, false));
  registry.SetLegalize("minimum", Binary(tir::Min, false));
  registry.SetLegalize("power", Binary(Pow, false));
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
  registry.SetLegalize("silu", Unary(Silu, true));
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
