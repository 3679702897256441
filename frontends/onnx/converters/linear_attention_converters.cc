// LinearAttention (opset 27): attention with a recurrent state S (B, H_kv, d_k, d_v) in place
// of a softmax over all keys, computed in float32 as ONNX's reference does. For each step t
// of the (static) sequence, unrolled:
//   gated rules:  S *= exp(decay_t)                       (per head, or per key dim)
//   delta rules:  v_t = beta_t (v_t - S^T (e_t k_t))      (what S already holds of v_t removed)
//   every rule:   S += k_t v_t^T
//   output_t    = scale q_t S                             (S repeated over GQA's query heads)
// update_rule picks linear (none of the first two), gated, delta or gated_delta (both).
// e_t is the optional erase_gate (input 6, (B, T, H_kv d_k); 1 without it), which ONNX
// proposes for its next LinearAttention (onnx/onnx#8064, Gated DeltaNet-2): it scales the key
// that reads what is erased, while the write below keeps k_t. Only the delta rules take it.
// The outputs: (B, T, H_q d_v) in query's type, and present_state in past_state's type
// (query's without one).
#include <cmath>
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Steps unrolled at most: each is a handful of small kernels.
constexpr int64_t kMaxSteps = 4096;

absl::StatusOr<Expr> ToFloat32(NodeContext& c, Expr x, DataType dtype) {
  if (dtype == DataType::Float32()) return x;
  return c.Call("astype", {std::move(x)}, {{"dtype", DataType::Float32()}});
}

// Input i, (B, T, heads * last) in float32, as (B, heads, T, last).
absl::StatusOr<Expr> Heads(NodeContext& c, int i, int64_t b, int64_t t, int64_t heads, int64_t last) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(i));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(i));
  KILN_ASSIGN_OR_RETURN(x, ToFloat32(c, x, dtype));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {PrimExpr(b), PrimExpr(t), PrimExpr(heads), PrimExpr(last)}));
  return c.Call("permute_dims", {x}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
}

absl::StatusOr<std::vector<Value>> ConvertLinearAttention(NodeContext& c) {
  const std::string rule = c.AttrString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return c.Error("update_rule '", rule, "' is not linear, gated, delta or gated_delta");
  }
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (gating != c.has_input(4)) return c.Error("update_rule '", rule, gating ? "' needs" : "' forbids", " decay");
  if (delta != c.has_input(5)) return c.Error("update_rule '", rule, delta ? "' needs" : "' forbids", " beta");
  const bool erase_gate = c.has_input(6);
  if (erase_gate && !delta) return c.Error("update_rule '", rule, "' forbids erase_gate (delta rules only)");
  const int64_t hq = c.AttrInt("q_num_heads", 0), hkv = c.AttrInt("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) {
    return c.Error("q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (", hkv, ")");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> qs, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ks, c.InputShape(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> vs, c.InputShape(2));
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3) return c.Error("query, key and value must be 3-D");
  const int64_t b = StaticDim(qs[0]), t = StaticDim(qs[1]), q_width = StaticDim(qs[2]), v_width = StaticDim(vs[2]);
  if (b < 0 || t < 0 || q_width < 0 || v_width < 0) return c.Unsupported("needs static shapes");
  if (t > kMaxSteps) return c.Unsupported(t, " steps are too many to unroll (at most ", kMaxSteps, ")");
  if (q_width % hq != 0 || v_width % hkv != 0) return c.Error("hidden sizes must divide by the head counts");
  const int64_t dk = q_width / hq, dv = v_width / hkv, group = hq / hkv;
  if (StaticDim(ks[2]) != hkv * dk) return c.Error("key's last dim must be kv_num_heads * d_k = ", hkv * dk);
  KILN_ASSIGN_OR_RETURN(DataType out_type, c.InputDType(0));

  KILN_ASSIGN_OR_RETURN(Expr q, Heads(c, 0, b, t, hq, dk));
  KILN_ASSIGN_OR_RETURN(Expr k, Heads(c, 1, b, t, hkv, dk));
  KILN_ASSIGN_OR_RETURN(Expr v, Heads(c, 2, b, t, hkv, dv));
  Expr decay, beta, erase;
  int64_t decay_last = 0, beta_last = 0;
  if (gating) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ds, c.InputShape(4));
    decay_last = ds.size() == 3 ? StaticDim(ds[2]) : -1;
    if (decay_last != hkv && decay_last != hkv * dk) {
      return c.Error("decay must be 3-D with last dim kv_num_heads (", hkv, ") or kv_num_heads * d_k (", hkv * dk, ")");
    }
    KILN_ASSIGN_OR_RETURN(decay, Heads(c, 4, b, t, hkv, decay_last / hkv));
  }
  if (delta) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bs, c.InputShape(5));
    beta_last = bs.size() == 3 ? StaticDim(bs[2]) : -1;
    if (beta_last != hkv && beta_last != 1) return c.Error("beta must be 3-D with last dim kv_num_heads or 1");
    KILN_ASSIGN_OR_RETURN(beta, Heads(c, 5, b, t, beta_last, 1));
  }
  if (erase_gate) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> es, c.InputShape(6));
    if (es.size() != 3 || StaticDim(es[0]) != b || StaticDim(es[1]) != t || StaticDim(es[2]) != hkv * dk) {
      return c.Error("erase_gate must have shape (", b, ", ", t, ", ", hkv * dk, ")");
    }
    KILN_ASSIGN_OR_RETURN(erase, Heads(c, 6, b, t, hkv, dk));
  }
  const std::vector<PrimExpr> state_shape = {PrimExpr(b), PrimExpr(hkv), PrimExpr(dk), PrimExpr(dv)};
  Expr state;
  DataType state_type = out_type;
  if (c.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ps, c.InputShape(3));
    if (ps.size() != 4 || StaticDim(ps[0]) != b || StaticDim(ps[1]) != hkv || StaticDim(ps[2]) != dk ||
        StaticDim(ps[3]) != dv) {
      return c.Error("past_state must have shape (", b, ", ", hkv, ", ", dk, ", ", dv, ")");
    }
    KILN_ASSIGN_OR_RETURN(state_type, c.InputDType(3));
    KILN_ASSIGN_OR_RETURN(state, c.Input(3));
    KILN_ASSIGN_OR_RETURN(state, ToFloat32(c, state, state_type));
  } else {
    KILN_ASSIGN_OR_RETURN(state, c.Call("full", {relax::ShapeExpr(state_shape), ScalarConstant(0, DataType::Float32())},
                                        {{"dtype", DataType::Float32()}}));
  }
  const double attr_scale = c.AttrFloat("scale", 0.0);
  const double scale = attr_scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(dk)) : attr_scale;

  auto at_step = [&](const Expr& x, int64_t heads, int64_t last, int64_t i) {
    return TakeIndex(c, x, {PrimExpr(b), PrimExpr(heads), PrimExpr(t), PrimExpr(last)}, 2, i);
  };
  const PrimExpr one(int64_t{1});
  std::vector<Expr> outputs;
  for (int64_t i = 0; i < t; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr q_t, at_step(q, hq, dk, i));
    KILN_ASSIGN_OR_RETURN(Expr k_t, at_step(k, hkv, dk, i));
    KILN_ASSIGN_OR_RETURN(Expr v_t, at_step(v, hkv, dv, i));
    if (gating) {  // S *= exp(g_t), g_t per head (B, H, 1) or per key dim (B, H, d_k), over d_v
      const int64_t g_last = decay_last / hkv;
      KILN_ASSIGN_OR_RETURN(Expr g_t, at_step(decay, hkv, g_last, i));
      KILN_ASSIGN_OR_RETURN(g_t, c.Call("exp", {g_t}));
      KILN_ASSIGN_OR_RETURN(g_t, Reshape(c, g_t, {PrimExpr(b), PrimExpr(hkv), PrimExpr(g_last), one}));
      KILN_ASSIGN_OR_RETURN(state, c.Call("multiply", {state, g_t}));
    }
    KILN_ASSIGN_OR_RETURN(Expr k_row, Reshape(c, k_t, {PrimExpr(b), PrimExpr(hkv), one, PrimExpr(dk)}));
    if (delta) {  // v_t = beta_t (v_t - (e_t k_t) S)
      Expr erase_row = k_row;
      if (erase_gate) {
        KILN_ASSIGN_OR_RETURN(Expr e_t, at_step(erase, hkv, dk, i));
        KILN_ASSIGN_OR_RETURN(e_t, Reshape(c, e_t, {PrimExpr(b), PrimExpr(hkv), one, PrimExpr(dk)}));
        KILN_ASSIGN_OR_RETURN(erase_row, c.Call("multiply", {k_row, e_t}));
      }
      KILN_ASSIGN_OR_RETURN(Expr retrieved, c.Call("matmul", {erase_row, state}));
      KILN_ASSIGN_OR_RETURN(retrieved, Reshape(c, retrieved, {PrimExpr(b), PrimExpr(hkv), PrimExpr(dv)}));
      KILN_ASSIGN_OR_RETURN(Expr beta_t, at_step(beta, beta_last, 1, i));
      KILN_ASSIGN_OR_RETURN(Expr residual, c.Call("subtract", {v_t, retrieved}));
      KILN_ASSIGN_OR_RETURN(v_t, c.Call("multiply", {beta_t, residual}));
    }
    // S += k_t v_t^T
    KILN_ASSIGN_OR_RETURN(Expr k_col, Reshape(c, k_t, {PrimExpr(b), PrimExpr(hkv), PrimExpr(dk), one}));
    KILN_ASSIGN_OR_RETURN(Expr v_row, Reshape(c, v_t, {PrimExpr(b), PrimExpr(hkv), one, PrimExpr(dv)}));
    KILN_ASSIGN_OR_RETURN(Expr outer, c.Call("multiply", {k_col, v_row}));
    KILN_ASSIGN_OR_RETURN(state, c.Call("add", {state, outer}));
    // Read: each K/V head's state serves `group` consecutive query heads.
    Expr read = state;
    if (group > 1) {
      const std::vector<PrimExpr> grouped = {PrimExpr(b), PrimExpr(hkv), one, PrimExpr(dk), PrimExpr(dv)};
      KILN_ASSIGN_OR_RETURN(read, Reshape(c, read, grouped));
      KILN_ASSIGN_OR_RETURN(read, c.Call("broadcast_to", {read, relax::ShapeExpr({PrimExpr(b), PrimExpr(hkv),
                                                                                   PrimExpr(group), PrimExpr(dk),
                                                                                   PrimExpr(dv)})}));
      KILN_ASSIGN_OR_RETURN(read, Reshape(c, read, {PrimExpr(b), PrimExpr(hq), PrimExpr(dk), PrimExpr(dv)}));
    }
    KILN_ASSIGN_OR_RETURN(Expr q_row, Reshape(c, q_t, {PrimExpr(b), PrimExpr(hq), one, PrimExpr(dk)}));
    KILN_ASSIGN_OR_RETURN(Expr o_t, c.Call("matmul", {q_row, read}));
    KILN_ASSIGN_OR_RETURN(o_t, c.Call("multiply", {o_t, ScalarConstant(scale, DataType::Float32())}));
    outputs.push_back(o_t);  // (B, H_q, 1, d_v)
  }
  Expr y = outputs.size() == 1 ? outputs[0] : Expr();
  if (!y.defined()) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("concat", {relax::Tuple(outputs)}, {{"axis", int64_t{2}}}));
  }
  KILN_ASSIGN_OR_RETURN(y, c.Call("permute_dims", {y}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}}));
  KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, {PrimExpr(b), PrimExpr(t), PrimExpr(hq * dv)}));
  if (out_type != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", out_type}}));
  }
  if (state_type != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(state, c.Call("astype", {state}, {{"dtype", state_type}}));
  }
  Value present = Value::Of(state);
  if (const Value* past = c.InputValue(3)) present.narrow_type = past->narrow_type;
  std::vector<Value> result = {Value::Of(y), std::move(present)};
  if (const Value* query = c.InputValue(0)) result[0].narrow_type = query->narrow_type;
  return result;
}

}  // namespace

void RegisterLinearAttentionConverters(ConverterRegistry& r) {
  r.Register("LinearAttention", ConvertLinearAttention, 27);
}

}  // namespace kiln::frontends::onnx
