// ONNX's transformer-block operators (opset 23), decomposed into Kiln operators:
//
// RotaryEmbedding: ONNX passes the cos/sin caches as inputs (Kiln's rotary_embedding
// computes them from theta), so the rotation is spelled out: slice the rotated part into
// halves (or even/odd lanes when interleaved), real = cos x1 - sin x2, imag = sin x1 + cos x2,
// and put them back. With position_ids the caches are gathered by position.
//
// Attention: scores = (Q sqrt(scale)) (K sqrt(scale))^T (+ softcap) + bias, softmax, times V. 3-D Q/K/V are split
// into q_num_heads / kv_num_heads heads; fewer K/V heads than Q heads (GQA) repeat each K/V
// head; past_key/past_value are concatenated in front along the sequence. The bias combines
// attn_mask (boolean: false masks; float: added; a mask shorter than the total sequence is
// padded with masked positions), is_causal (query i sees keys j <= i + offset), the sliding
// window (keys i + offset - left_window_size .. i + offset + right_window_size) and
// nonpad_kv_seqlen (opset 24: per batch, keys from nonpad_kv_seqlen[b] on are padding, and
// offset is nonpad_kv_seqlen[b] - q_len; without it offset is the past length).
// Rows whose bias masks every key give 0, as the spec's reference does.
//
// FlexAttention (ai.onnx.preview): the same scores in Q's type, then score_mod / prob_mod
// subgraphs (inlined) around a softmax in float32 (or softmax_precision).
#include <cmath>
#include <limits>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

absl::StatusOr<Expr> Permute(NodeContext& c, Expr x, std::vector<int64_t> axes) {
  return c.Call("permute_dims", {std::move(x)}, {{"axes", std::move(axes)}});
}

// x[..., begin:end:stride] on the last of `ndim` axes.
absl::StatusOr<Expr> SliceLast(NodeContext& c, Expr x, int64_t ndim, int64_t begin, int64_t end, int64_t stride = 1) {
  return c.Call("strided_slice", {std::move(x)},
                {{"begin", std::vector<int64_t>{begin}},
                 {"end", std::vector<int64_t>{end}},
                 {"axes", std::vector<int64_t>{ndim - 1}},
                 {"strides", std::vector<int64_t>{stride}}});
}

absl::StatusOr<Expr> Concat(NodeContext& c, std::vector<Expr> parts, int64_t axis) {
  return c.Call("concat", {relax::Tuple(std::move(parts))}, {{"axis", axis}});
}

Expr Int64Scalar(int64_t v) { return ScalarConstant(static_cast<double>(v), DataType::Int64()); }

absl::StatusOr<std::vector<Value>> ConvertRotaryEmbedding(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  PrimExpr batch = in[0], seq, heads, head_size;
  if (in.size() == 4) {  // [batch, heads, seq, head_size] -> [batch, seq, heads, head_size]
    seq = in[2];
    heads = in[1];
    head_size = in[3];
    KILN_ASSIGN_OR_RETURN(x, Permute(c, x, {0, 2, 1, 3}));
  } else if (in.size() == 3) {  // [batch, seq, hidden] with num_heads heads
    const int64_t num_heads = c.AttrInt("num_heads", 0);
    if (num_heads < 1) return c.Error("a 3-D input needs the num_heads attribute");
    seq = in[1];
    heads = PrimExpr(num_heads);
    head_size = Simplify(tir::FloorDiv(in[2], PrimExpr(num_heads)));
    KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {batch, seq, heads, head_size}));
  } else {
    return c.Error("needs a 3-D or 4-D input, got ", in.size(), " dims");
  }
  const int64_t d = StaticDim(head_size);
  if (d < 0) return c.Unsupported("needs a static head size");
  int64_t rotary = c.AttrInt("rotary_embedding_dim", 0);
  if (rotary == 0) rotary = d;
  if (rotary < 0 || rotary > d || rotary % 2 != 0) {
    return c.Error("rotary_embedding_dim ", rotary, " must be even and at most the head size ", d);
  }
  const int64_t half = rotary / 2;
  const bool interleaved = c.AttrInt("interleaved", 0) != 0;

  KILN_ASSIGN_OR_RETURN(Expr cos, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr sin, c.Input(2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> cache, c.InputShape(1));
  if (cache.empty() || StaticDim(cache.back()) != half) {
    return c.Error("the cos/sin caches' last dim must be rotary_embedding_dim / 2 = ", half);
  }
  if (c.has_input(3)) {  // caches [max_position, half] gathered to [batch, seq, half]
    if (cache.size() != 2) return c.Error("with position_ids the caches must be 2-D");
    KILN_ASSIGN_OR_RETURN(Expr ids, c.Input(3));
    KILN_ASSIGN_OR_RETURN(cos, c.Call("take", {cos, ids}, {{"axis", int64_t{0}}}));
    KILN_ASSIGN_OR_RETURN(sin, c.Call("take", {sin, ids}, {{"axis", int64_t{0}}}));
  } else if (cache.size() != 3) {
    return c.Error("without position_ids the caches must be 3-D [batch, seq, dim / 2]");
  }
  // One cos/sin per (batch, position), shared by the heads.
  KILN_ASSIGN_OR_RETURN(cos, Reshape(c, cos, {batch, seq, PrimExpr(1), PrimExpr(half)}));
  KILN_ASSIGN_OR_RETURN(sin, Reshape(c, sin, {batch, seq, PrimExpr(1), PrimExpr(half)}));

  Expr x1, x2;
  if (interleaved) {
    KILN_ASSIGN_OR_RETURN(x1, SliceLast(c, x, 4, 0, rotary, 2));
    KILN_ASSIGN_OR_RETURN(x2, SliceLast(c, x, 4, 1, rotary, 2));
  } else {
    KILN_ASSIGN_OR_RETURN(x1, SliceLast(c, x, 4, 0, half));
    KILN_ASSIGN_OR_RETURN(x2, SliceLast(c, x, 4, half, rotary));
  }
  KILN_ASSIGN_OR_RETURN(Expr cx1, c.Call("multiply", {cos, x1}));
  KILN_ASSIGN_OR_RETURN(Expr sx2, c.Call("multiply", {sin, x2}));
  KILN_ASSIGN_OR_RETURN(Expr sx1, c.Call("multiply", {sin, x1}));
  KILN_ASSIGN_OR_RETURN(Expr cx2, c.Call("multiply", {cos, x2}));
  KILN_ASSIGN_OR_RETURN(Expr real, c.Call("subtract", {cx1, sx2}));
  KILN_ASSIGN_OR_RETURN(Expr imag, c.Call("add", {sx1, cx2}));
  Expr rotated;
  if (interleaved) {  // lanes real0, imag0, real1, imag1, ...
    const std::vector<PrimExpr> lane = {batch, seq, heads, PrimExpr(half), PrimExpr(1)};
    KILN_ASSIGN_OR_RETURN(real, Reshape(c, real, lane));
    KILN_ASSIGN_OR_RETURN(imag, Reshape(c, imag, lane));
    KILN_ASSIGN_OR_RETURN(rotated, Concat(c, {real, imag}, 4));
    KILN_ASSIGN_OR_RETURN(rotated, Reshape(c, rotated, {batch, seq, heads, PrimExpr(rotary)}));
  } else {
    KILN_ASSIGN_OR_RETURN(rotated, Concat(c, {real, imag}, 3));
  }
  if (rotary < d) {
    KILN_ASSIGN_OR_RETURN(Expr pass, SliceLast(c, x, 4, rotary, d));
    KILN_ASSIGN_OR_RETURN(rotated, Concat(c, {rotated, pass}, 3));
  }
  if (in.size() == 4) {
    KILN_ASSIGN_OR_RETURN(rotated, Permute(c, rotated, {0, 2, 1, 3}));
  } else {
    KILN_ASSIGN_OR_RETURN(rotated, Reshape(c, rotated, in));
  }
  return Outputs(rotated);
}

// Q, K or V as [batch, heads, seq, head_size]: 4-D as given, 3-D split into `heads`.
absl::StatusOr<Expr> ToHeads(NodeContext& c, int i, int64_t heads, std::vector<PrimExpr>* shape4) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(i));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(i));
  if (s.size() == 4) {
    *shape4 = s;
    return x;
  }
  if (s.size() != 3) return c.Error("Q, K and V must be 3-D or 4-D, input ", i, " has ", s.size(), " dims");
  const PrimExpr head_size = Simplify(tir::FloorDiv(s[2], PrimExpr(heads)));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {s[0], s[1], PrimExpr(heads), head_size}));
  *shape4 = {s[0], PrimExpr(heads), s[1], head_size};
  return Permute(c, x, {0, 2, 1, 3});
}

// GQA: each of the kv_heads heads of `x` [batch, kv_heads, len, dim] serves q_heads /
// kv_heads consecutive query heads; the result is [batch, q_heads, len, dim].
absl::StatusOr<Expr> RepeatKvHeads(NodeContext& c, Expr x, const PrimExpr& batch, int64_t kv_heads, int64_t q_heads,
                                   const PrimExpr& len, const PrimExpr& dim) {
  if (q_heads == kv_heads) return x;
  const int64_t rep = q_heads / kv_heads;
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {batch, PrimExpr(kv_heads), PrimExpr(1), len, dim}));
  KILN_ASSIGN_OR_RETURN(
      x, c.Call("broadcast_to", {x, relax::ShapeExpr({batch, PrimExpr(kv_heads), PrimExpr(rep), len, dim})}));
  return Reshape(c, x, {batch, PrimExpr(q_heads), len, dim});
}

// The position relations the causal, sliding-window and padding masks are made of:
// `distance` = (i + offset) - j for query i and key j, int64 [q_len, kv_len] (a constant:
// offset is the past length) or [batch, 1, q_len, kv_len] with nonpad_kv_seqlen (offset
// nonpad_kv_seqlen[b] - q_len, known at run time); `padding`, with nonpad_kv_seqlen, whether
// key j < nonpad_kv_seqlen[b], bool [batch, 1, 1, kv_len].
struct PositionMasks {
  NodeContext* c;
  DataType dtype;
  Expr distance;
  Expr padding;
  // 0 where `allowed`, -inf elsewhere, in Q's dtype.
  absl::StatusOr<Expr> Bias(const Expr& allowed) const {
    const double inf = std::numeric_limits<double>::infinity();
    return c->Call("where", {allowed, ScalarConstant(0, dtype), ScalarConstant(-inf, dtype)});
  }
};

absl::StatusOr<PositionMasks> MakePositionMasks(NodeContext& c, DataType dtype, int64_t q_len, int64_t kv_len,
                                                int64_t past) {
  if (q_len * kv_len > (int64_t{1} << 24)) return c.Unsupported("the position masks are too large for a constant");
  PositionMasks m{&c, dtype, Expr(), Expr()};
  std::vector<double> distance(static_cast<size_t>(q_len * kv_len));
  for (int64_t i = 0; i < q_len; ++i) {
    for (int64_t j = 0; j < kv_len; ++j) distance[i * kv_len + j] = static_cast<double>(i + past - j);
  }
  m.distance = relax::Constant(DataFromDoubles(distance, DataType::Int64(), {q_len, kv_len}));
  if (!c.has_input(6)) return m;
  KILN_ASSIGN_OR_RETURN(DataType len_type, c.InputDType(6));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> len_shape, c.InputShape(6));
  if (!len_type.is_integer() || len_shape.size() != 1) return c.Error("nonpad_kv_seqlen must be a 1-D integer tensor");
  KILN_ASSIGN_OR_RETURN(Expr lengths, c.Input(6));
  if (len_type != DataType::Int64()) {
    KILN_ASSIGN_OR_RETURN(lengths, c.Call("astype", {lengths}, {{"dtype", DataType::Int64()}}));
  }
  const PrimExpr one(int64_t{1});
  KILN_ASSIGN_OR_RETURN(lengths, Reshape(c, lengths, {len_shape[0], one, one, one}));
  KILN_ASSIGN_OR_RETURN(Expr offset, c.Call("subtract", {lengths, Int64Scalar(q_len)}));
  KILN_ASSIGN_OR_RETURN(m.distance, c.Call("add", {m.distance, offset}));
  std::vector<double> keys(static_cast<size_t>(kv_len));
  for (int64_t j = 0; j < kv_len; ++j) keys[j] = static_cast<double>(j);
  Expr key_index = relax::Constant(DataFromDoubles(keys, DataType::Int64(), {1, 1, 1, kv_len}));
  KILN_ASSIGN_OR_RETURN(m.padding, c.Call("less", {key_index, lengths}));
  return m;
}

absl::StatusOr<std::vector<Value>> ConvertAttention(NodeContext& c) {
  if (c.has_input(4) != c.has_input(5)) return c.Error("past_key and past_value must be given together");
  if (c.has_input(6) && c.has_input(4)) {
    return c.Error("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  }
  const int64_t left_window = c.AttrInt("left_window_size", -1), right_window = c.AttrInt("right_window_size", -1);
  if (left_window < -1 || right_window < -1) {
    return c.Error("left_window_size and right_window_size must be -1 or non-negative, got ", left_window, " and ",
                   right_window);
  }
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_float() && !dtype.is_bfloat()) return c.Error("Q must be floating point");
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> q_in, c.InputShape(0));
  const bool three_d = q_in.size() == 3;
  int64_t q_heads = c.AttrInt("q_num_heads", 0), kv_heads = c.AttrInt("kv_num_heads", 0);
  if (three_d && (q_heads < 1 || kv_heads < 1)) return c.Error("3-D inputs need q_num_heads and kv_num_heads");
  std::vector<PrimExpr> qs, ks, vs;
  KILN_ASSIGN_OR_RETURN(Expr q, ToHeads(c, 0, q_heads, &qs));
  KILN_ASSIGN_OR_RETURN(Expr k, ToHeads(c, 1, kv_heads, &ks));
  KILN_ASSIGN_OR_RETURN(Expr v, ToHeads(c, 2, kv_heads, &vs));
  q_heads = StaticDim(qs[1]);
  kv_heads = StaticDim(ks[1]);
  if (q_heads < 1 || kv_heads < 1 || StaticDim(vs[1]) != kv_heads) {
    return c.Unsupported("needs static head counts, the same for K and V");
  }
  if (q_heads % kv_heads != 0) return c.Error(q_heads, " query heads are not a multiple of ", kv_heads, " K/V heads");
  const int64_t head_size = StaticDim(qs[3]);
  if (head_size < 1) return c.Unsupported("needs a static head size");

  // The KV cache: past entries first along the sequence.
  int64_t past = 0;
  if (c.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ps, c.InputShape(4));
    if (ps.size() != 4) return c.Error("past_key must be 4-D");
    past = StaticDim(ps[2]);
    if (past < 0) return c.Unsupported("needs a static past sequence length");
    KILN_ASSIGN_OR_RETURN(Expr past_k, c.Input(4));
    KILN_ASSIGN_OR_RETURN(Expr past_v, c.Input(5));
    KILN_ASSIGN_OR_RETURN(k, Concat(c, {past_k, k}, 2));
    KILN_ASSIGN_OR_RETURN(v, Concat(c, {past_v, v}, 2));
  }
  const Expr present_k = k, present_v = v;
  const int64_t q_len = StaticDim(qs[2]), kv_len = StaticDim(ks[2]) < 0 ? -1 : StaticDim(ks[2]) + past;
  if (q_len < 0 || kv_len < 0) return c.Unsupported("needs static sequence lengths");

  KILN_ASSIGN_OR_RETURN(k, RepeatKvHeads(c, k, qs[0], kv_heads, q_heads, PrimExpr(kv_len), ks[3]));
  KILN_ASSIGN_OR_RETURN(v, RepeatKvHeads(c, v, qs[0], kv_heads, q_heads, PrimExpr(kv_len), vs[3]));

  const double scale = c.HasAttr("scale") ? c.AttrFloat("scale", 1.0) : 1.0 / std::sqrt(static_cast<double>(head_size));
  // sqrt(scale) on each side, as the spec's function body does: in 16-bit types this keeps
  // the products in range and rounds as the reference does.
  const Expr root_scale = ScalarConstant(std::sqrt(scale), dtype);
  KILN_ASSIGN_OR_RETURN(q, c.Call("multiply", {q, root_scale}));
  KILN_ASSIGN_OR_RETURN(Expr kt, Permute(c, k, {0, 1, 3, 2}));
  KILN_ASSIGN_OR_RETURN(kt, c.Call("multiply", {kt, root_scale}));
  KILN_ASSIGN_OR_RETURN(Expr scores, c.Call("matmul", {q, kt}));
  const double softcap = c.AttrFloat("softcap", 0.0);
  if (softcap > 0) {
    KILN_ASSIGN_OR_RETURN(scores, c.Call("multiply", {scores, ScalarConstant(1.0 / softcap, dtype)}));
    KILN_ASSIGN_OR_RETURN(scores, c.Call("tanh", {scores}));
    KILN_ASSIGN_OR_RETURN(scores, c.Call("multiply", {scores, ScalarConstant(softcap, dtype)}));
  }
  const Expr raw_scores = scores;

  // The additive bias: 0 where a key is visible, -inf where masked.
  const double inf = std::numeric_limits<double>::infinity();
  Expr bias;
  if (c.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(Expr mask, c.Input(3));
    KILN_ASSIGN_OR_RETURN(DataType mask_type, c.InputDType(3));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ms, c.InputShape(3));
    if (ms.empty()) return c.Error("attn_mask must have at least 1 dim");
    if (mask_type.is_bool()) {
      KILN_ASSIGN_OR_RETURN(mask, c.Call("where", {mask, ScalarConstant(0, dtype), ScalarConstant(-inf, dtype)}));
    } else if (mask_type != dtype) {
      return c.Error("a float attn_mask must have Q's dtype");
    }
    const int64_t mask_len = StaticDim(ms.back());
    if (mask_len < 0) return c.Unsupported("needs a static attn_mask length");
    if (mask_len > kv_len) return c.Error("attn_mask covers ", mask_len, " keys, more than the ", kv_len, " there are");
    if (mask_len < kv_len) {  // keys beyond the mask are masked
      std::vector<int64_t> pad_shape;
      std::vector<PrimExpr> lead(ms.begin(), ms.end() - 1);
      if (!AllConstant(lead, &pad_shape)) return c.Unsupported("padding attn_mask needs a static shape");
      pad_shape.push_back(kv_len - mask_len);
      int64_t n = 1;
      for (int64_t e : pad_shape) n *= e;
      Expr pad = relax::Constant(DataFromDoubles(std::vector<double>(static_cast<size_t>(n), -inf), dtype, pad_shape));
      KILN_ASSIGN_OR_RETURN(mask, Concat(c, {mask, pad}, static_cast<int64_t>(ms.size()) - 1));
    }
    bias = mask;
  }
  // Causal and sliding-window masks compare key j with query i's position i + offset:
  // offset is the past length, or per batch nonpad_kv_seqlen - q_len (an external cache).
  KILN_ASSIGN_OR_RETURN(PositionMasks masks, MakePositionMasks(c, dtype, q_len, kv_len, past));
  auto add_bias = [&](const Expr& term) -> absl::Status {
    if (!bias.defined()) {
      bias = term;
      return absl::OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(bias, c.Call("add", {bias, term}));
    return absl::OkStatus();
  };
  if (c.AttrInt("is_causal", 0) != 0) {  // j <= i + offset
    KILN_ASSIGN_OR_RETURN(Expr allowed, c.Call("greater_equal", {masks.distance, Int64Scalar(0)}));
    KILN_ASSIGN_OR_RETURN(Expr causal, masks.Bias(allowed));
    KILN_RETURN_IF_ERROR(add_bias(causal));
  }
  if (left_window >= 0 || right_window >= 0) {  // i + offset - left <= j <= i + offset + right
    Expr allowed;
    if (left_window >= 0) {
      KILN_ASSIGN_OR_RETURN(allowed, c.Call("less_equal", {masks.distance, Int64Scalar(left_window)}));
    }
    if (right_window >= 0) {
      KILN_ASSIGN_OR_RETURN(Expr right, c.Call("greater_equal", {masks.distance, Int64Scalar(-right_window)}));
      if (allowed.defined()) {
        KILN_ASSIGN_OR_RETURN(allowed, c.Call("logical_and", {allowed, right}));
      } else {
        allowed = right;
      }
    }
    KILN_ASSIGN_OR_RETURN(Expr window, masks.Bias(allowed));
    KILN_RETURN_IF_ERROR(add_bias(window));
  }
  if (masks.padding.defined()) {  // keys at or past nonpad_kv_seqlen[b] are padding
    KILN_ASSIGN_OR_RETURN(Expr padding, masks.Bias(masks.padding));
    KILN_RETURN_IF_ERROR(add_bias(padding));
  }
  if (bias.defined()) {
    KILN_ASSIGN_OR_RETURN(scores, c.Call("add", {scores, bias}));
  }
  const Expr biased_scores = scores;

  DataType softmax_type = dtype;
  if (c.HasAttr("softmax_precision")) {
    absl::StatusOr<DataType> t = DataTypeFromOnnx(static_cast<int32_t>(c.AttrInt("softmax_precision", 1)));
    if (!t.ok() || (!t->is_float() && !t->is_bfloat())) return c.Error("softmax_precision must be a float type");
    softmax_type = *t;
  }
  if (softmax_type != dtype) {
    KILN_ASSIGN_OR_RETURN(scores, c.Call("astype", {scores}, {{"dtype", softmax_type}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr probs, c.Call("softmax", {scores}, {{"axis", int64_t{-1}}}));
  if (softmax_type != dtype) {
    KILN_ASSIGN_OR_RETURN(probs, c.Call("astype", {probs}, {{"dtype", dtype}}));
  }
  if (bias.defined()) {  // a row with every key masked attends to nothing: 0, not NaN
    KILN_ASSIGN_OR_RETURN(Expr row_max, c.Call("max", {bias}, {{"axis", std::vector<int64_t>{-1}}, {"keepdims", true}}));
    KILN_ASSIGN_OR_RETURN(Expr dead, c.Call("equal", {row_max, ScalarConstant(-inf, dtype)}));
    KILN_ASSIGN_OR_RETURN(probs, c.Call("where", {dead, ScalarConstant(0, dtype), probs}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("matmul", {probs, v}));
  if (three_d) {
    KILN_ASSIGN_OR_RETURN(y, Permute(c, y, {0, 2, 1, 3}));
    KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, {qs[0], qs[2], Simplify(PrimExpr(q_heads) * vs[3])}));
  }
  std::vector<Value> outputs = {Value::Of(y), Value::Of(present_k), Value::Of(present_v)};
  if (c.has_output(3)) {
    // As the reference: 0 the scaled (and softcapped) QK^T, 1 the same, 2 with the bias
    // added, 3 after the softmax.
    const int64_t mode = c.AttrInt("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) return c.Error("qk_matmul_output_mode ", mode, " is not 0..3");
    outputs.push_back(Value::Of(mode == 3 ? probs : mode == 2 ? biased_scores : raw_scores));
  }
  const size_t wanted = static_cast<size_t>(std::max(1, c.num_outputs()));
  if (outputs.size() > wanted) outputs.erase(outputs.begin() + static_cast<std::ptrdiff_t>(wanted), outputs.end());
  return outputs;
}

// Runs a FlexAttention modifier graph (score_mod, prob_mod) on `x`: one input, one output
// of x's shape, in `dtype` (the reference coerces the output to it).
absl::StatusOr<Expr> RunModifier(NodeContext& c, const std::string& name, Expr x, DataType dtype) {
  KILN_ASSIGN_OR_RETURN(const ::onnx::GraphProto* graph, c.AttrGraph(name));
  if (graph->input_size() != 1 || graph->output_size() != 1) {
    return c.Error(name, " must have exactly 1 input and 1 output, it has ", graph->input_size(), " and ",
                   graph->output_size());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value> out, c.RunSubgraph(*graph, {{graph->input(0).name(), Value::Of(x)}}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Materialize(out[0]));
  const auto* info = y.struct_info().as<relax::TensorStructInfoNode>();
  const auto* x_info = x.struct_info().as<relax::TensorStructInfoNode>();
  if (info == nullptr || info->ndim != 4 || !info->dtype) return c.Error(name, "'s output must be a 4-D tensor");
  if (info->shape && x_info != nullptr && x_info->shape) {
    for (int d = 0; d < 4; ++d) {
      const int64_t got = StaticDim((*info->shape)[d]), want = StaticDim((*x_info->shape)[d]);
      if (got >= 0 && want >= 0 && got != want) {
        return c.Error(name, "'s output has dim ", d, " = ", got, ", its input ", want, " (it must keep the shape)");
      }
    }
  }
  if (*info->dtype != dtype) {
    if (!info->dtype->is_float() && !info->dtype->is_bfloat()) {
      return c.Error(name, "'s output must be floating point");
    }
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", dtype}}));
  }
  return y;
}

// ai.onnx.preview FlexAttention (version 1): rank-4 Q [B, Hq, L, E], K [B, Hkv, S, E],
// V [B, Hkv, S, Ev]; scores = (Q sqrt(scale)) (K sqrt(scale))^T in Q's type, then in the
// softmax precision (float32 unless Q is double or softmax_precision says otherwise):
// score_mod, softmax over the keys, prob_mod, times V; Y in V's type. Modifiers are inlined.
absl::StatusOr<std::vector<Value>> ConvertFlexAttention(NodeContext& c) {
  std::vector<PrimExpr> qs, ks, vs;
  KILN_ASSIGN_OR_RETURN(qs, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(ks, c.InputShape(1));
  KILN_ASSIGN_OR_RETURN(vs, c.InputShape(2));
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) {
    return c.Error("Q, K and V must be 4-D, got ", qs.size(), ", ", ks.size(), " and ", vs.size(), " dims");
  }
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(DataType v_type, c.InputDType(2));
  if (!dtype.is_float() && !dtype.is_bfloat()) return c.Error("Q must be floating point");
  const int64_t q_heads = StaticDim(qs[1]), kv_heads = StaticDim(ks[1]), head_size = StaticDim(qs[3]);
  if (q_heads < 1 || kv_heads < 1 || StaticDim(vs[1]) != kv_heads) {
    return c.Unsupported("needs static head counts, the same for K and V");
  }
  if (q_heads % kv_heads != 0) return c.Error(q_heads, " query heads are not a multiple of ", kv_heads, " K/V heads");
  if (head_size < 1) return c.Unsupported("needs a static head size");
  if (StaticDim(ks[3]) != head_size) return c.Error("Q and K must have the same head size");

  DataType compute = dtype.bits() == 64 ? dtype : DataType::Float(32);
  if (c.HasAttr("softmax_precision")) {
    absl::StatusOr<DataType> t = DataTypeFromOnnx(static_cast<int32_t>(c.AttrInt("softmax_precision", 1)));
    if (!t.ok() || (!t->is_float() && !t->is_bfloat())) return c.Error("softmax_precision must be a float type");
    compute = *t;
  }
  KILN_ASSIGN_OR_RETURN(Expr q, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr k, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr v, c.Input(2));
  KILN_ASSIGN_OR_RETURN(k, RepeatKvHeads(c, k, ks[0], kv_heads, q_heads, ks[2], ks[3]));
  KILN_ASSIGN_OR_RETURN(v, RepeatKvHeads(c, v, vs[0], kv_heads, q_heads, vs[2], vs[3]));

  // The reference takes sqrt in float32, then rounds it to Q's type.
  const double scale = c.HasAttr("scale") ? c.AttrFloat("scale", 1.0) : 1.0 / std::sqrt(static_cast<double>(head_size));
  const Expr root_scale = ScalarConstant(std::sqrt(static_cast<float>(scale)), dtype);
  KILN_ASSIGN_OR_RETURN(q, c.Call("multiply", {q, root_scale}));
  KILN_ASSIGN_OR_RETURN(Expr kt, Permute(c, k, {0, 1, 3, 2}));
  KILN_ASSIGN_OR_RETURN(kt, c.Call("multiply", {kt, root_scale}));
  KILN_ASSIGN_OR_RETURN(Expr scores, c.Call("matmul", {q, kt}));
  if (compute != dtype) {
    KILN_ASSIGN_OR_RETURN(scores, c.Call("astype", {scores}, {{"dtype", compute}}));
  }
  if (c.HasAttr("score_mod")) {
    KILN_ASSIGN_OR_RETURN(scores, RunModifier(c, "score_mod", scores, compute));
  }
  KILN_ASSIGN_OR_RETURN(Expr probs, c.Call("softmax", {scores}, {{"axis", int64_t{-1}}}));
  if (c.HasAttr("prob_mod")) {
    KILN_ASSIGN_OR_RETURN(probs, RunModifier(c, "prob_mod", probs, compute));
  }
  if (v_type != compute) {
    KILN_ASSIGN_OR_RETURN(v, c.Call("astype", {v}, {{"dtype", compute}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("matmul", {probs, v}));
  if (v_type != compute) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", v_type}}));
  }
  return Outputs(y);
}

}  // namespace

void RegisterAttentionConverters(ConverterRegistry& r) {
  r.Register("RotaryEmbedding", ConvertRotaryEmbedding, 23);
  r.Register("Attention", ConvertAttention, 23);
  r.Register(QualifiedOpType("ai.onnx.preview", "FlexAttention"), ConvertFlexAttention, 1);
}

}  // namespace kiln::frontends::onnx
