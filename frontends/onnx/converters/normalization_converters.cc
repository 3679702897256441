// ONNX normalizations: BatchNormalization (inference), InstanceNormalization,
// GroupNormalization, LRN, MeanVarianceNormalization, LogSoftmax.
//
// Version differences: BatchNormalization before opset 7 has is_test (ignored: inference)
// and before 9 `spatial` (only 1, the per-channel form, is supported); training_mode (14+)
// uses the batch's statistics and outputs the running ones. GroupNormalization 18 takes one scale and
// bias per group (expanded here to one per channel), 21 one per channel. LogSoftmax before
// 13 flattens the input to 2-D at `axis` (default 1), as Softmax. MeanVarianceNormalization
// is ONNX's function (x - mean) / (sqrt(variance) + epsilon) over `axes` (default 0, 2, 3);
// epsilon is 1e-9 unless the node gives it (an attribute ONNX proposes for its next version).
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// training_mode (14+) normalizes with the batch's own statistics (mean and population
// variance over every axis but the channel's) and outputs the updated running statistics
// input * momentum + batch * (1 - momentum).
absl::StatusOr<std::vector<Value>> ConvertBatchNormalization(NodeContext& c) {
  if (c.opset() < 9 && c.AttrInt("spatial", 1) != 1) return c.Unsupported("spatial=0 is not supported");
  const bool training = c.opset() >= 14 && c.AttrInt("training_mode", 0) != 0;
  if (!training) {
    for (int i = 1; i < c.num_outputs(); ++i) {
      if (c.has_output(i)) return c.Unsupported("the training outputs are only produced with training_mode=1");
    }
  }
  std::vector<Expr> args;
  for (int i = 0; i < 5; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr e, c.Input(i));
    args.push_back(e);
  }
  const double epsilon = c.AttrFloat("epsilon", 1e-5);
  if (!training) {
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("batch_norm", args, {{"epsilon", epsilon}}));
    return Outputs(y);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  std::vector<int64_t> axes = {0};
  for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d) axes.push_back(d);
  relax::Attrs reduce = {{"axis", axes}, {"keepdims", false}};
  KILN_ASSIGN_OR_RETURN(Expr mean, c.Call("mean", {args[0]}, reduce));
  KILN_ASSIGN_OR_RETURN(Expr var, c.Call("variance", {args[0]}, reduce));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("batch_norm", {args[0], args[1], args[2], mean, var}, {{"epsilon", epsilon}}));
  std::vector<Value> outputs = {Value::Of(y)};
  const double momentum = c.AttrFloat("momentum", 0.9);
  for (int k = 0; k < 2; ++k) {
    KILN_ASSIGN_OR_RETURN(Expr old, c.Call("multiply", {args[3 + k], ScalarConstant(momentum, dtype)}));
    KILN_ASSIGN_OR_RETURN(Expr batch, c.Call("multiply", {k == 0 ? mean : var, ScalarConstant(1 - momentum, dtype)}));
    KILN_ASSIGN_OR_RETURN(Expr running, c.Call("add", {old, batch}));
    outputs.push_back(Value::Of(running));
  }
  return outputs;
}

absl::StatusOr<std::vector<Value>> ConvertInstanceNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(2));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("instance_norm", {x, scale, bias}, {{"epsilon", c.AttrFloat("epsilon", 1e-5)}}));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertGroupNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  if (shape.size() < 2) return c.Error("needs an input of rank >= 2 (N, C, ...)");
  KILN_ASSIGN_OR_RETURN(int64_t groups, c.RequiredInt("num_groups"));
  if (groups <= 0) return c.Error("num_groups must be positive, got ", groups);
  if (c.AttrInt("stash_type", 1) != 1) return c.Unsupported("stash_type other than float32 is not supported");
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  std::vector<Expr> params;
  for (int i = 1; i <= 2; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr p, c.Input(i));
    if (c.opset() < 21) {
      // One value per group: repeat each for the group's C / num_groups channels.
      const PrimExpr per_group = Simplify(tir::FloorDiv(shape[1], PrimExpr(groups)));
      KILN_ASSIGN_OR_RETURN(p, Reshape(c, p, {PrimExpr(groups), PrimExpr(1)}));
      KILN_ASSIGN_OR_RETURN(p, c.Call("broadcast_to", {p, relax::ShapeExpr({PrimExpr(groups), per_group})}));
      KILN_ASSIGN_OR_RETURN(p, Reshape(c, p, {shape[1]}));
    }
    params.push_back(p);
  }
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("group_norm", {x, params[0], params[1]},
                                       {{"num_groups", groups}, {"epsilon", c.AttrFloat("epsilon", 1e-5)}}));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertLrn(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(int64_t size, c.RequiredInt("size"));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("lrn", {x},
                                       {{"size", size},
                                        {"alpha", c.AttrFloat("alpha", 1e-4)},
                                        {"beta", c.AttrFloat("beta", 0.75)},
                                        {"bias", c.AttrFloat("bias", 1.0)}}));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertMeanVarianceNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        NormalizeAxes(c, c.AttrInts("axes", {0, 2, 3}), static_cast<int64_t>(shape.size())));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  relax::Attrs reduce = {{"axis", axes}, {"keepdims", true}};
  KILN_ASSIGN_OR_RETURN(Expr mean, c.Call("mean", {x}, reduce));
  KILN_ASSIGN_OR_RETURN(Expr var, c.Call("variance", {x}, reduce));
  KILN_ASSIGN_OR_RETURN(Expr std, c.Call("sqrt", {var}));
  // ONNX's proposed next MeanVarianceNormalization (onnx/onnx#8281) makes the 1e-9 that
  // earlier versions add to the standard deviation an `epsilon` attribute.
  KILN_ASSIGN_OR_RETURN(std, c.Call("add", {std, ScalarConstant(c.AttrFloat("epsilon", 1e-9), dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr centered, c.Call("subtract", {x, mean}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("divide", {centered, std}));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertLogSoftmax(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  const int64_t ndim = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  if (c.opset() >= 13) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", -1), ndim));
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("log_softmax", {x}, {{"axis", axis}}));
    return Outputs(y);
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", 1), std::max<int64_t>(ndim, 1)));
  if (axis == ndim - 1) {
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("log_softmax", {x}, {{"axis", axis}}));
    return Outputs(y);
  }
  KILN_ASSIGN_OR_RETURN(Expr flat, Reshape(c, x, {Product(shape, 0, axis), Product(shape, axis, ndim)}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("log_softmax", {flat}, {{"axis", int64_t{1}}}));
  KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, shape));
  return Outputs(y);
}

// Y = X / sqrt(mean(X^2) + epsilon) * Scale over axes [axis, ndim). stash_type 1 (the
// default and the only value ONNX defines a computation for) works in float32: 16-bit
// inputs are widened for the statistics and narrowed back.
absl::StatusOr<std::vector<Value>> ConvertRMSNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_float() && !dtype.is_bfloat()) return c.Error("needs a floating-point input");
  const int64_t ndim = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", -1), ndim));
  if (c.AttrInt("stash_type", 1) != 1) return c.Unsupported("stash_type other than float32 is not supported");
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < ndim; ++i) axes.push_back(i);
  const DataType work = dtype.bits() < 32 ? DataType::Float32() : dtype;
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, c.Input(1));
  if (work != dtype) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("astype", {x}, {{"dtype", work}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr x2, c.Call("multiply", {x, x}));
  KILN_ASSIGN_OR_RETURN(Expr ms, c.Call("mean", {x2}, {{"axis", axes}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr ms_eps, c.Call("add", {ms, ScalarConstant(c.AttrFloat("epsilon", 1e-5), work)}));
  KILN_ASSIGN_OR_RETURN(Expr inv, c.Call("rsqrt", {ms_eps}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("multiply", {x, inv}));
  if (work != dtype) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", dtype}}));
  }
  KILN_ASSIGN_OR_RETURN(y, c.Call("multiply", {y, scale}));
  return Outputs(y);
}

// x / ||x||_p along `axis` (p 1 or 2, the values ONNX allows); a zero norm gives 0, not NaN.
absl::StatusOr<std::vector<Value>> ConvertLpNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, c.InputInfo(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", -1), t->ndim));
  const int64_t p = c.AttrInt("p", 2);
  if (p != 1 && p != 2) return c.Error("p must be 1 or 2, got ", p);
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  Expr norm;
  const relax::Attrs reduce = {{"axis", std::vector<int64_t>{axis}}, {"keepdims", true}};
  if (p == 1) {
    KILN_ASSIGN_OR_RETURN(Expr a, c.Call("abs", {x}));
    KILN_ASSIGN_OR_RETURN(norm, c.Call("sum", {a}, reduce));
  } else {
    KILN_ASSIGN_OR_RETURN(Expr x2, c.Call("multiply", {x, x}));
    KILN_ASSIGN_OR_RETURN(Expr s, c.Call("sum", {x2}, reduce));
    KILN_ASSIGN_OR_RETURN(norm, c.Call("sqrt", {s}));
  }
  KILN_ASSIGN_OR_RETURN(Expr zero, c.Call("equal", {norm, ScalarConstant(0, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr q, c.Call("divide", {x, norm}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("where", {zero, ScalarConstant(0, dtype), q}));
  return Outputs(y);
}

}  // namespace

void RegisterNormalizationConverters(ConverterRegistry& r) {
  r.Register("BatchNormalization", ConvertBatchNormalization);
  r.Register("InstanceNormalization", ConvertInstanceNormalization);
  r.Register("GroupNormalization", ConvertGroupNormalization, 18);
  r.Register("LRN", ConvertLrn);
  r.Register("MeanVarianceNormalization", ConvertMeanVarianceNormalization, 9);
  r.Register("RMSNormalization", ConvertRMSNormalization, 23);
  r.Register("LpNormalization", ConvertLpNormalization);
  r.Register("LogSoftmax", ConvertLogSoftmax);
}

}  // namespace kiln::frontends::onnx
