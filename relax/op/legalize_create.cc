// Legalization of the creation operators (semantics in relax/op/create.cc). The output's
// symbolic dims come only from the output buffer (the caller allocates it). Scalar operands
// (a Prim fill value, arange's Prim bounds) are constants folded into the kernel or
// symbolic integer expressions (their unbound variables become scalar parameters); a
// symbolic float is an Unimplemented error. A 0-d tensor fill value is a kernel parameter.
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

bool IsConstant(const PrimExpr& e) {
  return e.kind() == tir::ExprKind::kIntImm || e.kind() == tir::ExprKind::kFloatImm;
}

// The value of a Prim argument (a PrimValue or a value of known Prim struct info): a
// constant, or a symbolic integer expression made usable in the kernel.
absl::StatusOr<PrimExpr> PrimArg(const CallNode& call, size_t index, KernelParams& params) {
  PrimExpr value;
  if (const auto* pv = call.args[index].as<PrimValueNode>()) {
    value = pv->value;
  } else if (const auto* ps = call.args[index].struct_info().as<PrimStructInfoNode>()) {
    value = ps->value;
  }
  if (!value.defined() || (!IsConstant(value) && !value.dtype().is_integer())) {
    return absl::UnimplementedError(absl::StrCat(
        OpName(call), ": legalization needs a constant or a symbolic integer for argument ", index));
  }
  if (IsConstant(value)) return value;
  if (value.dtype() != DataType::Int64()) value = tir::Cast(DataType::Int64(), value);
  return UseSymbolic(params, value);
}

double AsDouble(const PrimExpr& e) {
  if (const auto* f = e.as<tir::FloatImmNode>()) return f->value;
  return static_cast<double>(*e.as_int());
}

// `e` (a constant or an int64 expression) as a `dtype` expression.
PrimExpr As(DataType dtype, const PrimExpr& e) {
  if (IsConstant(e)) return Const(dtype, AsDouble(e));
  return e.dtype() == dtype ? e : tir::Cast(dtype, e);
}

absl::StatusOr<tir::PrimFunc> LegalizeFull(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& out = p.outputs[0];
  const DataType t = out->dtype;
  PrimExpr fill;
  if (!p.inputs.empty()) {
    fill = p.inputs[0].Load({});
  } else {
    KILN_ASSIGN_OR_RETURN(PrimExpr value, PrimArg(call, 1, p));
    fill = value.dtype() == t || !IsConstant(value) ? value : Const(t, AsDouble(value));
  }
  if (fill.dtype() != t) fill = t.is_bool() ? tir::NE(fill, Const(fill.dtype(), 0)) : tir::Cast(t, fill);
  return MakePrimFunc(p, ComputeBlock("full", out, [&](const std::vector<PrimExpr>&) { return fill; }),
                      "elementwise");
}

KernelLegalizeFn Fill(double value) {
  return [value](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    const Buffer& out = p.outputs[0];
    PrimExpr fill = Const(out->dtype, value);
    return MakePrimFunc(p, ComputeBlock(OpName(call), out, [&](const std::vector<PrimExpr>&) { return fill; }),
                        "elementwise");
  };
}

absl::StatusOr<tir::PrimFunc> LegalizeArange(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& out = p.outputs[0];
  const DataType t = out->dtype;
  PrimExpr start = int64_t{0};
  PrimExpr step = int64_t{1};
  if (call.args.size() >= 2) {
    KILN_ASSIGN_OR_RETURN(start, PrimArg(call, 0, p));
  }
  if (call.args.size() == 3) {
    KILN_ASSIGN_OR_RETURN(step, PrimArg(call, 2, p));
  }
  if (call.args.empty()) {
    auto it = call.attrs.find("start");
    if (it != call.attrs.end()) {
      if (const auto* i = std::get_if<int64_t>(&it->second)) start = *i;
      if (const auto* d = std::get_if<double>(&it->second)) start = tir::FloatImm(DataType::Float(64), *d);
    }
    it = call.attrs.find("step");
    if (it != call.attrs.end()) {
      if (const auto* i = std::get_if<int64_t>(&it->second)) step = *i;
      if (const auto* d = std::get_if<double>(&it->second)) step = tir::FloatImm(DataType::Float(64), *d);
    }
  }
  const bool integer = start.dtype().is_integer() && step.dtype().is_integer();
  Stmt body = ComputeBlock("arange", out, [&](const std::vector<PrimExpr>& i) {
    PrimExpr value;
    if (integer) {
      value = tir::Add(As(DataType::Int64(), start), tir::Mul(i[0], As(DataType::Int64(), step)));
    } else {
      const DataType f64 = DataType::Float(64);
      value = tir::Add(As(f64, start), tir::Mul(tir::Cast(f64, i[0]), As(f64, step)));
    }
    return value.dtype() == t ? value : tir::Cast(t, value);
  });
  return MakePrimFunc(p, body, "injective");
}

}  // namespace

void RegisterCreateLegalize(OpRegistry& registry) {
  registry.SetLegalize("full", LegalizeFull);
  registry.SetLegalize("zeros", Fill(0));
  registry.SetLegalize("ones", Fill(1));
  registry.SetLegalize("arange", LegalizeArange);
}

}  // namespace kiln::relax::op
