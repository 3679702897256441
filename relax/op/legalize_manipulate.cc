// Legalization of the manipulation operators (semantics in relax/op/manipulate.cc).
//  - reshape: the output element's row-major position, unflattened over the input shape.
//  - concat / split: one block per piece, writing (reading) at the piece's offset along the
//    axis, so no block reads outside its own operand.
//  - strided_slice: begin normalized and clamped like numpy (min/max on symbolic dims).
//  - take: negative indices count from the end; an index out of range after that stops the
//    kernel with an error (tir/transform/insert_index_checks.h).
#include <algorithm>

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<tir::PrimFunc> LegalizeReshape(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  Stmt body = ComputeBlock(OpName(call), out, [&](const std::vector<PrimExpr>& i) {
    PrimExpr flat = int64_t{0};
    for (size_t d = 0; d < i.size(); ++d) flat = tir::Add(tir::Mul(flat, out->shape[d]), i[d]);
    std::vector<PrimExpr> index(in->shape.size());
    for (size_t d = in->shape.size(); d-- > 0;) {
      index[d] = d == 0 ? flat : tir::FloorMod(flat, in->shape[d]);
      flat = tir::FloorDiv(flat, in->shape[d]);
    }
    return in.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizePermuteDims(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_attr, IntsAttr(call, "axes"));
  std::vector<int> axes;
  if (axes_attr.has_value()) {
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, *axes_attr, in.ndim()));
  } else {
    for (int d = in.ndim(); d-- > 0;) axes.push_back(d);
  }
  Stmt body = ComputeBlock("permute_dims", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> index(in->shape.size());
    for (size_t k = 0; k < axes.size(); ++k) index[static_cast<size_t>(axes[k])] = i[k];
    return in.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeBroadcastTo(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  Stmt body = ComputeBlock("broadcast_to", p.outputs[0],
                           [&](const std::vector<PrimExpr>& i) { return in.Load(BroadcastIndex(in, i)); });
  return MakePrimFunc(p, body, "broadcast");
}

absl::StatusOr<tir::PrimFunc> LegalizeConcat(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& out = p.outputs[0];
  if (p.inputs.empty()) return OpError(call, "cannot legalize: no operands");
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), out.ndim()));
  std::vector<Stmt> blocks;
  PrimExpr offset = int64_t{0};
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const Buffer& in = p.inputs[k];
    blocks.push_back(BlockNest(absl::StrCat("concat", k), in->shape, {},
                               [&](const std::vector<PrimExpr>& i, const std::vector<PrimExpr>&) {
                                 std::vector<PrimExpr> index = i;
                                 PrimExpr& at = index[static_cast<size_t>(axis)];
                                 if (k > 0) at = tir::Add(at, offset);
                                 return BlockParts{tir::BufferStore(out, in.Load(i), index), Stmt()};
                               }));
    const PrimExpr& dim = in->shape[static_cast<size_t>(axis)];
    offset = k == 0 ? dim : tir::Add(offset, dim);
  }
  return MakePrimFunc(p, tir::SeqStmt(blocks), "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeSplit(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), in.ndim()));
  const size_t a = static_cast<size_t>(axis);
  // Offsets: from indices_or_sections when it lists split points (a clamped point can make
  // an output shorter than the distance to the next one), else the running sum.
  std::vector<PrimExpr> offsets;
  auto it = call.attrs.find("indices_or_sections");
  const auto* points = it == call.attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
  PrimExpr running = int64_t{0};
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    if (points != nullptr && k > 0 && k - 1 < points->size()) {
      PrimExpr point = (*points)[k - 1];
      // numpy clamps split points into [0, dim].
      offsets.push_back(tir::Min(tir::Max(point, PrimExpr(int64_t{0})), in->shape[a]));
    } else {
      offsets.push_back(running);
    }
    running = tir::Add(running, p.outputs[k]->shape[a]);
  }
  std::vector<Stmt> blocks;
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const Buffer& out = p.outputs[k];
    blocks.push_back(ComputeBlock(absl::StrCat("split", k), out, [&](const std::vector<PrimExpr>& i) {
      std::vector<PrimExpr> index = i;
      index[a] = tir::Add(i[a], offsets[k]);
      return in.Load(index);
    }));
  }
  return MakePrimFunc(p, tir::SeqStmt(blocks), "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeStridedSlice(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> begin, IntsAttr(call, "begin"));
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_attr, IntsAttr(call, "axes"));
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> strides_attr, IntsAttr(call, "strides"));
  if (!begin.has_value()) return OpError(call, "cannot legalize: missing begin");
  std::vector<int64_t> axes_list;
  if (axes_attr.has_value()) {
    axes_list = *axes_attr;
  } else {
    for (size_t k = 0; k < begin->size(); ++k) axes_list.push_back(static_cast<int64_t>(k));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axes_list, in.ndim()));
  std::vector<PrimExpr> starts(in->shape.size(), PrimExpr(int64_t{0}));
  std::vector<int64_t> steps(in->shape.size(), 1);
  for (size_t k = 0; k < axes.size() && k < begin->size(); ++k) {
    const size_t d = static_cast<size_t>(axes[k]);
    const int64_t stride = strides_attr.has_value() && k < strides_attr->size() ? (*strides_attr)[k] : 1;
    const PrimExpr dim = in->shape[d];
    const int64_t b = (*begin)[k];
    PrimExpr start = b < 0 ? tir::Add(PrimExpr(b), dim) : PrimExpr(b);
    if (stride > 0) {
      start = tir::Min(tir::Max(start, PrimExpr(int64_t{0})), dim);
    } else {
      start = tir::Min(tir::Max(start, PrimExpr(int64_t{-1})), tir::Sub(dim, PrimExpr(int64_t{1})));
    }
    starts[d] = start;
    steps[d] = stride;
  }
  Stmt body = ComputeBlock("strided_slice", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> index;
    for (size_t d = 0; d < i.size(); ++d) {
      index.push_back(steps[d] == 1 && starts[d].as_int() == std::optional<int64_t>(0)
                          ? i[d]
                          : tir::Add(starts[d], tir::Mul(i[d], PrimExpr(steps[d]))));
    }
    return in.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeTake(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& indices = p.inputs[1];
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), data.ndim()));
  const size_t a = static_cast<size_t>(axis);
  const size_t ni = indices->shape.size();
  Stmt body = ComputeBlock("take", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> idx_index(i.begin() + static_cast<std::ptrdiff_t>(a),
                                    i.begin() + static_cast<std::ptrdiff_t>(a + ni));
    PrimExpr raw = indices.Load(idx_index);
    if (raw.dtype() != DataType::Int64()) raw = tir::Cast(DataType::Int64(), raw);
    PrimExpr pos = tir::Select(tir::LT(raw, PrimExpr(int64_t{0})), tir::Add(raw, data->shape[a]), raw);
    std::vector<PrimExpr> index(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(a));
    index.push_back(pos);
    for (size_t d = a + ni; d < i.size(); ++d) index.push_back(i[d]);
    return data.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

}  // namespace

void RegisterManipulateLegalize(OpRegistry& registry) {
  registry.SetLegalize("reshape", LegalizeReshape);
  registry.SetLegalize("permute_dims", LegalizePermuteDims);
  registry.SetLegalize("broadcast_to", LegalizeBroadcastTo);
  registry.SetLegalize("concat", LegalizeConcat);
  registry.SetLegalize("split", LegalizeSplit);
  registry.SetLegalize("strided_slice", LegalizeStridedSlice);
  registry.SetLegalize("take", LegalizeTake);
}

}  // namespace kiln::relax::op
