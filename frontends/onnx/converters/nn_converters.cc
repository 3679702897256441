// Neural-network ONNX operators Kiln has kernels for: MatMul, Gemm, Conv (2-D), MaxPool
// (2-D), Softmax, LayerNormalization, RMSNormalization, LpNormalization.
//
// Softmax before opset 13 flattens the input to 2-D at `axis` (default 1) and normalizes
// each row; from 13 it normalizes along `axis` (default -1). Conv/MaxPool padding: explicit
// `pads` (begin..., end...) or auto_pad SAME_UPPER / SAME_LOWER / VALID computed from
// static spatial dims; MaxPool's ceil_mode becomes extra end padding (padding never wins a
// max).
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

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: top, left, bottom, right
};

// The 2-D window attributes of Conv / MaxPool, with auto_pad resolved against static dims.
absl::StatusOr<Window> ReadWindow(NodeContext& c, const std::vector<PrimExpr>& in, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = std::move(kernel);
  w.strides = c.AttrInts("strides", {1, 1});
  w.dilations = c.AttrInts("dilations", {1, 1});
  w.pads = c.AttrInts("pads", {0, 0, 0, 0});
  if (w.kernel.size() != 2 || w.strides.size() != 2 || w.dilations.size() != 2 || w.pads.size() != 4) {
    return c.Error("kernel_shape, strides, dilations and pads must describe 2 spatial dims");
  }
  for (int i = 0; i < 2; ++i) {
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1) return c.Error("strides, dilations and kernel must be >= 1");
  }
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    w.pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      std::vector<int64_t> dim;
      if (!AllConstant({in[2 + i]}, &dim)) return c.Unsupported("auto_pad ", auto_pad, " needs static spatial dims");
      const int64_t out = (dim[0] + w.strides[i] - 1) / w.strides[i];
      const int64_t total =
          std::max<int64_t>((out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - dim[0], 0);
      const int64_t small = total / 2, large = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pads[2 + i] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET") {
    return c.Error("unknown auto_pad '", auto_pad, "'");
  }
  return w;
}

absl::StatusOr<std::vector<Value>> ConvertConv(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> weight, c.InputShape(1));
  if (in.size() != 4 || weight.size() != 4) {
    return c.Unsupported("only 2-D convolution (4-D input and weight) is supported, got ", in.size(), "-D input");
  }
  std::vector<int64_t> kernel = c.AttrInts("kernel_shape");
  if (kernel.empty()) {
    std::vector<int64_t> kh, kw;
    if (!AllConstant({weight[2]}, &kh) || !AllConstant({weight[3]}, &kw)) return c.Unsupported("needs a static kernel");
    kernel = {kh[0], kw[0]};
  }
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(c, in, kernel));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr wt, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("conv2d", {x, wt},
                                       {{"strides", w.strides},
                                        {"padding", w.pads},
                                        {"dilation", w.dilations},
                                        {"groups", c.AttrInt("group", 1)}}));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(2));
    KILN_ASSIGN_OR_RETURN(bias, Reshape(c, bias, {PrimExpr(1), weight[0], PrimExpr(1), PrimExpr(1)}));
    KILN_ASSIGN_OR_RETURN(y, c.Call("add", {y, bias}));
  }
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertMaxPool(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  if (in.size() != 4) return c.Unsupported("only 2-D max pooling (4-D input) is supported, got ", in.size(), "-D input");
  if (c.has_output(1)) return c.Unsupported("the Indices output is not supported");
  if (c.AttrInt("storage_order", 0) != 0) return c.Unsupported("storage_order 1 is not supported");
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(c, in, c.AttrInts("kernel_shape")));
  if (c.AttrInt("ceil_mode", 0) != 0) {
    // Output size rounded up: pad the end so floor division sees the extra window, unless
    // that window would start in the end padding (PyTorch's and ONNX's rule).
    for (int i = 0; i < 2; ++i) {
      std::vector<int64_t> dim;
      if (!AllConstant({in[2 + i]}, &dim)) return c.Unsupported("ceil_mode needs static spatial dims");
      const int64_t span = dim[0] + w.pads[i] + w.pads[2 + i] - w.dilations[i] * (w.kernel[i] - 1) - 1;
      int64_t out = (span + w.strides[i] - 1) / w.strides[i] + 1;
      if ((out - 1) * w.strides[i] >= dim[0] + w.pads[i]) --out;
      const int64_t need = (out - 1) * w.strides[i] + w.dilations[i] * (w.kernel[i] - 1) + 1;
      w.pads[2 + i] += std::max<int64_t>(need - (dim[0] + w.pads[i] + w.pads[2 + i]), 0);
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("max_pool2d", {x},
                                       {{"pool_size", w.kernel},
                                        {"strides", w.strides},
                                        {"padding", w.pads},
                                        {"dilation", w.dilations}}));
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

// (x - mean) / sqrt(mean((x - mean)^2)) over `axes` (default [0, 2, 3]), as ONNX's function
// body computes it (no epsilon).
absl::StatusOr<std::vector<Value>> ConvertMeanVarianceNormalization(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, c.InputInfo(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(c, c.AttrInts("axes", {0, 2, 3}), t->ndim));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr mean, c.Call("mean", {x}, {{"axis", axes}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr d, c.Call("subtract", {x, mean}));
  KILN_ASSIGN_OR_RETURN(Expr d2, c.Call("multiply", {d, d}));
  KILN_ASSIGN_OR_RETURN(Expr var, c.Call("mean", {d2}, {{"axis", axes}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr sd, c.Call("sqrt", {var}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("divide", {d, sd}));
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

void RegisterNnConverters(ConverterRegistry& r) {
  r.Register("MatMul", ConvertMatMul);
  r.Register("Gemm", ConvertGemm);
  r.Register("Conv", ConvertConv);
  r.Register("MaxPool", ConvertMaxPool);
  r.Register("Softmax", ConvertSoftmax);
  r.Register("LayerNormalization", ConvertLayerNormalization, 17);
  r.Register("MeanVarianceNormalization", ConvertMeanVarianceNormalization, 9);
  r.Register("RMSNormalization", ConvertRMSNormalization, 23);
  r.Register("LpNormalization", ConvertLpNormalization);
}

}  // namespace kiln::frontends::onnx
