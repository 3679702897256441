// Neural-network ONNX operators Kiln has kernels for: MatMul, Gemm, Softmax,
// LayerNormalization (the window operators are in window_converters.cc).
//
// Softmax before opset 13 flattens the input to 2-D at `axis` (default 1) and normalizes
// each row; from 13 it normalizes along `axis` (default -1).
#include <limits>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

absl::StatusOr<std::vector<Value>> ConvertMatMul(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("matmul", {a, b}));
  return Outputs(out);
}

// Y = alpha * A' B' + beta * C.
absl::StatusOr<std::vector<Value>> ConvertGemm(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
  const std::vector<int64_t> swap = {1, 0};
  if (c.AttrInt("transA", 0) != 0) {
    KILN_ASSIGN_OR_RETURN(a, c.Call("permute_dims", {a}, {{"axes", swap}}));
  }
  if (c.AttrInt("transB", 0) != 0) {
    KILN_ASSIGN_OR_RETURN(b, c.Call("permute_dims", {b}, {{"axes", swap}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("matmul", {a, b}));
  const double alpha = c.AttrFloat("alpha", 1.0), beta = c.AttrFloat("beta", 1.0);
  if (alpha != 1.0) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("multiply", {y, ScalarConstant(alpha, dtype)}));
  }
  if (c.has_input(2) && beta != 0.0) {
    KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(2));
    if (beta != 1.0) {
      KILN_ASSIGN_OR_RETURN(bias, c.Call("multiply", {bias, ScalarConstant(beta, dtype)}));
    }
    KILN_ASSIGN_OR_RETURN(y, c.Call("add", {y, bias}));
  }
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertSoftmax(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  const int64_t ndim = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  if (c.opset() >= 13) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", -1), ndim));
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("softmax", {x}, {{"axis", axis}}));
    return Outputs(y);
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", 1), std::max<int64_t>(ndim, 1)));
  if (axis == ndim - 1) {
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("softmax", {x}, {{"axis", axis}}));
    return Outputs(y);
  }
  KILN_ASSIGN_OR_RETURN(Expr flat, Reshape(c, x, {Product(shape, 0, axis), Product(shape, axis, ndim)}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("softmax", {flat}, {{"axis", int64_t{1}}}));
  KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, shape));
  return Outputs(y);
}

// Y = (x - mean) / sqrt(var + eps) * scale + bias over axes [axis, ndim); optional outputs
// Mean and InvStdDev keep the reduced dims as 1.
absl::StatusOr<std::vector<Value>> ConvertLayerNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  const int64_t ndim = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", -1), ndim));
  const double epsilon = c.AttrFloat("epsilon", 1e-5);
  if (c.AttrInt("stash_type", 1) != 1) return c.Unsupported("stash_type other than float32 is not supported");
  std::vector<int64_t> axes;
  std::vector<PrimExpr> normalized;
  for (int64_t i = axis; i < ndim; ++i) {
    axes.push_back(i);
    normalized.push_back(shape[i]);
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, c.Input(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> scale_shape, c.InputShape(1));
  if (scale_shape.size() != normalized.size()) {
    KILN_ASSIGN_OR_RETURN(scale, c.Call("broadcast_to", {scale, relax::ShapeExpr(normalized)}));
  }
  Expr bias;
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(bias, c.Input(2));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bias_shape, c.InputShape(2));
    if (bias_shape.size() != normalized.size()) {
      KILN_ASSIGN_OR_RETURN(bias, c.Call("broadcast_to", {bias, relax::ShapeExpr(normalized)}));
    }
  }
  if (!c.has_output(1) && !c.has_output(2)) {
    if (!bias.defined()) {
      KILN_ASSIGN_OR_RETURN(bias, c.Call("zeros", {relax::ShapeExpr(normalized)}, {{"dtype", dtype}}));
    }
    KILN_ASSIGN_OR_RETURN(Expr y, c.Call("layer_norm", {x, scale, bias}, {{"axes", axes}, {"epsilon", epsilon}}));
    return Outputs(y);
  }
  KILN_ASSIGN_OR_RETURN(Expr mean, c.Call("mean", {x}, {{"axis", axes}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr d, c.Call("subtract", {x, mean}));
  KILN_ASSIGN_OR_RETURN(Expr d2, c.Call("multiply", {d, d}));
  KILN_ASSIGN_OR_RETURN(Expr var, c.Call("mean", {d2}, {{"axis", axes}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr var_eps, c.Call("add", {var, ScalarConstant(epsilon, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr inv, c.Call("rsqrt", {var_eps}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("multiply", {d, inv}));
  KILN_ASSIGN_OR_RETURN(y, c.Call("multiply", {y, scale}));
  if (bias.defined()) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("add", {y, bias}));
  }
  return std::vector<Value>{Value::Of(y), Value::Of(mean), Value::Of(inv)};
}

}  // namespace

void RegisterNnConverters(ConverterRegistry& r) {
  r.Register("MatMul", ConvertMatMul);
  r.Register("Gemm", ConvertGemm);
  r.Register("Softmax", ConvertSoftmax);
  r.Register("LayerNormalization", ConvertLayerNormalization, 17);
}

}  // namespace kiln::frontends::onnx
