// Legalization of the channel normalizations (semantics in relax/op/normalization.cc).
//  - batch_norm: one elementwise block reading the per-channel parameters.
//  - group_norm / instance_norm: per (sample, group) the sum, then the sum of squared
//    deviations from its mean (two passes, for accuracy, as layer_norm), both in scratch
//    buffers of shape (N, groups), then the affine normalization. instance_norm is the
//    case of one channel per group.
//  - lrn: the windowed sum of squares across channels into a scratch buffer (taps outside
//    [0, C) read a clamped index and contribute 0), then x * exp(-beta * log(base)), which
//    is x / base^beta for every base > 0 (and NaN where pow gives NaN) with the vectorizable
//    exp and log.
// float16 computes in float32 and rounds once (AccumulationType).
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<DataType> FloatData(const CallNode& call, const Buffer& data) {
  const DataType t = data->dtype;
  if (!t.is_float()) {
    return absl::UnimplementedError(absl::StrCat(OpName(call), ": no CPU lowering for dtype ", t.ToString()));
  }
  if (data.ndim() < 2) return OpError(call, "cannot legalize: data needs a channel axis");
  return t;
}

absl::StatusOr<tir::PrimFunc> LegalizeBatchNorm(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(DataType t, FloatData(call, data));
  KILN_ASSIGN_OR_RETURN(std::optional<double> eps, FloatAttr(call, "epsilon"));
  const DataType a = AccumulationType(t);
  Stmt body = ComputeBlock("batch_norm", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
    auto param = [&](size_t k) { return CastTo(a, p.inputs[k].Load({i[1]})); };
    PrimExpr scale = tir::Div(param(1), tir::Call("sqrt", {tir::Add(param(4), Const(a, eps.value_or(1e-5)))}));
    return CastTo(t, tir::Add(tir::Mul(tir::Sub(CastTo(a, data.Load(i)), param(3)), scale), param(2)));
  });
  return MakePrimFunc(p, body, "broadcast");
}

// group_norm (instance = false) and instance_norm (instance = true).
KernelLegalizeFn GroupNorm(bool instance) {
  return [instance](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    const Buffer& data = p.inputs[0];
    const Buffer& scale = p.inputs[1];
    const Buffer& bias = p.inputs[2];
    const Buffer& out = p.outputs[0];
    KILN_ASSIGN_OR_RETURN(DataType t, FloatData(call, data));
    KILN_ASSIGN_OR_RETURN(std::optional<double> eps, FloatAttr(call, "epsilon"));
    PrimExpr groups;
    PrimExpr per_group;  // channels per group
    if (instance) {
      groups = data->shape[1];
      per_group = int64_t{1};
    } else {
      KILN_ASSIGN_OR_RETURN(std::optional<int64_t> g, IntAttr(call, "num_groups"));
      if (!g || *g <= 0) return OpError(call, "cannot legalize: num_groups must be positive");
      groups = *g;
      per_group = tir::FloorDiv(data->shape[1], groups);
    }
    const DataType a = AccumulationType(t);
    std::vector<PrimExpr> extents = {per_group};
    PrimExpr count = per_group;
    for (size_t d = 2; d < data->shape.size(); ++d) {
      extents.push_back(data->shape[d]);
      count = tir::Mul(count, data->shape[d]);
    }
    const PrimExpr count_f = tir::Cast(a, count);
    // The element of group (s[0], s[1]) at reduction position r (channel within the group,
    // then the spatial dims).
    auto at = [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
      std::vector<PrimExpr> index = {s[0], instance ? s[1] : tir::Add(tir::Mul(s[1], per_group), r[0])};
      index.insert(index.end(), r.begin() + 1, r.end());
      return CastTo(a, data.Load(index));
    };
    const std::vector<PrimExpr> stats_shape = {data->shape[0], groups};
    const Buffer sum = ScratchBuffer("group_norm_sum", a, stats_shape);
    const Buffer sq = ScratchBuffer("group_norm_sum_dev_sq", a, stats_shape);
    Stmt sum_block = ReduceBlock("group_norm_sum", sum, extents, Const(a, 0), tir::Add, at);
    Stmt sq_block = ReduceBlock("group_norm_var", sq, extents, Const(a, 0), tir::Add,
                                [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                                  PrimExpr dev = tir::Sub(at(s, r), tir::Div(sum.Load(s), count_f));
                                  return tir::Mul(dev, dev);
                                });
    Stmt norm_block = ComputeBlock(OpName(call), out, [&](const std::vector<PrimExpr>& i) {
      std::vector<PrimExpr> g = {i[0], instance ? i[1] : tir::FloorDiv(i[1], per_group)};
      PrimExpr centered = tir::Sub(CastTo(a, data.Load(i)), tir::Div(sum.Load(g), count_f));
      PrimExpr inv_std = tir::Div(Const(a, 1), tir::Call("sqrt", {tir::Add(tir::Div(sq.Load(g), count_f),
                                                                          Const(a, eps.value_or(1e-5)))}));
      return CastTo(t, tir::Add(tir::Mul(tir::Mul(centered, inv_std), CastTo(a, scale.Load({i[1]}))),
                                CastTo(a, bias.Load({i[1]}))));
    });
    return MakePrimFunc(p, tir::Allocate(sum, tir::Allocate(sq, tir::SeqStmt({sum_block, sq_block, norm_block}))),
                        "opaque");
  };
}

absl::StatusOr<tir::PrimFunc> LegalizeLrn(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(DataType t, FloatData(call, data));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, IntAttr(call, "size"));
  if (!size || *size <= 0) return OpError(call, "cannot legalize: size must be positive");
  KILN_ASSIGN_OR_RETURN(std::optional<double> alpha, FloatAttr(call, "alpha"));
  KILN_ASSIGN_OR_RETURN(std::optional<double> beta, FloatAttr(call, "beta"));
  KILN_ASSIGN_OR_RETURN(std::optional<double> bias, FloatAttr(call, "bias"));
  const DataType a = AccumulationType(t);
  const Buffer sq = ScratchBuffer("lrn_sum_sq", a, data->shape);
  const PrimExpr channels = data->shape[1];
  const PrimExpr zero = int64_t{0};
  const int64_t before = (*size - 1) / 2;
  Stmt sum_block = ReduceBlock("lrn_sum_sq", sq, {PrimExpr(*size)}, Const(a, 0), tir::Add,
                               [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                                 PrimExpr c = tir::Add(tir::Sub(s[1], PrimExpr(before)), r[0]);
                                 PrimExpr inside = tir::And(tir::GE(c, zero), tir::LT(c, channels));
                                 std::vector<PrimExpr> index = s;
                                 index[1] = tir::Min(tir::Max(c, zero), tir::Sub(channels, PrimExpr(int64_t{1})));
                                 PrimExpr x = CastTo(a, data.Load(index));
                                 return tir::Select(inside, tir::Mul(x, x), Const(a, 0));
                               });
  const double coef = alpha.value_or(1e-4) / static_cast<double>(*size);
  Stmt norm_block = ComputeBlock("lrn", out, [&](const std::vector<PrimExpr>& i) {
    PrimExpr base = tir::Add(Const(a, bias.value_or(1.0)), tir::Mul(Const(a, coef), sq.Load(i)));
    PrimExpr factor = tir::Call("exp", {tir::Mul(Const(a, -beta.value_or(0.75)), tir::Call("log", {base}))});
    return CastTo(t, tir::Mul(CastTo(a, data.Load(i)), factor));
  });
  return MakePrimFunc(p, tir::Allocate(sq, tir::SeqStmt({sum_block, norm_block})), "opaque");
}

}  // namespace

void RegisterNormalizationLegalize(OpRegistry& registry) {
  registry.SetLegalize("batch_norm", LegalizeBatchNorm);
  registry.SetLegalize("group_norm", GroupNorm(false));
  registry.SetLegalize("instance_norm", GroupNorm(true));
  registry.SetLegalize("lrn", LegalizeLrn);
}

}  // namespace kiln::relax::op
