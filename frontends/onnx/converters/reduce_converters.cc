// ONNX reductions: ReduceSum/Mean/Max/Min/Prod map to Kiln's; ReduceL1/L2/LogSum/LogSumExp/
// SumSquare decompose. ArgMax/ArgMin map to Kiln's, select_last_index through a reversed view.
//
// Axes are an attribute before ReduceSum-13 / the others' opset 18, an optional input from
// then on; with noop_with_empty_axes an absent/empty axes list is the identity, otherwise it
// reduces every axis. keepdims defaults to 1.
#include <algorithm>
#include <limits>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceSpec {
  std::vector<int64_t> axes;  // normalized; empty with `noop` = identity
  bool all = false;           // every axis
  bool keepdims = true;
  bool noop = false;
};

absl::StatusOr<ReduceSpec> ReadSpec(NodeContext& c, int64_t axes_input_since, int64_t ndim) {
  ReduceSpec spec;
  spec.keepdims = c.AttrInt("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  if (c.opset() >= axes_input_since) {
    if (c.has_input(1)) {
      KILN_ASSIGN_OR_RETURN(axes, c.InputInts(1));
    }
  } else {
    axes = c.AttrInts("axes");
  }
  if (axes.empty()) {
    spec.noop = c.AttrInt("noop_with_empty_axes", 0) != 0;
    spec.all = !spec.noop;
    for (int64_t i = 0; i < ndim; ++i) spec.axes.push_back(i);
    return spec;
  }
  KILN_ASSIGN_OR_RETURN(spec.axes, NormalizeAxes(c, axes, ndim));
  return spec;
}

absl::StatusOr<Expr> Reduce(NodeContext& c, const std::string& op, Expr x, const ReduceSpec& spec, bool keepdims) {
  return c.Call(op, {std::move(x)}, {{"axis", spec.axes}, {"keepdims", keepdims}});
}

ConverterFn ReduceConverter(Reduction kind, int64_t axes_input_since) {
  return [kind, axes_input_since](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, c.InputInfo(0));
    KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
    KILN_ASSIGN_OR_RETURN(ReduceSpec spec, ReadSpec(c, axes_input_since, t->ndim));
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
    if (spec.noop) return Outputs(x);
    Expr out;
    switch (kind) {
      case Reduction::kSum: {
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "sum", x, spec, spec.keepdims));
        break;
      }
      case Reduction::kMean: {
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "mean", x, spec, spec.keepdims));
        break;
      }
      case Reduction::kMax: {
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "max", x, spec, spec.keepdims));
        break;
      }
      case Reduction::kMin: {
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "min", x, spec, spec.keepdims));
        break;
      }
      case Reduction::kProd: {
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "prod", x, spec, spec.keepdims));
        break;
      }
      case Reduction::kL1: {
        // |x| as max(x, -x): exact, and NaN stays NaN.
        KILN_ASSIGN_OR_RETURN(Expr neg, c.Call("negative", {x}));
        KILN_ASSIGN_OR_RETURN(Expr abs, c.Call("maximum", {x, neg}));
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "sum", abs, spec, spec.keepdims));
        break;
      }
      case Reduction::kSumSquare:
      case Reduction::kL2: {
        KILN_ASSIGN_OR_RETURN(Expr sq, c.Call("multiply", {x, x}));
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "sum", sq, spec, spec.keepdims));
        if (kind == Reduction::kL2) {
          if (!dtype.is_floating()) return c.Unsupported("ReduceL2 of ", dtype.ToString(), " is not supported");
          KILN_ASSIGN_OR_RETURN(out, c.Call("sqrt", {out}));
        }
        break;
      }
      case Reduction::kLogSum: {
        KILN_ASSIGN_OR_RETURN(out, Reduce(c, "sum", x, spec, spec.keepdims));
        KILN_ASSIGN_OR_RETURN(out, c.Call("log", {out}));
        break;
      }
      case Reduction::kLogSumExp: {
        // max + log(sum(exp(x - max))): no overflow for large inputs.
        if (!dtype.is_floating()) return c.Unsupported("ReduceLogSumExp of ", dtype.ToString(), " is not supported");
        KILN_ASSIGN_OR_RETURN(Expr m, Reduce(c, "max", x, spec, true));
        KILN_ASSIGN_OR_RETURN(Expr shifted, c.Call("subtract", {x, m}));
        KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {shifted}));
        KILN_ASSIGN_OR_RETURN(Expr s, Reduce(c, "sum", e, spec, true));
        KILN_ASSIGN_OR_RETURN(Expr l, c.Call("log", {s}));
        KILN_ASSIGN_OR_RETURN(out, c.Call("add", {l, m}));
        if (!spec.keepdims) {
          KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
          std::vector<PrimExpr> kept;
          for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
            if (std::find(spec.axes.begin(), spec.axes.end(), i) == spec.axes.end()) kept.push_back(shape[i]);
          }
          KILN_ASSIGN_OR_RETURN(out, Reshape(c, out, kept));
        }
        break;
      }
    }
    return Outputs(out);
  };
}

ConverterFn ArgReduce(std::string op) {
  return [op](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
    const int64_t ndim = static_cast<int64_t>(shape.size());
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", 0), ndim));
    const bool keepdims = c.AttrInt("keepdims", 1) != 0;
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
    if (c.AttrInt("select_last_index", 0) == 0) {
      KILN_ASSIGN_OR_RETURN(Expr out, c.Call(op, {x}, {{"axis", axis}, {"keepdims", keepdims}}));
      return Outputs(out);
    }
    // The last extreme is the first one of the reversed axis: index dim - 1 - r.
    KILN_ASSIGN_OR_RETURN(Expr reversed,
                          c.Call("strided_slice", {x},
                                 {{"begin", std::vector<int64_t>{-1}},
                                  {"end", std::vector<int64_t>{std::numeric_limits<int64_t>::min()}},
                                  {"axes", std::vector<int64_t>{axis}},
                                  {"strides", std::vector<int64_t>{-1}}}));
    KILN_ASSIGN_OR_RETURN(Expr r, c.Call(op, {reversed}, {{"axis", axis}, {"keepdims", keepdims}}));
    std::vector<int64_t> dim;
    Expr last;
    if (AllConstant({shape[axis]}, &dim)) {
      last = ScalarConstant(static_cast<double>(dim[0] - 1), DataType::Int64());
    } else {
      KILN_ASSIGN_OR_RETURN(last, c.Call("full", {relax::ShapeExpr({}), relax::PrimValue(shape[axis] - 1)},
                                         {{"dtype", DataType::Int64()}}));
    }
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call("subtract", {last, r}));
    return Outputs(out);
  };
}

}  // namespace

void RegisterReduceConverters(ConverterRegistry& r) {
  r.Register("ReduceSum", ReduceConverter(Reduction::kSum, 13));
  r.Register("ReduceMean", ReduceConverter(Reduction::kMean, 18));
  r.Register("ReduceMax", ReduceConverter(Reduction::kMax, 18));
  r.Register("ReduceMin", ReduceConverter(Reduction::kMin, 18));
  r.Register("ReduceProd", ReduceConverter(Reduction::kProd, 18));
  r.Register("ReduceL1", ReduceConverter(Reduction::kL1, 18));
  r.Register("ReduceL2", ReduceConverter(Reduction::kL2, 18));
  r.Register("ReduceLogSum", ReduceConverter(Reduction::kLogSum, 18));
  r.Register("ReduceLogSumExp", ReduceConverter(Reduction::kLogSumExp, 18));
  r.Register("ReduceSumSquare", ReduceConverter(Reduction::kSumSquare, 18));
  r.Register("ArgMax", ArgReduce("argmax"));
  r.Register("ArgMin", ArgReduce("argmin"));
}

}  // namespace kiln::frontends::onnx
