// Legalization of the indexing operators (semantics in relax/op/indexing.cc).
//  - gathers: one block over the output; the read position holds the index loaded from
//    `indices` (negative: plus the dim), which insert_index_checks guards.
//  - scatters: a copy block (out = data), then a block over the updates whose iteration
//    variables are declared reduction variables: several updates may write one element, so
//    no schedule may run them at once, and they apply in row-major order (the last of
//    repeated positions wins with reduction "none", as ONNX Runtime does).
//  - one_hot: one block comparing the output position with the (wrapped) index; no index
//    is loaded from data, so there is nothing to check.
#include <string>

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

using Index = std::vector<PrimExpr>;

// An index value as int64, negative ones counting from the end of a dim of size `dim`.
PrimExpr WrapIndex(PrimExpr raw, const PrimExpr& dim) {
  raw = CastTo(DataType::Int64(), std::move(raw));
  return tir::Select(tir::LT(raw, Int(0)), tir::Add(raw, dim), raw);
}

Index Slice(const Index& v, size_t begin, size_t end) {
  return Index(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end));
}

absl::StatusOr<tir::PrimFunc> LegalizeGatherElements(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& indices = p.inputs[1];
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), data.ndim()));
  const size_t a = static_cast<size_t>(axis);
  Stmt body = ComputeBlock("gather_elements", p.outputs[0], [&](const Index& i) {
    Index index = i;
    index[a] = WrapIndex(indices.Load(i), data->shape[a]);
    return data.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeGatherNd(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& data = p.inputs[0];
  const Buffer& indices = p.inputs[1];
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> batch_attr, IntAttr(call, "batch_dims"));
  const size_t b = static_cast<size_t>(batch_attr.value_or(0));
  const size_t q = indices->shape.size();
  std::optional<int64_t> k = indices->shape.back().as_int();
  if (!k) return OpError(call, "cannot legalize: the last dim of indices must be a constant");
  Stmt body = ComputeBlock("gather_nd", p.outputs[0], [&](const Index& o) {
    Index index = Slice(o, 0, b);
    Index at = Slice(o, 0, q - 1);
    at.push_back(Int(0));
    for (int64_t j = 0; j < *k; ++j) {
      at.back() = Int(j);
      index.push_back(WrapIndex(indices.Load(at), data->shape[b + static_cast<size_t>(j)]));
    }
    for (size_t d = q - 1; d < o.size(); ++d) index.push_back(o[d]);
    return data.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

// combine(old, update) for a scatter's reduction attribute.
absl::StatusOr<std::function<PrimExpr(PrimExpr, PrimExpr)>> ScatterCombine(const CallNode& call) {
  auto it = call.attrs.find("reduction");
  const std::string name = it == call.attrs.end() ? "none" : std::get<std::string>(it->second);
  if (name == "none") return [](PrimExpr, PrimExpr u) { return u; };
  if (name == "add") return [](PrimExpr old, PrimExpr u) { return tir::Add(old, u); };
  if (name == "mul") return [](PrimExpr old, PrimExpr u) { return tir::Mul(old, u); };
  // max / min propagate NaN as np.maximum / np.minimum do (and ONNX Runtime's std::max
  // does not), so the result does not depend on the order of the updates.
  const bool is_max = name == "max";
  return [is_max](PrimExpr old, PrimExpr u) -> PrimExpr {
    PrimExpr pick = is_max ? tir::Max(old, u) : tir::Min(old, u);
    if (!old.dtype().is_floating()) return pick;
    return tir::Select(tir::NE(old, old), old, tir::Select(tir::NE(u, u), u, pick));
  };
}

absl::StatusOr<tir::PrimFunc> LegalizeScatterElements(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(0), p.inputs[0].ndim()));
  const size_t a = static_cast<size_t>(axis);
  KILN_ASSIGN_OR_RETURN(auto combine, ScatterCombine(call));
  const Buffer& data = p.inputs[0];
  const Buffer& indices = p.inputs[1];
  const Buffer& updates = p.inputs[2];
  const Buffer& out = p.outputs[0];
  Stmt copy = ComputeBlock("scatter_elements_copy", out, [&](const Index& i) { return data.Load(i); });
  Stmt scatter = BlockNest("scatter_elements", {}, updates->shape, [&](const Index&, const Index& u) {
    Index at = u;
    at[a] = WrapIndex(indices.Load(u), data->shape[a]);
    return BlockParts{tir::BufferStore(out, combine(out.Load(at), updates.Load(u)), at), Stmt()};
  });
  return MakePrimFunc(p, tir::SeqStmt({copy, scatter}), "opaque");
}

absl::StatusOr<tir::PrimFunc> LegalizeScatterNd(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  KILN_ASSIGN_OR_RETURN(auto combine, ScatterCombine(call));
  const Buffer& data = p.inputs[0];
  const Buffer& indices = p.inputs[1];
  const Buffer& updates = p.inputs[2];
  const Buffer& out = p.outputs[0];
  const size_t q = indices->shape.size();
  std::optional<int64_t> k = indices->shape.back().as_int();
  if (!k) return OpError(call, "cannot legalize: the last dim of indices must be a constant");
  Stmt copy = ComputeBlock("scatter_nd_copy", out, [&](const Index& i) { return data.Load(i); });
  Stmt scatter = BlockNest("scatter_nd", {}, updates->shape, [&](const Index&, const Index& u) {
    Index at;
    Index from = Slice(u, 0, q - 1);
    from.push_back(Int(0));
    for (int64_t j = 0; j < *k; ++j) {
      from.back() = Int(j);
      at.push_back(WrapIndex(indices.Load(from), data->shape[static_cast<size_t>(j)]));
    }
    for (size_t d = q - 1; d < u.size(); ++d) at.push_back(u[d]);
    return BlockParts{tir::BufferStore(out, combine(out.Load(at), updates.Load(u)), at), Stmt()};
  });
  return MakePrimFunc(p, tir::SeqStmt({copy, scatter}), "opaque");
}

absl::StatusOr<tir::PrimFunc> LegalizeOneHot(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& indices = p.inputs[0];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> depth, IntAttr(call, "depth"));
  KILN_ASSIGN_OR_RETURN(std::optional<double> on, FloatAttr(call, "on_value"));
  KILN_ASSIGN_OR_RETURN(std::optional<double> off, FloatAttr(call, "off_value"));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(-1), out.ndim()));
  if (!depth) return OpError(call, "cannot legalize: missing depth");
  const DataType dtype = out->dtype;
  const size_t a = static_cast<size_t>(axis);
  Stmt body = ComputeBlock("one_hot", out, [&](const Index& o) {
    Index at = o;
    at.erase(at.begin() + static_cast<std::ptrdiff_t>(a));
    PrimExpr index = WrapIndex(indices.Load(at), Int(*depth));
    return tir::Select(tir::EQ(index, o[a]), Const(dtype, on.value_or(1.0)), Const(dtype, off.value_or(0.0)));
  });
  return MakePrimFunc(p, body, "injective");
}

}  // namespace

void RegisterIndexingLegalize(OpRegistry& registry) {
  registry.SetLegalize("gather_elements", LegalizeGatherElements);
  registry.SetLegalize("gather_nd", LegalizeGatherNd);
  registry.SetLegalize("scatter_elements", LegalizeScatterElements);
  registry.SetLegalize("scatter_nd", LegalizeScatterNd);
  registry.SetLegalize("one_hot", LegalizeOneHot);
}

}  // namespace kiln::relax::op
