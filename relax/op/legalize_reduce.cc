// Legalization of reductions, normalizations and astype (semantics in relax/op/reduce.cc).
//  - sum/max/min/prod: one reduction block; mean: the sum, then a block dividing in place.
//  - variance: sum, sum of squared deviations from the mean, then the division.
//  - log_softmax: as softmax, the last block computing (x - max) - log(sum).
//  - argmax/argmin: a reduction block carrying the running value in a scratch buffer
//    allocated inside the kernel; the first position wins ties, and the first NaN wins
//    over everything (numpy).
//  - max/min (and softmax's max, max_pool2d) combine with TIR max/min, which propagate
//    NaN (tir/expr.h): a NaN anywhere in the reduced elements gives NaN.
//  - softmax: max, sum of exp(x - max) (both in scratch buffers), then the quotient.
//  - layer_norm: sum -> mean, sum of squared deviations -> variance, then the affine
//    normalization; rms_norm: sum of squares, then the scaling. Two-pass, for accuracy.
// A reduction over an empty extent gives the init value (sum 0, max -inf; mean 0 / 0).
// float16 sums (sum, mean, softmax, layer_norm, rms_norm) accumulate in float32 scratch
// buffers and compute in float32, rounding to float16 once at the end (AccumulationType).
#include <algorithm>

#include "relax/op/legalize_common.h"
#include "relax/op/ggml_numerics.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

// The input index from the kept dims' indices (`kept`, in dim order) and the reduced dims'
// (`reduced`, in dim order). With keepdims, `kept` still has an entry per reduced dim,
// which is skipped.
std::vector<PrimExpr> MergeIndex(size_t ndim, const std::vector<bool>& is_reduced, bool keepdims,
                                 const std::vector<PrimExpr>& kept, const std::vector<PrimExpr>& reduced) {
  std::vector<PrimExpr> index;
  size_t k = 0;
  size_t r = 0;
  for (size_t d = 0; d < ndim; ++d) {
    if (is_reduced[d]) {
      index.push_back(reduced[r++]);
      if (keepdims) ++k;
    } else {
      index.push_back(kept[k++]);
    }
  }
  return index;
}

struct Axes {
  std::vector<bool> is_reduced;
  std::vector<PrimExpr> extents;  // of the reduced dims, in dim order
  std::vector<PrimExpr> kept;     // dims not reduced, in order
  PrimExpr count;                 // number of reduced elements (int64)
};

Axes MakeAxes(const Buffer& in, const std::vector<int>& axes) {
  Axes result;
  result.is_reduced.assign(in->shape.size(), false);
  for (int a : axes) result.is_reduced[static_cast<size_t>(a)] = true;
  result.count = int64_t{1};
  for (size_t d = 0; d < in->shape.size(); ++d) {
    if (result.is_reduced[d]) {
      result.extents.push_back(in->shape[d]);
      result.count = tir::Mul(result.count, in->shape[d]);
    } else {
      result.kept.push_back(in->shape[d]);
    }
  }
  return result;
}

absl::StatusOr<std::vector<int>> ReduceAxes(const CallNode& call, int ndim, const char* attr) {
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, IntsAttr(call, attr));
  if (!axes.has_value()) {
    std::vector<int> all;
    for (int d = 0; d < ndim; ++d) all.push_back(d);
    return all;
  }
  return NormalizeAxes(call, *axes, ndim);
}

enum class Reduction { kSum, kMean, kMax, kMin, kProd };

KernelLegalizeFn Reduce(Reduction kind) {
  return [kind](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    const Buffer& in = p.inputs[0];
    const Buffer& out = p.outputs[0];
    const DataType t = out->dtype;
    if (kind == Reduction::kMean && !t.is_float()) {
      return absl::UnimplementedError(absl::StrCat("mean: no CPU lowering for dtype ", t.ToString()));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<int> axes, ReduceAxes(call, in.ndim(), "axis"));
    KILN_ASSIGN_OR_RETURN(std::optional<bool> keepdims, BoolAttr(call, "keepdims"));
    const bool keep = keepdims.value_or(false);
    const Axes ax = MakeAxes(in, axes);
    const bool is_sum = kind == Reduction::kSum || kind == Reduction::kMean || kind == Reduction::kProd;
    // Sums (and products) of float16 accumulate in a float32 scratch buffer; max/min are
    // exact in any type.
    const DataType acc_t = is_sum ? AccumulationType(t) : t;
    const Buffer acc = acc_t == t ? out : ScratchBuffer(absl::StrCat(OpName(call), "_acc"), acc_t, out->shape);
    PrimExpr init;
    std::function<PrimExpr(PrimExpr, PrimExpr)> combine;
    switch (kind) {
      case Reduction::kSum:
      case Reduction::kMean:
        init = Const(acc_t, 0);
        combine = tir::Add;
        break;
      case Reduction::kMax:
        init = LowestValue(t);
        combine = tir::Max;
        break;
      case Reduction::kMin:
        init = HighestValue(t);
        combine = tir::Min;
        break;
      case Reduction::kProd:
        init = Const(acc_t, 1);
        combine = tir::Mul;
        break;
    }
    const std::string name = OpName(call);
    Stmt body = ReduceBlock(kind == Reduction::kMean ? "mean_sum" : name, acc, ax.extents, init, combine,
                            [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                              return CastTo(acc_t, in.Load(MergeIndex(in->shape.size(), ax.is_reduced, keep, s, r)));
                            });
    if (kind == Reduction::kMean) {
      Stmt divide = ComputeBlock("mean", out, [&](const std::vector<PrimExpr>& s) {
        return CastTo(t, tir::Div(acc.Load(s), tir::Cast(acc_t, ax.count)));
      });
      body = tir::SeqStmt({body, divide});
    } else if (!acc.same_as(out)) {
      Stmt narrow = ComputeBlock(absl::StrCat(name, "_cast"), out,
                                 [&](const std::vector<PrimExpr>& s) { return tir::Cast(t, acc.Load(s)); });
      body = tir::SeqStmt({body, narrow});
    }
    if (!acc.same_as(out)) body = tir::Allocate(acc, body);
    return MakePrimFunc(p, body, "comm_reduce");
  };
}

KernelLegalizeFn ArgReduce(bool is_max) {
  return [is_max](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    const Buffer& in = p.inputs[0];
    const Buffer& out = p.outputs[0];
    KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
    KILN_ASSIGN_OR_RETURN(std::optional<bool> keepdims, BoolAttr(call, "keepdims"));
    std::vector<int> axes;
    if (axis_attr.has_value()) {
      KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, *axis_attr, in.ndim()));
      axes.push_back(axis);
    } else {
      for (int d = 0; d < in.ndim(); ++d) axes.push_back(d);
    }
    const bool keep = keepdims.value_or(false);
    const Axes ax = MakeAxes(in, axes);
    const Buffer value = ScratchBuffer(is_max ? "max_value" : "min_value", in->dtype, out->shape);
    Stmt block = BlockNest(
        OpName(call), out->shape, ax.extents, [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
          // Row-major position within the reduced dims: the index numpy reports.
          PrimExpr flat = int64_t{0};
          for (size_t j = 0; j < r.size(); ++j) flat = tir::Add(tir::Mul(flat, ax.extents[j]), r[j]);
          PrimExpr x = in.Load(MergeIndex(in->shape.size(), ax.is_reduced, keep, s, r));
          PrimExpr v = value.Load(s);
          PrimExpr better = is_max ? tir::GT(x, v) : tir::LT(x, v);
          if (in->dtype.is_float()) {
            // A NaN beats every number and no later NaN beats it (x != x: x is NaN).
            better = tir::Or(better, tir::And(tir::NE(x, x), tir::EQ(v, v)));
          }
          PrimExpr take = r.empty() ? tir::EQ(PrimExpr(int64_t{0}), PrimExpr(int64_t{0}))
                                    : tir::Or(tir::EQ(flat, PrimExpr(int64_t{0})), better);
          Stmt update = tir::SeqStmt({tir::BufferStore(out, tir::Select(take, flat, out.Load(s)), s),
                                      tir::BufferStore(value, tir::Select(take, x, value.Load(s)), s)});
          Stmt init = r.empty() ? Stmt()
                                : tir::SeqStmt({tir::BufferStore(out, Const(out->dtype, 0), s),
                                                tir::BufferStore(value, Const(in->dtype, 0), s)});
          return BlockParts{update, init};
        });
    return MakePrimFunc(p, tir::Allocate(value, block), "comm_reduce");
  };
}

absl::StatusOr<tir::PrimFunc> LegalizeSoftmax(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  const DataType t = in->dtype;
  if (!t.is_float()) return absl::UnimplementedError(absl::StrCat("softmax: no CPU lowering for dtype ", t.ToString()));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  if (in.ndim() == 0) return OpError(call, "cannot legalize a 0-d softmax");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(-1), in.ndim()));
  const Axes ax = MakeAxes(in, {axis});
  const DataType a = AccumulationType(t);  // float16 computes in float32
  const Buffer max = ScratchBuffer("softmax_max", a, ax.kept);
  const Buffer sum = ScratchBuffer("softmax_sum", a, ax.kept);
  const size_t nd = in->shape.size();
  auto at = [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
    return MergeIndex(nd, ax.is_reduced, false, s, r);
  };
  auto x = [&](const std::vector<PrimExpr>& i) { return CastTo(a, in.Load(i)); };
  auto kept = [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> k;
    for (size_t d = 0; d < nd; ++d) {
      if (!ax.is_reduced[d]) k.push_back(i[d]);
    }
    return k;
  };
  Stmt max_block = ReduceBlock("softmax_max", max, ax.extents, LowestValue(a), tir::Max,
                               [&](const auto& s, const auto& r) { return x(at(s, r)); });
  if (t == a) {
    // The output holds exp(x - max) until the last pass scales it by 1 / sum: one exp per
    // element instead of one in the sum and another in the output, and one division per row.
    Stmt exp_block = ComputeBlock("softmax_exp", out, [&](const std::vector<PrimExpr>& i) {
      return tir::Call("exp", {tir::Sub(x(i), max.Load(kept(i)))});
    });
    Stmt sum_block = ReduceBlock("softmax_sum", sum, ax.extents, Const(a, 0), tir::Add,
                                 [&](const auto& s, const auto& r) { return out.Load(at(s, r)); });
    Stmt norm_block = ComputeBlock("softmax", out, [&](const std::vector<PrimExpr>& i) {
      return tir::Mul(out.Load(i), tir::Div(Const(a, 1), sum.Load(kept(i))));
    });
    return MakePrimFunc(
        p, tir::Allocate(max, tir::Allocate(sum, tir::SeqStmt({max_block, exp_block, sum_block, norm_block}))),
        "opaque");
  }
  // A narrower output (float16) would round the exps before the sum: computed twice instead.
  Stmt sum_block = ReduceBlock("softmax_sum", sum, ax.extents, Const(a, 0), tir::Add, [&](const auto& s, const auto& r) {
    return tir::Call("exp", {tir::Sub(x(at(s, r)), max.Load(s))});
  });
  Stmt norm_block = ComputeBlock("softmax", out, [&](const std::vector<PrimExpr>& i) {
    return CastTo(t, tir::Div(tir::Call("exp", {tir::Sub(x(i), max.Load(kept(i)))}), sum.Load(kept(i))));
  });
  return MakePrimFunc(p, tir::Allocate(max, tir::Allocate(sum, tir::SeqStmt({max_block, sum_block, norm_block}))),
                      "opaque");
}

// log_softmax: the row's max and sum of exp(x - max) as softmax, then
// (x - max) - log(sum): no exp of a positive number, and log of a sum >= 1.
absl::StatusOr<tir::PrimFunc> LegalizeLogSoftmax(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  const DataType t = in->dtype;
  if (!t.is_float()) {
    return absl::UnimplementedError(absl::StrCat("log_softmax: no CPU lowering for dtype ", t.ToString()));
  }
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, IntAttr(call, "axis"));
  if (in.ndim() == 0) return OpError(call, "cannot legalize a 0-d log_softmax");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(-1), in.ndim()));
  const Axes ax = MakeAxes(in, {axis});
  const DataType a = AccumulationType(t);
  const Buffer max = ScratchBuffer("log_softmax_max", a, ax.kept);
  const Buffer sum = ScratchBuffer("log_softmax_sum", a, ax.kept);
  const size_t nd = in->shape.size();
  auto at = [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
    return MergeIndex(nd, ax.is_reduced, false, s, r);
  };
  auto x = [&](const std::vector<PrimExpr>& i) { return CastTo(a, in.Load(i)); };
  Stmt max_block = ReduceBlock("log_softmax_max", max, ax.extents, LowestValue(a), tir::Max,
                               [&](const auto& s, const auto& r) { return x(at(s, r)); });
  Stmt sum_block = ReduceBlock("log_softmax_sum", sum, ax.extents, Const(a, 0), tir::Add,
                               [&](const auto& s, const auto& r) {
                                 return tir::Call("exp", {tir::Sub(x(at(s, r)), max.Load(s))});
                               });
  Stmt norm_block = ComputeBlock("log_softmax", out, [&](const std::vector<PrimExpr>& i) {
    std::vector<PrimExpr> kept;
    for (size_t d = 0; d < nd; ++d) {
      if (!ax.is_reduced[d]) kept.push_back(i[d]);
    }
    return CastTo(t, tir::Sub(tir::Sub(x(i), max.Load(kept)), tir::Call("log", {sum.Load(kept)})));
  });
  return MakePrimFunc(p, tir::Allocate(max, tir::Allocate(sum, tir::SeqStmt({max_block, sum_block, norm_block}))),
                      "opaque");
}

// variance: the sum (-> mean), the sum of squared deviations from it, then the division by
// count - correction. Two passes, as layer_norm, for accuracy.
absl::StatusOr<tir::PrimFunc> LegalizeVariance(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  const DataType t = out->dtype;
  if (!t.is_float()) return absl::UnimplementedError(absl::StrCat("variance: no CPU lowering for dtype ", t.ToString()));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, ReduceAxes(call, in.ndim(), "axis"));
  KILN_ASSIGN_OR_RETURN(std::optional<bool> keepdims, BoolAttr(call, "keepdims"));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> correction, IntAttr(call, "correction"));
  const bool keep = keepdims.value_or(false);
  const Axes ax = MakeAxes(in, axes);
  const DataType a = AccumulationType(t);
  const size_t nd = in->shape.size();
  auto x = [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
    return CastTo(a, in.Load(MergeIndex(nd, ax.is_reduced, keep, s, r)));
  };
  const PrimExpr count = tir::Cast(a, ax.count);
  const Buffer sum = ScratchBuffer("variance_sum", a, out->shape);
  const Buffer sq = ScratchBuffer("variance_sum_dev_sq", a, out->shape);
  Stmt sum_block = ReduceBlock("variance_sum", sum, ax.extents, Const(a, 0), tir::Add, x);
  Stmt sq_block = ReduceBlock("variance_dev_sq", sq, ax.extents, Const(a, 0), tir::Add,
                              [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                                PrimExpr dev = tir::Sub(x(s, r), tir::Div(sum.Load(s), count));
                                return tir::Mul(dev, dev);
                              });
  // np.var's divisor max(count - ddof, 0): a correction at or above the count divides by
  // zero (inf, or NaN for a zero sum), never by a negative number.
  const PrimExpr divisor =
      tir::Cast(a, tir::Max(tir::Sub(ax.count, PrimExpr(correction.value_or(0))), PrimExpr(int64_t{0})));
  Stmt divide = ComputeBlock("variance", out, [&](const std::vector<PrimExpr>& s) {
    return CastTo(t, tir::Div(sq.Load(s), divisor));
  });
  return MakePrimFunc(p, tir::Allocate(sum, tir::Allocate(sq, tir::SeqStmt({sum_block, sq_block, divide}))), "opaque");
}

KernelLegalizeFn Norm(bool layer) {
  return [layer](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
    const Buffer& in = p.inputs[0];
    const Buffer& out = p.outputs[0];
    const DataType t = in->dtype;
    if (!t.is_float()) {
      return absl::UnimplementedError(absl::StrCat(OpName(call), ": no CPU lowering for dtype ", t.ToString()));
    }
    KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes_attr, IntsAttr(call, "axes"));
    KILN_ASSIGN_OR_RETURN(std::vector<int> axes,
                          NormalizeAxes(call, axes_attr.value_or(std::vector<int64_t>{-1}), in.ndim()));
    KILN_ASSIGN_OR_RETURN(std::optional<double> eps_attr, FloatAttr(call, "epsilon"));
    const double eps = eps_attr.value_or(1e-5);
    const Axes ax = MakeAxes(in, axes);
    const size_t nd = in->shape.size();
    auto at = [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
      return MergeIndex(nd, ax.is_reduced, false, s, r);
    };
    auto kept_of = [&](const std::vector<PrimExpr>& i) {
      std::vector<PrimExpr> kept;
      for (size_t d = 0; d < nd; ++d) {
        if (!ax.is_reduced[d]) kept.push_back(i[d]);
      }
      return kept;
    };
    // gamma / beta / weight are indexed by the normalized axes in the order listed.
    auto param_index = [&](const std::vector<PrimExpr>& i) {
      std::vector<PrimExpr> index;
      for (int a : axes) index.push_back(i[static_cast<size_t>(a)]);
      return index;
    };
    // float16 computes in float32 (sums, the statistics and the affine part), rounded once.
    const DataType a = AccumulationType(t);
    auto load = [&](const Buffer& b, const std::vector<PrimExpr>& i) { return CastTo(a, b.Load(i)); };
    const PrimExpr count = tir::Cast(a, ax.count);
    const Buffer sum = ScratchBuffer(layer ? "norm_sum" : "norm_sum_sq", a, ax.kept);
    std::vector<Stmt> blocks;
    if (layer) {
      const Buffer sq = ScratchBuffer("norm_sum_dev_sq", a, ax.kept);
      blocks.push_back(ReduceBlock("layer_norm_sum", sum, ax.extents, Const(a, 0), tir::Add,
                                   [&](const auto& s, const auto& r) { return load(in, at(s, r)); }));
      blocks.push_back(ReduceBlock("layer_norm_var", sq, ax.extents, Const(a, 0), tir::Add, [&](const auto& s, const auto& r) {
        PrimExpr dev = tir::Sub(load(in, at(s, r)), tir::Div(sum.Load(s), count));
        return tir::Mul(dev, dev);
      }));
      const Buffer& gamma = p.inputs[1];
      const Buffer& beta = p.inputs[2];
      blocks.push_back(ComputeBlock("layer_norm", out, [&](const std::vector<PrimExpr>& i) {
        std::vector<PrimExpr> k = kept_of(i);
        PrimExpr centered = tir::Sub(load(in, i), tir::Div(sum.Load(k), count));
        PrimExpr scale = tir::Call("rsqrt", {tir::Add(tir::Div(sq.Load(k), count), Const(a, eps))});
        return CastTo(t, tir::Add(tir::Mul(tir::Mul(centered, scale), load(gamma, param_index(i))),
                                  load(beta, param_index(i))));
      }));
      return MakePrimFunc(p, tir::Allocate(sum, tir::Allocate(sq, tir::SeqStmt(blocks))), "opaque");
    }
    blocks.push_back(ReduceBlock("rms_norm_sum_sq", sum, ax.extents, Const(a, 0), tir::Add, [&](const auto& s, const auto& r) {
      PrimExpr x = load(in, at(s, r));
      return tir::Mul(x, x);
    }));
    const Buffer& weight = p.inputs[1];
    blocks.push_back(ComputeBlock("rms_norm", out, [&](const std::vector<PrimExpr>& i) {
      PrimExpr scale = tir::Call("rsqrt", {tir::Add(tir::Div(sum.Load(kept_of(i)), count), Const(a, eps))});
      return CastTo(t, tir::Mul(tir::Mul(load(in, i), scale), load(weight, param_index(i))));
    }));
    return MakePrimFunc(p, tir::Allocate(sum, tir::SeqStmt(blocks)), "opaque");
  };
}

// astype converts each element's value; bitcast reads its bits as the new dtype. Bool has
// no bit pattern but 0 / 1 in its byte: to bool both are a comparison with 0, from bool a
// cast (the same bits for 0 and 1).
absl::StatusOr<tir::PrimFunc> LegalizeConversion(const CallNode& call, bool reinterpret) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const DataType t = p.outputs[0]->dtype;
  Stmt body = ComputeBlock(reinterpret ? "bitcast" : "astype", p.outputs[0], [&](const std::vector<PrimExpr>& i) {
    PrimExpr x = in.Load(i);
    if (x.dtype() == t) return x;
    if (t.is_bool()) return tir::NE(x, Const(x.dtype(), 0));
    if (reinterpret && !x.dtype().is_bool()) return tir::Reinterpret(t, x);
    return tir::Cast(t, x);
  });
  return MakePrimFunc(p, body, "elementwise");
}

}  // namespace

void RegisterReduceLegalize(OpRegistry& registry) {
  registry.SetLegalize("sum", Reduce(Reduction::kSum));
  registry.SetLegalize("mean", Reduce(Reduction::kMean));
  registry.SetLegalize("max", Reduce(Reduction::kMax));
  registry.SetLegalize("min", Reduce(Reduction::kMin));
  registry.SetLegalize("argmax", ArgReduce(true));
  registry.SetLegalize("argmin", ArgReduce(false));
  registry.SetLegalize("prod", Reduce(Reduction::kProd));
  registry.SetLegalize("softmax", LegalizeSoftmax);
  registry.SetLegalize("log_softmax", LegalizeLogSoftmax);
  registry.SetLegalize("variance", LegalizeVariance);
  registry.SetLegalize("layer_norm", Norm(true));
  registry.SetLegalize("rms_norm", [](const CallNode& call) -> absl::StatusOr<tir::PrimFunc> {
    KILN_ASSIGN_OR_RETURN(GgmlNumerics numerics, GgmlNumericsAttr(call));
    return numerics != GgmlNumerics::kDefault ? LegalizeGgmlRmsNorm(call) : Norm(false)(call);
  });
  registry.SetLegalize("astype", [](const CallNode& call) { return LegalizeConversion(call, false); });
  registry.SetLegalize("bitcast", [](const CallNode& call) { return LegalizeConversion(call, true); });
}

}  // namespace kiln::relax::op
