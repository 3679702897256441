// Legalization of the window operators (semantics in relax/op/nn.cc), NCHW. One reduction
// block each; padding reads select the pad value around a load whose indices are clamped
// into the input, so no read leaves the buffer.
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

struct Window {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  // Any side padded, bottom and right included: then taps may leave the input and are
  // bounds-checked (padding only at the end reads past the last row otherwise).
  bool padded = false;
  int64_t dil_h = 1, dil_w = 1;
};

absl::StatusOr<std::pair<int64_t, int64_t>> Pair(const CallNode& call, const char* name, int64_t fallback) {
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> v, IntsAttr(call, name));
  if (!v.has_value() || v->empty()) return std::make_pair(fallback, fallback);
  if (v->size() == 1) return std::make_pair((*v)[0], (*v)[0]);
  return std::make_pair((*v)[0], (*v)[1]);
}

absl::StatusOr<Window> ReadWindow(const CallNode& call, std::pair<int64_t, int64_t> default_stride) {
  Window w;
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> strides, IntsAttr(call, "strides"));
  if (strides.has_value() && !strides->empty()) {
    w.stride_h = (*strides)[0];
    w.stride_w = strides->size() > 1 ? (*strides)[1] : (*strides)[0];
  } else {
    w.stride_h = default_stride.first;
    w.stride_w = default_stride.second;
  }
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> padding, IntsAttr(call, "padding"));
  if (padding.has_value() && !padding->empty()) {
    w.pad_top = (*padding)[0];
    w.pad_left = padding->size() > 1 ? (*padding)[1] : (*padding)[0];
    for (int64_t p : *padding) w.padded |= p != 0;
  }
  KILN_ASSIGN_OR_RETURN(auto dil, Pair(call, "dilation", 1));
  w.dil_h = dil.first;
  w.dil_w = dil.second;
  return w;
}

// Input row / column of an output position and window offset, and whether it is inside.
struct Tap {
  PrimExpr h, w, inside;
};
Tap MakeTap(const Buffer& data, const Window& win, PrimExpr y, PrimExpr x, PrimExpr ky, PrimExpr kx) {
  PrimExpr h = tir::Sub(tir::Add(tir::Mul(y, PrimExpr(win.stride_h)), tir::Mul(ky, PrimExpr(win.dil_h))),
                        PrimExpr(win.pad_top));
  PrimExpr w = tir::Sub(tir::Add(tir::Mul(x, PrimExpr(win.stride_w)), tir::Mul(kx, PrimExpr(win.dil_w))),
                        PrimExpr(win.pad_left));
  if (!win.padded) return {h, w, PrimExpr()};
  PrimExpr zero = int64_t{0};
  PrimExpr inside = tir::And(tir::And(tir::GE(h, zero), tir::LT(h, data->shape[2])),
                             tir::And(tir::GE(w, zero), tir::LT(w, data->shape[3])));
  PrimExpr hc = tir::Min(tir::Max(h, zero), tir::Sub(data->shape[2], PrimExpr(int64_t{1})));
  PrimExpr wc = tir::Min(tir::Max(w, zero), tir::Sub(data->shape[3], PrimExpr(int64_t{1})));
  return {hc, wc, inside};
}

absl::StatusOr<tir::PrimFunc> LegalizeConv2d(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  if (data.ndim() != 4 || weight.ndim() != 4) return OpError(call, "cannot legalize: expects 4-d data and weight");
  KILN_ASSIGN_OR_RETURN(Window win, ReadWindow(call, {1, 1}));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> groups_attr, IntAttr(call, "groups"));
  const int64_t groups = groups_attr.value_or(1);
  const DataType t = out->dtype;
  auto cast = [&](PrimExpr e) { return e.dtype() == t ? e : tir::Cast(t, std::move(e)); };
  const PrimExpr out_per_group = tir::FloorDiv(weight->shape[0], PrimExpr(groups));
  Stmt body = ReduceBlock(
      "conv2d", out, {weight->shape[1], weight->shape[2], weight->shape[3]}, Const(t, 0), tir::Add,
      [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
        PrimExpr channel = groups == 1 ? r[0]
                                       : tir::Add(tir::Mul(tir::FloorDiv(s[1], out_per_group), weight->shape[1]), r[0]);
        Tap tap = MakeTap(data, win, s[2], s[3], r[1], r[2]);
        PrimExpr x = cast(data.Load({s[0], channel, tap.h, tap.w}));
        if (tap.inside.defined()) x = tir::Select(tap.inside, x, Const(t, 0));
        return tir::Mul(x, cast(weight.Load({s[1], r[0], r[1], r[2]})));
      });
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

absl::StatusOr<tir::PrimFunc> LegalizeMaxPool2d(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& out = p.outputs[0];
  if (data.ndim() != 4) return OpError(call, "cannot legalize: expects 4-d data");
  KILN_ASSIGN_OR_RETURN(auto pool, Pair(call, "pool_size", 1));
  KILN_ASSIGN_OR_RETURN(Window win, ReadWindow(call, pool));
  const DataType t = out->dtype;
  Stmt body = ReduceBlock("max_pool2d", out, {PrimExpr(pool.first), PrimExpr(pool.second)}, LowestValue(t), tir::Max,
                          [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                            Tap tap = MakeTap(data, win, s[2], s[3], r[0], r[1]);
                            PrimExpr x = data.Load({s[0], s[1], tap.h, tap.w});
                            if (tap.inside.defined()) x = tir::Select(tap.inside, x, LowestValue(t));
                            return x;
                          });
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

}  // namespace

void RegisterNnLegalize(OpRegistry& registry) {
  registry.SetLegalize("conv2d", LegalizeConv2d);
  registry.SetLegalize("max_pool2d", LegalizeMaxPool2d);
}

}  // namespace kiln::relax::op
