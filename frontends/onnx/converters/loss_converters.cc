// Class-selection ONNX operators decomposed into Kiln's operators without a gather op:
// the class axis is compared with an arange to build a one-hot mask, and
// where(mask, x, 0) summed over it picks each target's entry (a NaN elsewhere in the row
// never leaks into the pick).
//   NegativeLogLikelihoodLoss (input (N, C, d...), target (N, d...), weight (C)?),
//     attributes reduction (none / sum / mean, default mean) and ignore_index.
//   SoftmaxCrossEntropyLoss: the same on log_softmax(scores) (max-subtracted, so large
//     scores do not overflow), second output log_prob.
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// arange(dim) as int64 reshaped so it runs along `axis` of an `ndim`-dim tensor.
absl::StatusOr<Expr> AxisIndices(NodeContext& c, const PrimExpr& dim, int64_t axis, int64_t ndim) {
  KILN_ASSIGN_OR_RETURN(Expr range, c.Call("arange", {relax::PrimValue(dim)}, {{"dtype", DataType::Int64()}}));
  std::vector<PrimExpr> shape(static_cast<size_t>(ndim), PrimExpr(1));
  shape[axis] = dim;
  return Reshape(c, range, shape);
}

// log_softmax along axis 1: x - max - log(sum(exp(x - max))).
absl::StatusOr<Expr> LogSoftmax(NodeContext& c, const Expr& x) {
  const std::vector<int64_t> axis = {1};
  KILN_ASSIGN_OR_RETURN(Expr m, c.Call("max", {x}, {{"axis", axis}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, c.Call("subtract", {x, m}));
  KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {shifted}));
  KILN_ASSIGN_OR_RETURN(Expr s, c.Call("sum", {e}, {{"axis", axis}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr l, c.Call("log", {s}));
  return c.Call("subtract", {shifted, l});
}

// The NLL of `log_prob` (inputs: target at `target_input`, weight at `target_input + 1`).
absl::StatusOr<Expr> Nll(NodeContext& c, const Expr& log_prob, int target_input) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (ndim < 2) return c.Error("the input needs at least 2 dims (N, C), got ", ndim);
  const std::string reduction = c.AttrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return c.Error("unknown reduction '", reduction, "'");
  }
  KILN_ASSIGN_OR_RETURN(Expr target, c.Input(target_input));
  KILN_ASSIGN_OR_RETURN(DataType target_type, c.InputDType(target_input));
  if (!target_type.is_integer()) return c.Error("the target must be integers, got ", target_type.ToString());
  if (target_type != DataType::Int64()) {
    KILN_ASSIGN_OR_RETURN(target, c.Call("astype", {target}, {{"dtype", DataType::Int64()}}));
  }
  const bool has_ignore = c.HasAttr("ignore_index");
  Expr valid;
  if (has_ignore) {
    KILN_ASSIGN_OR_RETURN(valid, c.Call("not_equal", {target, ScalarConstant(static_cast<double>(c.AttrInt("ignore_index", 0)),
                                                                           DataType::Int64())}));
    // Ignored positions pick class 0 (their loss and weight are zeroed below).
    KILN_ASSIGN_OR_RETURN(target, c.Call("where", {valid, target, ScalarConstant(0, DataType::Int64())}));
  }
  std::vector<PrimExpr> unsqueezed = {shape[0], PrimExpr(1)};
  for (int64_t i = 2; i < ndim; ++i) unsqueezed.push_back(shape[i]);
  KILN_ASSIGN_OR_RETURN(Expr target_column, Reshape(c, target, unsqueezed));
  KILN_ASSIGN_OR_RETURN(Expr classes, AxisIndices(c, shape[1], 1, ndim));
  KILN_ASSIGN_OR_RETURN(Expr mask, c.Call("equal", {classes, target_column}));
  KILN_ASSIGN_OR_RETURN(Expr masked, c.Call("where", {mask, log_prob, ScalarConstant(0, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr picked, c.Call("sum", {masked}, {{"axis", std::vector<int64_t>{1}}, {"keepdims", false}}));
  Expr weight;  // per position, undefined = all 1
  if (c.has_input(target_input + 1)) {
    KILN_ASSIGN_OR_RETURN(Expr class_weight, c.Input(target_input + 1));
    KILN_ASSIGN_OR_RETURN(weight, c.Call("take", {class_weight, target}, {{"axis", int64_t{0}}}));
  }
  if (has_ignore) {
    Expr one_or_weight = weight.defined() ? weight : ScalarConstant(1, dtype);
    KILN_ASSIGN_OR_RETURN(weight, c.Call("where", {valid, one_or_weight, ScalarConstant(0, dtype)}));
  }
  Expr loss = picked;
  if (weight.defined()) {
    KILN_ASSIGN_OR_RETURN(loss, c.Call("multiply", {loss, weight}));
  }
  KILN_ASSIGN_OR_RETURN(loss, c.Call("negative", {loss}));
  if (reduction == "none") return loss;
  KILN_ASSIGN_OR_RETURN(Expr total, c.Call("sum", {loss}));
  if (reduction == "sum") return total;
  if (!weight.defined()) return c.Call("mean", {loss});
  KILN_ASSIGN_OR_RETURN(Expr weight_total, c.Call("sum", {weight}));
  return c.Call("divide", {total, weight_total});
}

absl::StatusOr<std::vector<Value>> ConvertNll(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr input, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr loss, Nll(c, input, 1));
  return Outputs(loss);
}

absl::StatusOr<std::vector<Value>> ConvertSoftmaxCrossEntropy(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_floating()) return c.Error("the scores must be floating point, got ", dtype.ToString());
  KILN_ASSIGN_OR_RETURN(Expr scores, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr log_prob, LogSoftmax(c, scores));
  KILN_ASSIGN_OR_RETURN(Expr loss, Nll(c, log_prob, 1));
  return std::vector<Value>{Value::Of(loss), Value::Of(log_prob)};
}

}  // namespace

void RegisterLossConverters(ConverterRegistry& r) {
  r.Register("NegativeLogLikelihoodLoss", ConvertNll, 12);
  r.Register("SoftmaxCrossEntropyLoss", ConvertSoftmaxCrossEntropy, 12);
}

}  // namespace kiln::frontends::onnx
