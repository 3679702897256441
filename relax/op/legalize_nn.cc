// Legalization of the window operators (semantics in relax/op/nn.cc), channels first, any
// number of spatial dims. A float convolution with one group and constant kernel sizes is
// an im2col and a matmul (LegalizeConvAsMatmul, for the CPU matmul rule), with groups a
// window reduction over a zero-padded copy (LegalizeGroupedConv, for the CPU window rule);
// a float transposed one without groups a matmul and col2im (LegalizeConvTransposeAsMatmul);
// otherwise one reduction block each (average pooling adds the division);
// padding reads select the pad value around a load whose indices are clamped into the
// input, so no read leaves the buffer.
//  - conv: out[n, o, y...] = sum over (channel of o's group, taps) of x * w; zero padding
//    is multiplied like data (0 * inf is NaN, as np.pad then multiply). float16 sums in
//    float32, rounded once at the end (as matmul).
//  - conv transpose: each output position sums the (input, tap) pairs that reach it: input
//    position (y + pad_begin - k * dil) / stride when that divides exactly and lies inside;
//    pairs that do not reach it contribute nothing (not 0 * w), as PyTorch's col2im.
//  - max pool: max with -inf (the lowest value) for taps outside the input.
//  - avg pool: the sum of the taps inside the input (float32 for float16 data), divided by
//    the count of taps inside the input (or, with count_include_pad, inside the padded
//    input), computed per output position in closed form.
#include <algorithm>

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/window.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"

namespace kiln::relax::op {
namespace {

PrimExpr I64(int64_t v) { return PrimExpr(v); }

// The input position along spatial dim d of output position y and tap k, whether it is
// inside the input, and the position clamped into it (what the load reads).
struct Tap {
  PrimExpr clamped;
  PrimExpr inside;  // undefined when always inside
};

Tap MakeTap(const WindowAttrs& win, size_t d, const PrimExpr& extent, const PrimExpr& y, const PrimExpr& k) {
  PrimExpr pos = tir::Add(tir::Mul(y, I64(win.strides[d])), tir::Mul(k, I64(win.dilation[d])));
  if (win.pad_begin[d] != 0) pos = tir::Sub(pos, I64(win.pad_begin[d]));
  if (win.pad_begin[d] == 0 && win.pad_end[d] == 0 && !win.ceil_mode) return {pos, PrimExpr()};
  PrimExpr inside = tir::And(tir::GE(pos, I64(0)), tir::LT(pos, extent));
  return {tir::Min(tir::Max(pos, I64(0)), tir::Sub(extent, I64(1))), inside};
}

PrimExpr AndAll(const std::vector<PrimExpr>& conditions) {
  PrimExpr all;
  for (const PrimExpr& c : conditions) {
    if (c.defined()) all = all.defined() ? tir::And(all, c) : c;
  }
  return all;
}

absl::StatusOr<WindowAttrs> Window(const CallNode& call, const Buffer& data, WindowKind kind) {
  if (data.ndim() < 3) return OpError(call, "cannot legalize: expects data with spatial dims");
  return ReadWindowAttrs(call, data.ndim() - 2, kind);
}

// The product of `dims`.
PrimExpr Product(const std::vector<PrimExpr>& dims) {
  PrimExpr product = I64(1);
  for (const PrimExpr& d : dims) product = tir::Mul(product, d);
  return product;
}

// `linear` (row-major over `extents`) split into one index per extent.
std::vector<PrimExpr> Unflatten(PrimExpr linear, const std::vector<PrimExpr>& extents) {
  std::vector<PrimExpr> index(extents.size());
  for (size_t d = extents.size(); d-- > 0;) {
    index[d] = d == 0 ? linear : tir::FloorMod(linear, extents[d]);
    linear = tir::FloorDiv(linear, extents[d]);
  }
  return index;
}

// A float convolution without groups as a matmul over im2col columns, so that the CPU
// matmul rule (tir/schedule_rules/cpu_matmul.cc) schedules it like any matmul:
//   cols[n, r, p] = x at channel r / taps, tap r % taps, output position p (0 in padding)
//   w_flat[o, r] = w[o, r / taps, tap r % taps]
//   acc[n, o, p] += w_flat[o, r] * cols[n, r, p]           (r = C * taps, p = output positions)
//   out[n, o, y...] = acc[n, o, p of y...]
// cols is never written whole on the CPU when the matmul rule packs its panels (P at least
// 128 columns per thread): cols only feeds the matmul, so the rule folds the im2col block
// into the packing of each k x 32 panel (PackPanel), and only acc (the output's size) is
// scratch. Otherwise cols holds the whole batch (N * C * taps * P elements). A single
// spatial dim in float32 accumulates in `out` itself. Groups take LegalizeGroupedConv; the
// direct reduction below stays for integer element types and symbolic kernel sizes. Zero
// padding is multiplied like data, as there.
absl::StatusOr<tir::PrimFunc> LegalizeConvAsMatmul(const CallNode& call, KernelParams p, const WindowAttrs& win) {
  const Buffer& data = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  const size_t rank = static_cast<size_t>(win.rank);
  const DataType t = AccumulationType(out->dtype);
  const std::vector<PrimExpr> taps(weight->shape.begin() + 2, weight->shape.end());
  const std::vector<PrimExpr> positions(out->shape.begin() + 2, out->shape.end());
  const PrimExpr batch = out->shape[0], out_channels = out->shape[1];
  // Simplified, so that constant sizes are constants (the empty-reduction guard and the
  // schedule rules look for them).
  tir::Analyzer analyzer;
  const PrimExpr reduce = analyzer.Simplify(tir::Mul(weight->shape[1], Product(taps)));
  const PrimExpr points = analyzer.Simplify(Product(positions));
  std::vector<PrimExpr> channel_and_taps = {weight->shape[1]};
  channel_and_taps.insert(channel_and_taps.end(), taps.begin(), taps.end());
  const Buffer cols = ScratchBuffer("conv_cols", data->dtype, {batch, reduce, points});
  const Buffer w_flat = ScratchBuffer("conv_weight_flat", weight->dtype, {out_channels, reduce});
  // One spatial dim: the output is already [N, O, P], and float32 accumulates in place.
  const Buffer acc = rank == 1 && t == out->dtype ? out : ScratchBuffer("conv_acc", t, {batch, out_channels, points});
  Stmt im2col = ComputeBlock(absl::StrCat(OpName(call), "_im2col"), cols, [&](const std::vector<PrimExpr>& i) {
    const std::vector<PrimExpr> r = Unflatten(i[1], channel_and_taps);
    const std::vector<PrimExpr> y = Unflatten(i[2], positions);
    std::vector<PrimExpr> index = {i[0], r[0]};
    std::vector<PrimExpr> inside;
    for (size_t d = 0; d < rank; ++d) {
      Tap tap = MakeTap(win, d, data->shape[d + 2], y[d], r[d + 1]);
      index.push_back(tap.clamped);
      inside.push_back(tap.inside);
    }
    PrimExpr x = data.Load(index);
    if (PrimExpr in = AndAll(inside); in.defined()) x = tir::Select(in, x, Const(data->dtype, 0));
    return x;
  });
  Stmt flatten = ComputeBlock(absl::StrCat(OpName(call), "_weight"), w_flat, [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> index = {i[0]};
    for (const PrimExpr& r : Unflatten(i[1], channel_and_taps)) index.push_back(r);
    return weight.Load(index);
  });
  Stmt matmul = ReduceBlock(OpName(call), acc, {reduce}, Const(t, 0), tir::Add,
                            [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                              return tir::Mul(CastTo(t, w_flat.Load({s[1], r[0]})),
                                              CastTo(t, cols.Load({s[0], r[0], s[2]})));
                            });
  Stmt write = ComputeBlock(absl::StrCat(OpName(call), "_out"), out, [&](const std::vector<PrimExpr>& i) {
    PrimExpr linear = I64(0);
    for (size_t d = 0; d < rank; ++d) linear = tir::Add(tir::Mul(linear, positions[d]), i[d + 2]);
    return CastTo(out->dtype, acc.Load({i[0], i[1], linear}));
  });
  std::vector<Stmt> steps = {im2col, flatten, matmul};
  if (!acc.same_as(out)) steps.push_back(write);
  Stmt body = tir::SeqStmt(steps);
  for (const Buffer& b : {acc, w_flat, cols}) {
    if (!b.same_as(out)) body = tir::Allocate(b, body);
  }
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

// Whether LegalizeConvAsMatmul takes the convolution: one group, float data, constant taps.
bool ConvIsMatmul(const Buffer& data, const Buffer& weight, int64_t groups) {
  if (groups != 1 || !data->dtype.is_float() || data->dtype != weight->dtype) return false;
  for (size_t d = 2; d < weight->shape.size(); ++d) {
    if (!weight->shape[d].as_int()) return false;
  }
  return true;
}

struct PaddedInput {
  Buffer buffer;
  Stmt fill;  // undefined when `buffer` is the input
};

// The input with its zero padding written out: padded[n, c, y...] = x[n, c, y - pad_begin...]
// inside the input, 0 around it (extent + pad_begin + pad_end per spatial dim). `data`
// itself when nothing is padded. Two blocks, so that the rows move as whole vectors (a select
// per element between the input and 0 would load the input through clamped indices, lane by
// lane):
//   rows:    padded[n, c, y..., w + pad_begin] = y... inside ? x[n, c, clamp(y - pad_begin)..., w] : 0
//            over the padded extents but the input's last one (the condition is one per row)
//   columns: padded[n, c, y..., j < pad_begin ? j : j + W] = 0, j < pad_begin + pad_end
PaddedInput PadInput(const std::string& name, const Buffer& data, const WindowAttrs& win) {
  const size_t rank = static_cast<size_t>(win.rank);
  bool padded = false;
  tir::Analyzer analyzer;
  std::vector<PrimExpr> shape = {data->shape[0], data->shape[1]};
  for (size_t d = 0; d < rank; ++d) {
    padded |= win.pad_begin[d] != 0 || win.pad_end[d] != 0;
    shape.push_back(analyzer.Simplify(tir::Add(data->shape[d + 2], I64(win.pad_begin[d] + win.pad_end[d]))));
  }
  if (!padded) return {data, Stmt()};
  const Buffer buffer = ScratchBuffer("conv_padded", data->dtype, shape);
  const size_t last = rank + 1;
  const PrimExpr width = data->shape[last];
  const int64_t begin = win.pad_begin[rank - 1], end = win.pad_end[rank - 1];
  std::vector<PrimExpr> row_extents = shape;
  row_extents[last] = width;
  WindowAttrs unit = win;  // MakeTap's position y - pad_begin: stride 1, tap 0
  std::fill(unit.strides.begin(), unit.strides.end(), 1);
  Stmt rows = BlockNest(name, row_extents, {}, [&](const std::vector<PrimExpr>& i, const std::vector<PrimExpr>&) {
    std::vector<PrimExpr> index = {i[0], i[1]};
    std::vector<PrimExpr> inside;
    for (size_t d = 0; d + 1 < rank; ++d) {
      Tap tap = MakeTap(unit, d, data->shape[d + 2], i[d + 2], I64(0));
      index.push_back(tap.clamped);
      inside.push_back(tap.inside);
    }
    index.push_back(i[last]);
    PrimExpr x = data.Load(index);
    if (PrimExpr in = AndAll(inside); in.defined()) x = tir::Select(in, x, Const(data->dtype, 0));
    std::vector<PrimExpr> to(i.begin(), i.end());
    to[last] = tir::Add(i[last], I64(begin));
    return BlockParts{tir::BufferStore(buffer, x, to), Stmt()};
  });
  if (begin + end == 0) return {buffer, rows};
  std::vector<PrimExpr> column_extents = shape;
  column_extents[last] = I64(begin + end);
  Stmt columns = BlockNest(absl::StrCat(name, "_columns"), column_extents, {},
                           [&](const std::vector<PrimExpr>& i, const std::vector<PrimExpr>&) {
                             std::vector<PrimExpr> to(i.begin(), i.end());
                             const PrimExpr j = i[last];
                             to[last] = begin == 0 ? tir::Add(j, width)
                                        : end == 0 ? j
                                                   : tir::Select(tir::LT(j, I64(begin)), j, tir::Add(j, width));
                             return BlockParts{tir::BufferStore(buffer, Const(data->dtype, 0), to), Stmt()};
                           });
  return {buffer, tir::SeqStmt({rows, columns})};
}

// A float convolution with groups (depthwise, groups = channels, included) and constant
// kernel sizes: a reduction over (channel of the group, taps) that reads a zero-padded copy
// of the input, so that no load needs a bounds check and consecutive outputs along the last
// dim read consecutive (stride 1) or evenly spaced inputs:
//   padded[n, c, y...] = x with its zero padding (PadInput; none without padding)
//   acc[n, o, y...] += padded[n, group(o) * C/g + i, y * stride + k * dil...] * w[o, i, k...]
// The CPU window rule (tir/schedule_rules/cpu_window_reduction.cc) vectorizes it along the
// output's last dim with the reduction unrolled inside, rows in parallel. Per-group matmuls
// would multiply matrices of C/g rows (4 in ResNeXt, 1 when depthwise): too small for the
// matmul rule's tiles. Zero padding is multiplied like data, as above.
absl::StatusOr<tir::PrimFunc> LegalizeGroupedConv(const CallNode& call, KernelParams p, const WindowAttrs& win,
                                                  int64_t groups) {
  const Buffer& data = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  const size_t rank = static_cast<size_t>(win.rank);
  const DataType t = AccumulationType(out->dtype);
  const Buffer acc = t == out->dtype ? out : ScratchBuffer("conv_acc", t, out->shape);
  const PrimExpr out_per_group = tir::FloorDiv(weight->shape[0], I64(groups));
  const PaddedInput padded = PadInput(absl::StrCat(OpName(call), "_pad"), data, win);
  std::vector<PrimExpr> extents(weight->shape.begin() + 1, weight->shape.end());
  Stmt conv = ReduceBlock(
      OpName(call), acc, extents, Const(t, 0), tir::Add,
      [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
        PrimExpr channel = tir::Add(tir::Mul(tir::FloorDiv(s[1], out_per_group), weight->shape[1]), r[0]);
        std::vector<PrimExpr> index = {s[0], channel};
        for (size_t d = 0; d < rank; ++d) {
          index.push_back(tir::Add(tir::Mul(s[d + 2], I64(win.strides[d])), tir::Mul(r[d + 1], I64(win.dilation[d]))));
        }
        std::vector<PrimExpr> w_index = {s[1]};
        w_index.insert(w_index.end(), r.begin(), r.end());
        return tir::Mul(CastTo(t, padded.buffer.Load(index)), CastTo(t, weight.Load(w_index)));
      });
  std::vector<Stmt> steps;
  if (padded.fill.defined()) steps.push_back(padded.fill);
  steps.push_back(conv);
  if (!acc.same_as(out)) {
    steps.push_back(ComputeBlock(absl::StrCat(OpName(call), "_cast"), out, [&](const std::vector<PrimExpr>& i) {
      return tir::Cast(out->dtype, acc.Load(i));
    }));
  }
  Stmt body = tir::SeqStmt(steps);
  if (!acc.same_as(out)) body = tir::Allocate(acc, body);
  if (padded.fill.defined()) body = tir::Allocate(padded.buffer, body);
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

// Whether LegalizeGroupedConv takes the convolution: groups, float data, constant taps.
bool ConvIsGrouped(const Buffer& data, const Buffer& weight, int64_t groups) {
  if (groups <= 1 || !data->dtype.is_float() || data->dtype != weight->dtype) return false;
  for (size_t d = 2; d < weight->shape.size(); ++d) {
    if (!weight->shape[d].as_int()) return false;
  }
  return true;
}

absl::StatusOr<tir::PrimFunc> LegalizeConv(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  if (weight.ndim() != data.ndim()) return OpError(call, "cannot legalize: data and weight ranks differ");
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, Window(call, data, WindowKind::kConv));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> groups_attr, IntAttr(call, "groups"));
  const int64_t groups = groups_attr.value_or(1);
  if (ConvIsMatmul(data, weight, groups)) return LegalizeConvAsMatmul(call, std::move(p), win);
  if (ConvIsGrouped(data, weight, groups)) return LegalizeGroupedConv(call, std::move(p), win, groups);
  const size_t rank = static_cast<size_t>(win.rank);
  // float16 accumulates in float32 (a scratch buffer, then one rounding), as matmul does.
  const DataType t = AccumulationType(out->dtype);
  const Buffer acc = t == out->dtype ? out : ScratchBuffer("conv_acc", t, out->shape);
  const PrimExpr out_per_group = tir::FloorDiv(weight->shape[0], I64(groups));
  std::vector<PrimExpr> extents(weight->shape.begin() + 1, weight->shape.end());
  Stmt body = ReduceBlock(
      OpName(call), acc, extents, Const(t, 0), tir::Add,
      [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
        PrimExpr channel =
            groups == 1 ? r[0] : tir::Add(tir::Mul(tir::FloorDiv(s[1], out_per_group), weight->shape[1]), r[0]);
        std::vector<PrimExpr> index = {s[0], channel};
        std::vector<PrimExpr> inside;
        for (size_t d = 0; d < rank; ++d) {
          Tap tap = MakeTap(win, d, data->shape[d + 2], s[d + 2], r[d + 1]);
          index.push_back(tap.clamped);
          inside.push_back(tap.inside);
        }
        PrimExpr x = CastTo(t, data.Load(index));
        if (PrimExpr in = AndAll(inside); in.defined()) x = tir::Select(in, x, Const(t, 0));
        std::vector<PrimExpr> w_index = {s[1]};
        w_index.insert(w_index.end(), r.begin(), r.end());
        return tir::Mul(x, CastTo(t, weight.Load(w_index)));
      });
  if (!acc.same_as(out)) {
    Stmt narrow = ComputeBlock(absl::StrCat(OpName(call), "_cast"), out, [&](const std::vector<PrimExpr>& i) {
      return tir::Cast(out->dtype, acc.Load(i));
    });
    body = tir::Allocate(acc, tir::SeqStmt({body, narrow}));
  }
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

// A float transposed convolution without groups and with constant kernel sizes, as a matmul
// that the CPU matmul rule schedules, then col2im:
//   x_cols[n, c, p] = x[n, c, input position p]                     (p = input positions)
//   w_cols[q, c] = w[c, q / taps, tap q % taps]                      (q = O * taps)
//   acc[n, q, p] += w_cols[q, c] * x_cols[n, c, p]                   (float32 for float16)
//   out[n, o, y...] = sum over taps k reaching y of acc[n, o * taps + k, (y + pad_begin - k * dil) / stride]
// Each output sums the taps written out (a constant count), each a select of the tap's
// column or 0 where (y + pad_begin - k * dil) is not a multiple of the stride inside the
// input: pairs that do not reach y contribute nothing, as the direct form below.
absl::StatusOr<tir::PrimFunc> LegalizeConvTransposeAsMatmul(const CallNode& call, KernelParams p,
                                                            const WindowAttrs& win) {
  const Buffer& data = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  const size_t rank = static_cast<size_t>(win.rank);
  const DataType t = AccumulationType(out->dtype);
  const std::vector<PrimExpr> taps(weight->shape.begin() + 2, weight->shape.end());
  const std::vector<PrimExpr> positions(data->shape.begin() + 2, data->shape.end());
  const PrimExpr batch = data->shape[0], channels = data->shape[1], out_channels = weight->shape[1];
  tir::Analyzer analyzer;
  const PrimExpr tap_count = analyzer.Simplify(Product(taps));
  const PrimExpr rows = analyzer.Simplify(tir::Mul(out_channels, tap_count));
  const PrimExpr points = analyzer.Simplify(Product(positions));
  const Buffer x_cols = ScratchBuffer("conv_transpose_cols", data->dtype, {batch, channels, points});
  const Buffer w_cols = ScratchBuffer("conv_transpose_weight", weight->dtype, {rows, channels});
  const Buffer acc = ScratchBuffer("conv_transpose_acc", t, {batch, rows, points});
  Stmt cols = ComputeBlock(absl::StrCat(OpName(call), "_cols"), x_cols, [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> index = {i[0], i[1]};
    for (const PrimExpr& y : Unflatten(i[2], positions)) index.push_back(y);
    return data.Load(index);
  });
  std::vector<PrimExpr> channel_and_taps = {out_channels};
  channel_and_taps.insert(channel_and_taps.end(), taps.begin(), taps.end());
  Stmt flatten = ComputeBlock(absl::StrCat(OpName(call), "_weight"), w_cols, [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> index = {i[1]};
    for (const PrimExpr& r : Unflatten(i[0], channel_and_taps)) index.push_back(r);
    return weight.Load(index);
  });
  Stmt matmul = ReduceBlock(OpName(call), acc, {channels}, Const(t, 0), tir::Add,
                            [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                              return tir::Mul(CastTo(t, w_cols.Load({s[1], r[0]})),
                                              CastTo(t, x_cols.Load({s[0], r[0], s[2]})));
                            });
  std::vector<int64_t> tap_sizes;
  for (const PrimExpr& k : taps) tap_sizes.push_back(*k.as_int());
  Stmt col2im = ComputeBlock(absl::StrCat(OpName(call), "_col2im"), out, [&](const std::vector<PrimExpr>& s) {
    PrimExpr sum = Const(t, 0);
    std::vector<int64_t> k(rank, 0);
    for (int64_t tap = 0; tap < *tap_count.as_int(); ++tap) {
      int64_t rest = tap;  // the tap's index per dim, row-major
      for (size_t d = rank; d-- > 0;) {
        k[d] = rest % tap_sizes[d];
        rest /= tap_sizes[d];
      }
      PrimExpr column = I64(0);
      std::vector<PrimExpr> reaches;
      for (size_t d = 0; d < rank; ++d) {
        const PrimExpr extent = data->shape[d + 2];
        const int64_t stride = win.strides[d];
        PrimExpr num = tir::Add(s[d + 2], I64(win.pad_begin[d] - k[d] * win.dilation[d]));
        PrimExpr pos = stride == 1 ? num : tir::FloorDiv(num, I64(stride));
        PrimExpr ok = tir::And(tir::GE(num, I64(0)), tir::LT(pos, extent));
        if (stride != 1) ok = tir::And(ok, tir::EQ(tir::FloorMod(num, I64(stride)), I64(0)));
        reaches.push_back(ok);
        column = tir::Add(tir::Mul(column, extent), tir::Min(tir::Max(pos, I64(0)), tir::Sub(extent, I64(1))));
      }
      PrimExpr row = tir::Add(tir::Mul(s[1], tap_count), I64(tap));
      sum = tir::Add(sum, tir::Select(AndAll(reaches), acc.Load({s[0], row, column}), Const(t, 0)));
    }
    return CastTo(out->dtype, sum);
  });
  Stmt body = tir::SeqStmt({cols, flatten, matmul, col2im});
  for (const Buffer& b : {acc, w_cols, x_cols}) body = tir::Allocate(b, body);
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

absl::StatusOr<tir::PrimFunc> LegalizeConvTranspose(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  if (weight.ndim() != data.ndim()) return OpError(call, "cannot legalize: data and weight ranks differ");
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, Window(call, data, WindowKind::kConvTranspose));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> groups_attr, IntAttr(call, "groups"));
  const int64_t groups = groups_attr.value_or(1);
  if (ConvIsMatmul(data, weight, groups)) return LegalizeConvTransposeAsMatmul(call, std::move(p), win);
  const size_t rank = static_cast<size_t>(win.rank);
  const DataType t = out->dtype;
  const PrimExpr in_per_group = groups == 1 ? weight->shape[0] : tir::FloorDiv(weight->shape[0], I64(groups));
  const PrimExpr out_per_group = weight->shape[1];
  std::vector<PrimExpr> extents = {in_per_group};
  extents.insert(extents.end(), weight->shape.begin() + 2, weight->shape.end());
  Stmt body = ReduceBlock(
      OpName(call), out, extents, Const(t, 0), tir::Add,
      [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
        PrimExpr group = groups == 1 ? I64(0) : tir::FloorDiv(s[1], out_per_group);
        PrimExpr channel = groups == 1 ? r[0] : tir::Add(tir::Mul(group, in_per_group), r[0]);
        PrimExpr out_channel = groups == 1 ? s[1] : tir::Sub(s[1], tir::Mul(group, out_per_group));
        std::vector<PrimExpr> index = {s[0], channel};
        std::vector<PrimExpr> reaches;
        for (size_t d = 0; d < rank; ++d) {
          const PrimExpr extent = data->shape[d + 2];
          PrimExpr num = tir::Sub(tir::Add(s[d + 2], I64(win.pad_begin[d])), tir::Mul(r[d + 1], I64(win.dilation[d])));
          const int64_t stride = win.strides[d];
          PrimExpr pos = stride == 1 ? num : tir::FloorDiv(num, I64(stride));
          PrimExpr ok = tir::And(tir::GE(num, I64(0)), tir::LT(pos, extent));
          if (stride != 1) ok = tir::And(ok, tir::EQ(tir::FloorMod(num, I64(stride)), I64(0)));
          reaches.push_back(ok);
          index.push_back(tir::Min(tir::Max(pos, I64(0)), tir::Sub(extent, I64(1))));
        }
        std::vector<PrimExpr> w_index = {channel, out_channel};
        w_index.insert(w_index.end(), r.begin() + 1, r.end());
        PrimExpr product = tir::Mul(CastTo(t, data.Load(index)), CastTo(t, weight.Load(w_index)));
        return tir::Select(AndAll(reaches), product, Const(t, 0));
      });
  return MakePrimFunc(p, body, "comm_reduce");
}

absl::StatusOr<tir::PrimFunc> LegalizeMaxPool(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, Window(call, data, WindowKind::kMaxPool));
  const size_t rank = static_cast<size_t>(win.rank);
  const DataType t = out->dtype;
  std::vector<PrimExpr> extents;
  for (int64_t k : win.pool_size) extents.push_back(I64(k));
  Stmt body = ReduceBlock(OpName(call), out, extents, LowestValue(t), tir::Max,
                          [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                            std::vector<PrimExpr> index = {s[0], s[1]};
                            std::vector<PrimExpr> inside;
                            for (size_t d = 0; d < rank; ++d) {
                              Tap tap = MakeTap(win, d, data->shape[d + 2], s[d + 2], r[d]);
                              index.push_back(tap.clamped);
                              inside.push_back(tap.inside);
                            }
                            PrimExpr x = data.Load(index);
                            if (PrimExpr in = AndAll(inside); in.defined()) x = tir::Select(in, x, LowestValue(t));
                            return x;
                          });
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

// The number of taps k in [0, size) of one dim whose position base + k * dil lies in
// [lo, hi): k from ceil((lo - base) / dil) to floor((hi - 1 - base) / dil), clipped.
PrimExpr TapCount(const PrimExpr& base, const PrimExpr& lo, const PrimExpr& hi, int64_t size, int64_t dil) {
  PrimExpr first = tir::FloorDiv(tir::Add(tir::Sub(lo, base), I64(dil - 1)), I64(dil));
  PrimExpr last = tir::FloorDiv(tir::Sub(tir::Sub(hi, I64(1)), base), I64(dil));
  PrimExpr n = tir::Add(tir::Sub(tir::Min(last, I64(size - 1)), tir::Max(first, I64(0))), I64(1));
  return tir::Max(n, I64(0));
}

absl::StatusOr<tir::PrimFunc> LegalizeAvgPool(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& out = p.outputs[0];
  const DataType t = out->dtype;
  if (!t.is_float()) return absl::UnimplementedError(absl::StrCat(OpName(call), ": no CPU lowering for ", t.ToString()));
  KILN_ASSIGN_OR_RETURN(WindowAttrs win, Window(call, data, WindowKind::kAvgPool));
  const size_t rank = static_cast<size_t>(win.rank);
  const DataType a = AccumulationType(t);
  const Buffer acc = a == t ? out : ScratchBuffer("avg_pool_sum", a, out->shape);
  std::vector<PrimExpr> extents;
  for (int64_t k : win.pool_size) extents.push_back(I64(k));
  Stmt sum = ReduceBlock(absl::StrCat(OpName(call), "_sum"), acc, extents, Const(a, 0), tir::Add,
                         [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                           std::vector<PrimExpr> index = {s[0], s[1]};
                           std::vector<PrimExpr> inside;
                           for (size_t d = 0; d < rank; ++d) {
                             Tap tap = MakeTap(win, d, data->shape[d + 2], s[d + 2], r[d]);
                             index.push_back(tap.clamped);
                             inside.push_back(tap.inside);
                           }
                           PrimExpr x = CastTo(a, data.Load(index));
                           if (PrimExpr in = AndAll(inside); in.defined()) x = tir::Select(in, x, Const(a, 0));
                           return x;
                         });
  Stmt divide = ComputeBlock(OpName(call), out, [&](const std::vector<PrimExpr>& s) {
    PrimExpr count = I64(1);
    for (size_t d = 0; d < rank; ++d) {
      const PrimExpr extent = data->shape[d + 2];
      PrimExpr base = tir::Sub(tir::Mul(s[d + 2], I64(win.strides[d])), I64(win.pad_begin[d]));
      PrimExpr lo = win.count_include_pad ? I64(-win.pad_begin[d]) : I64(0);
      PrimExpr hi = win.count_include_pad ? tir::Add(extent, I64(win.pad_end[d])) : extent;
      count = tir::Mul(count, TapCount(base, lo, hi, win.pool_size[d], win.dilation[d]));
    }
    return CastTo(t, tir::Div(acc.Load(s), tir::Cast(a, count)));
  });
  Stmt body = tir::SeqStmt({sum, divide});
  if (!acc.same_as(out)) body = tir::Allocate(acc, body);
  return MakePrimFunc(p, body, "opaque");
}

}  // namespace

void RegisterNnLegalize(OpRegistry& registry) {
  for (int rank = 1; rank <= 3; ++rank) {
    registry.SetLegalize(absl::StrCat("conv", rank, "d"), LegalizeConv);
    registry.SetLegalize(absl::StrCat("max_pool", rank, "d"), LegalizeMaxPool);
    registry.SetLegalize(absl::StrCat("avg_pool", rank, "d"), LegalizeAvgPool);
  }
  for (int rank = 1; rank <= 3; ++rank) {
    registry.SetLegalize(absl::StrCat("conv", rank, "d_transpose"), LegalizeConvTranspose);
  }
}

}  // namespace kiln::relax::op
