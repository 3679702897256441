// Legalization of pad, tile, flip, trilu, squeeze and expand_dims (semantics in
// relax/op/rearrange.cc): one block over the output each, reading the input at a position
// computed from the output's.
//  - pad: per dim, the position p in the cropped input (output index minus the positive
//    begin pad) maps to a source index: constant mode reads only inside [0, d') and selects
//    the pad value outside, with the index clamped so that the load the select evaluates
//    stays in bounds; when a cropped dim may be empty (symbolic, or 0) no load is safe, so
//    the block branches instead of selecting. reflect folds p into one period
//    2 (d' - 1) (a dim of 1 reads its only element), edge clamps, wrap takes p mod d'.
//  - tile: index mod the input dim; flip: d - 1 - index; trilu: a select on j - i.
#include <algorithm>
#include <string>

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

using Index = std::vector<PrimExpr>;

PrimExpr Clamp(const PrimExpr& v, const PrimExpr& lo, const PrimExpr& hi) { return tir::Min(tir::Max(v, lo), hi); }

absl::StatusOr<tir::PrimFunc> LegalizePad(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> pads, IntsAttr(call, "pads"));
  KILN_ASSIGN_OR_RETURN(std::optional<double> pad_value, FloatAttr(call, "pad_value"));
  auto mode_it = call.attrs.find("mode");
  const std::string mode = mode_it == call.attrs.end() ? "constant" : std::get<std::string>(mode_it->second);
  const size_t ndim = in->shape.size();
  if (!pads || pads->size() != 2 * ndim) return OpError(call, "cannot legalize: pads does not match the data");
  // Per dim: the crop at the start, the cropped size d' and the positive begin pad.
  std::vector<int64_t> crop(ndim), begin(ndim);
  std::vector<PrimExpr> size(ndim);
  bool may_be_empty = false;
  for (size_t d = 0; d < ndim; ++d) {
    const int64_t b = (*pads)[d], e = (*pads)[d + ndim];
    crop[d] = std::max<int64_t>(-b, 0);
    begin[d] = std::max<int64_t>(b, 0);
    size[d] = AddConst(in->shape[d], -crop[d] - std::max<int64_t>(-e, 0));
    auto c = size[d].as_int();
    may_be_empty |= !c || *c < 1;
  }
  const bool constant = mode == "constant";
  PrimExpr inside;  // constant mode: whether the output element comes from the input
  auto source = [&](const Index& o) {
    Index index(ndim);
    for (size_t d = 0; d < ndim; ++d) {
      const PrimExpr pos = begin[d] == 0 ? o[d] : tir::Sub(o[d], Int(begin[d]));
      const PrimExpr last = tir::Sub(size[d], Int(1));
      PrimExpr src;
      if (constant) {
        if (begin[d] > 0 || (*pads)[d + ndim] > 0) {
          PrimExpr ok = tir::And(tir::GE(pos, Int(0)), tir::LT(pos, size[d]));
          inside = inside.defined() ? tir::And(inside, ok) : ok;
          src = may_be_empty ? pos : Clamp(pos, Int(0), last);
        } else {
          src = pos;
        }
      } else if (mode == "edge") {
        src = Clamp(pos, Int(0), last);
      } else if (mode == "wrap") {
        src = tir::FloorMod(pos, size[d]);
      } else {  // reflect
        const PrimExpr period = tir::Mul(last, Int(2));
        const PrimExpr m = tir::FloorMod(pos, tir::Max(period, Int(1)));
        src = tir::Select(tir::LT(m, size[d]), m, tir::Sub(period, m));
      }
      index[d] = crop[d] == 0 ? src : tir::Add(src, Int(crop[d]));
    }
    return index;
  };
  const PrimExpr fill = Const(out->dtype, pad_value.value_or(0.0));
  Stmt body = BlockNest("pad", out->shape, {}, [&](const Index& o, const Index&) {
    inside = PrimExpr();
    const Index index = source(o);
    if (!inside.defined()) return BlockParts{tir::BufferStore(out, in.Load(index), o), Stmt()};
    if (may_be_empty) {
      return BlockParts{tir::IfThenElse(inside, tir::BufferStore(out, in.Load(index), o), tir::BufferStore(out, fill, o)),
                        Stmt()};
    }
    return BlockParts{tir::BufferStore(out, tir::Select(inside, in.Load(index), fill), o), Stmt()};
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeTile(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  Stmt body = ComputeBlock("tile", p.outputs[0], [&](const Index& o) {
    const size_t offset = o.size() - in->shape.size();
    Index index;
    for (size_t d = 0; d < in->shape.size(); ++d) {
      const PrimExpr& dim = in->shape[d];
      index.push_back(dim.as_int() == 1 ? Int(0) : tir::FloorMod(o[offset + d], dim));
    }
    return in.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeFlip(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_attr, IntsAttr(call, "axis"));
  std::vector<int> axes;
  if (axes_attr) {
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, *axes_attr, in.ndim()));
  } else {
    for (int d = 0; d < in.ndim(); ++d) axes.push_back(d);
  }
  Stmt body = ComputeBlock("flip", p.outputs[0], [&](const Index& o) {
    Index index = o;
    for (int a : axes) {
      const size_t d = static_cast<size_t>(a);
      index[d] = tir::Sub(tir::Sub(in->shape[d], Int(1)), o[d]);
    }
    return in.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

absl::StatusOr<tir::PrimFunc> LegalizeTrilu(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<bool> upper, BoolAttr(call, "upper"));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> k, IntAttr(call, "k"));
  Stmt body = ComputeBlock("trilu", p.outputs[0], [&](const Index& o) {
    const PrimExpr diff = tir::Sub(o[o.size() - 1], o[o.size() - 2]);
    const PrimExpr keep = upper.value_or(true) ? tir::GE(diff, Int(k.value_or(0))) : tir::LE(diff, Int(k.value_or(0)));
    return tir::Select(keep, in.Load(o), Const(in->dtype, 0));
  });
  return MakePrimFunc(p, body, "injective");
}

// squeeze and expand_dims: the output index with the size-1 dims of the larger side dropped.
absl::StatusOr<tir::PrimFunc> LegalizeDropOrInsertUnitDims(const CallNode& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_attr, IntsAttr(call, "axis"));
  const bool squeeze = name == "squeeze";
  const int wide = squeeze ? in.ndim() : out.ndim();
  std::vector<int> axes;
  if (axes_attr) {
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(call, *axes_attr, wide));
  } else {
    for (int d = 0; d < in.ndim(); ++d) {
      if (in->shape[static_cast<size_t>(d)].as_int() == 1) axes.push_back(d);
    }
  }
  auto is_unit = [&](int d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
  Stmt body = ComputeBlock(name, out, [&](const Index& o) {
    Index index;
    if (squeeze) {
      size_t next = 0;
      for (int d = 0; d < wide; ++d) index.push_back(is_unit(d) ? Int(0) : o[next++]);
    } else {
      for (int d = 0; d < wide; ++d) {
        if (!is_unit(d)) index.push_back(o[static_cast<size_t>(d)]);
      }
    }
    return in.Load(index);
  });
  return MakePrimFunc(p, body, "injective");
}

}  // namespace

void RegisterRearrangeLegalize(OpRegistry& registry) {
  registry.SetLegalize("pad", LegalizePad);
  registry.SetLegalize("tile", LegalizeTile);
  registry.SetLegalize("flip", LegalizeFlip);
  registry.SetLegalize("trilu", LegalizeTrilu);
  registry.SetLegalize("squeeze", KernelLegalizeFn([](const CallNode& call) {
                         return LegalizeDropOrInsertUnitDims(call, "squeeze");
                       }));
  registry.SetLegalize("expand_dims", KernelLegalizeFn([](const CallNode& call) {
                         return LegalizeDropOrInsertUnitDims(call, "expand_dims");
                       }));
}

}  // namespace kiln::relax::op
