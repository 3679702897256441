// Legalization of cumsum, sort, argsort and topk (semantics in relax/op/sort.cc).
//
// Sorting by rank: the rank of element i along the axis is the number of elements that come
// before it in the order (a value earlier in the order, or an equal value at a lower index),
// so ranks are a permutation and ties keep index order (stable). The index at sorted
// position r is the i whose rank is r (a sum over i of select(rank == r, i, 0)); sort and
// topk then gather the values at those indices. Every step is a plain reduction or
// gather block, parallel over the other dims, at O(n^2) comparisons per row of n: fine for
// the axis lengths of ONNX models' sorts (top-k over a few thousand), not a replacement for
// an O(n log n) sort over very long rows.
//
// cumsum: a reduction over the axis of select(j <= i, x[j], 0) (the condition follows
// exclusive / reverse), accumulated in AccumulationType (float32 for float16); also O(n^2)
// per row, every output element independent of the others.
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

using Index = std::vector<PrimExpr>;

Index WithAxis(Index index, size_t axis, PrimExpr value) {
  index[axis] = std::move(value);
  return index;
}

PrimExpr IsNan(const PrimExpr& v) { return tir::NE(v, v); }

// Whether a (at index j) comes before b (at index i) in the order.
PrimExpr Before(const PrimExpr& a, const PrimExpr& b, const PrimExpr& j, const PrimExpr& i, bool descending) {
  PrimExpr earlier;
  PrimExpr equal;
  if (a.dtype().is_floating()) {
    // NaN is the largest value: last ascending, first descending; NaNs are equal to each other.
    earlier = descending ? tir::Or(tir::GT(a, b), tir::And(IsNan(a), tir::Not(IsNan(b))))
                         : tir::Or(tir::LT(a, b), tir::And(IsNan(b), tir::Not(IsNan(a))));
    equal = tir::Or(tir::EQ(a, b), tir::And(IsNan(a), IsNan(b)));
  } else {
    earlier = descending ? tir::GT(a, b) : tir::LT(a, b);
    equal = tir::EQ(a, b);
  }
  return tir::Or(earlier, tir::And(equal, tir::LT(j, i)));
}

struct SortSpec {
  size_t axis = 0;
  bool descending = false;
  PrimExpr k;  // positions produced along the axis
};

// The blocks that write `order` (shape: data's with the axis dim k): the index of the
// element at each sorted position. `rank` is scratch of data's shape.
Stmt OrderBlocks(const Buffer& data, const Buffer& rank, const Buffer& order, const SortSpec& spec) {
  const PrimExpr n = data->shape[spec.axis];
  Stmt ranks = ReduceBlock(
      "rank", rank, {n}, Int(0), [](PrimExpr acc, PrimExpr v) { return tir::Add(acc, v); },
      [&](const Index& s, const Index& r) {
        const PrimExpr before = Before(data.Load(WithAxis(s, spec.axis, r[0])), data.Load(s), r[0], s[spec.axis],
                                       spec.descending);
        return tir::Select(before, Int(1), Int(0));
      });
  const DataType t = order->dtype;
  Stmt positions = ReduceBlock(
      "order", order, {n}, Const(t, 0), [](PrimExpr acc, PrimExpr v) { return tir::Add(acc, v); },
      [&](const Index& s, const Index& r) {
        return tir::Select(tir::EQ(rank.Load(WithAxis(s, spec.axis, r[0])), s[spec.axis]), CastTo(t, r[0]),
                           Const(t, 0));
      });
  return tir::SeqStmt({ranks, positions});
}

absl::StatusOr<SortSpec> Spec(const CallNode& call, const Buffer& data, const char* order_attr, bool order_default) {
  SortSpec spec;
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, axis.value_or(-1), data.ndim()));
  KILN_ASSIGN_OR_RETURN(std::optional<bool> flag, BoolAttr(call, order_attr));
  spec.axis = static_cast<size_t>(a);
  spec.descending = flag.value_or(order_default);
  spec.k = data->shape[spec.axis];
  return spec;
}

absl::StatusOr<tir::PrimFunc> LegalizeArgsort(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(SortSpec spec, Spec(call, data, "descending", false));
  Buffer rank = ScratchBuffer("rank", DataType::Int64(), data->shape);
  return MakePrimFunc(p, tir::Allocate(rank, OrderBlocks(data, rank, p.outputs[0], spec)), "opaque");
}

// sort and topk: the order into `indices`, then values[s] = data[s with the axis at indices[s]].
Stmt GatherSorted(const Buffer& data, const Buffer& indices, const Buffer& values, size_t axis) {
  return ComputeBlock("gather_sorted", values, [&](const Index& s) {
    return data.Load(WithAxis(s, axis, CastTo(DataType::Int64(), indices.Load(s))));
  });
}

absl::StatusOr<tir::PrimFunc> LegalizeSort(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(SortSpec spec, Spec(call, data, "descending", false));
  Buffer rank = ScratchBuffer("rank", DataType::Int64(), data->shape);
  Buffer order = ScratchBuffer("order", DataType::Int64(), data->shape);
  Stmt body = tir::SeqStmt({OrderBlocks(data, rank, order, spec), GatherSorted(data, order, p.outputs[0], spec.axis)});
  return MakePrimFunc(p, tir::Allocate(rank, tir::Allocate(order, body)), "opaque");
}

absl::StatusOr<tir::PrimFunc> LegalizeTopk(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  if (p.outputs.size() != 2) return OpError(call, "cannot legalize: expects two outputs");
  KILN_ASSIGN_OR_RETURN(SortSpec spec, Spec(call, data, "largest", true));
  Buffer rank = ScratchBuffer("rank", DataType::Int64(), data->shape);
  Stmt body = tir::SeqStmt(
      {OrderBlocks(data, rank, p.outputs[1], spec), GatherSorted(data, p.outputs[1], p.outputs[0], spec.axis)});
  return MakePrimFunc(p, tir::Allocate(rank, body), "opaque");
}

absl::StatusOr<tir::PrimFunc> LegalizeCumsum(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), data.ndim()));
  KILN_ASSIGN_OR_RETURN(std::optional<bool> exclusive, BoolAttr(call, "exclusive"));
  KILN_ASSIGN_OR_RETURN(std::optional<bool> reverse, BoolAttr(call, "reverse"));
  const size_t a = static_cast<size_t>(axis);
  const DataType acc = AccumulationType(out->dtype);
  Buffer sum = acc == out->dtype ? out : ScratchBuffer("sum", acc, out->shape);
  Stmt body = ReduceBlock(
      "cumsum", sum, {data->shape[a]}, Const(acc, 0), [](PrimExpr s, PrimExpr v) { return tir::Add(s, v); },
      [&](const Index& s, const Index& r) {
        const PrimExpr& j = r[0];
        const PrimExpr& i = s[a];
        PrimExpr in_range = reverse.value_or(false) ? (exclusive.value_or(false) ? tir::GT(j, i) : tir::GE(j, i))
                                                    : (exclusive.value_or(false) ? tir::LT(j, i) : tir::LE(j, i));
        return tir::Select(in_range, CastTo(acc, data.Load(WithAxis(s, a, j))), Const(acc, 0));
      });
  if (acc == out->dtype) return MakePrimFunc(p, body, "opaque");
  Stmt cast = ComputeBlock("cumsum_cast", out, [&](const Index& s) { return CastTo(out->dtype, sum.Load(s)); });
  return MakePrimFunc(p, tir::Allocate(sum, tir::SeqStmt({body, cast})), "opaque");
}

}  // namespace

void RegisterSortLegalize(OpRegistry& registry) {
  registry.SetLegalize("cumsum", LegalizeCumsum);
  registry.SetLegalize("sort", LegalizeSort);
  registry.SetLegalize("argsort", LegalizeArgsort);
  registry.SetLegalize("topk", LegalizeTopk);
}

}  // namespace kiln::relax::op
