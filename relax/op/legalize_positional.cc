// Legalization of rotary_embedding (semantics in relax/op/positional.cc): one elementwise
// kernel over the output. Output dim j of a row reads its own element and its pair partner;
// which partner and which pair index m depend only on j, so each is a select on j.
#include <cmath>

#include "relax/op/ggml_numerics.h"
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/rotary_params.h"
#include "support/status_macros.h"

namespace kiln::relax::op {

absl::StatusOr<RotaryParams> RotaryParamsOf(const CallNode& call, const Buffer& x) {
  std::optional<int64_t> head_dim = x->shape[2].as_int();
  if (!head_dim) return OpError(call, "cannot legalize: the head dim must be a constant");
  KILN_ASSIGN_OR_RETURN(std::optional<double> theta_attr, FloatAttr(call, "theta"));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> dims_attr, IntAttr(call, "rotary_dims"));
  auto mode_it = call.attrs.find("mode");
  RotaryParams params;
  params.neox = mode_it != call.attrs.end() && std::get<std::string>(mode_it->second) == "neox";
  params.theta = theta_attr.value_or(10000.0);
  params.dims = dims_attr.value_or(*head_dim);
  return params;
}

namespace {

absl::StatusOr<tir::PrimFunc> LegalizeRotaryEmbedding(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  if (p.inputs.size() != 2) return OpError(call, "cannot legalize: expects two tensor operands");
  const Buffer& x = p.inputs[0];
  const Buffer& positions = p.inputs[1];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(RotaryParams params, RotaryParamsOf(call, x));
  const bool neox = params.neox;
  const double theta = params.theta;
  const int64_t dims = params.dims;
  const int64_t half = dims / 2;
  const DataType f32 = DataType::Float32();
  const DataType f64 = DataType::Float(64);
  Stmt body = ComputeBlock("rotary_embedding", out, [&](const std::vector<PrimExpr>& index) {
    const PrimExpr& i = index[0];
    const PrimExpr& h = index[1];
    const PrimExpr& j = index[2];
    // Pair index m, whether j is the pair's first element, and its partner's dim.
    PrimExpr m = neox ? tir::FloorMod(j, Int(half)) : tir::FloorDiv(j, Int(2));
    PrimExpr first = neox ? tir::LT(j, Int(half)) : tir::EQ(tir::FloorMod(j, Int(2)), Int(0));
    PrimExpr partner = neox ? tir::Select(first, j + Int(half), j - Int(half))
                            : tir::Select(first, j + Int(1), j - Int(1));
    // angle = position * theta^(-2m / dims), in float64, rounded once.
    PrimExpr exponent = tir::Cast(f64, m) * tir::FloatImm(f64, -2.0 / static_cast<double>(dims));
    PrimExpr inv_freq = tir::Call("exp", {exponent * tir::FloatImm(f64, std::log(theta))});
    PrimExpr angle = tir::Cast(f32, tir::Cast(f64, positions.Load({i})) * inv_freq);
    PrimExpr cos = tir::Call("cos", {angle});
    PrimExpr sin = tir::Call("sin", {angle});
    PrimExpr self = x.Load({i, h, j});
    // Inside the rotated dims partner is valid; outside, clamp it so the load stays in bounds.
    PrimExpr other = x.Load({i, h, tir::Select(tir::LT(j, Int(dims)), partner, j)});
    PrimExpr rotated = tir::Select(first, self * cos - other * sin, other * sin + self * cos);
    return tir::Select(tir::LT(j, Int(dims)), rotated, self);
  });
  return MakePrimFunc(p, body, "injective");
}

}  // namespace

void RegisterPositionalLegalize(OpRegistry& registry) {
  registry.SetLegalize("rotary_embedding", [](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(GgmlNumerics numerics, GgmlNumericsAttr(call));
    return numerics != GgmlNumerics::kDefault ? LegalizeGgmlRope(call) : LegalizeRotaryEmbedding(call);
  });
}

}  // namespace kiln::relax::op
