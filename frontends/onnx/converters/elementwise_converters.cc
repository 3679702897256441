// Elementwise ONNX operators: arithmetic, comparisons, Where, unary math, and activations
// that decompose into Kiln's elementwise operators.
//
// Integer arithmetic on shape values (value.h) is done at import time on their symbolic
// elements, so `Shape(x)[0] * 2` stays a symbolic shape; everything else is emitted.
// NaN: Max/Min propagate NaN (Kiln's maximum/minimum do, as ONNX Runtime does); the
// where-based activations keep a NaN input NaN (the comparison is false, x passes through).
#include <cmath>
#include <functional>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/converters/string_converters.h"
#include "frontends/onnx/converters/shape_value_folding.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Integer arithmetic on shape values (a scalar broadcasts), or nullopt when either side is
// not one.
std::optional<Value> FoldArithmetic(NodeContext& c, const std::function<PrimExpr(PrimExpr, PrimExpr)>& fn) {
  absl::StatusOr<DataType> dtype = c.InputDType(0);
  if (!dtype.ok() || !dtype->is_integer()) return std::nullopt;
  return FoldShapeValues(c, 2, std::nullopt, [&](const std::vector<PrimExpr>& e) -> std::optional<PrimExpr> {
    return fn(e[0], e[1]);
  });
}

// A comparison of shape values whose outcome the analyzer proves: a bool shape value.
std::optional<Value> FoldComparison(NodeContext& c, const std::function<PrimExpr(PrimExpr, PrimExpr)>& condition) {
  return FoldShapeValues(c, 2, DataType::Bool(), [&](const std::vector<PrimExpr>& e) {
    return ProvenTruth(condition(e[0], e[1]));
  });
}

// Binary op `kiln_op`; `fold` (may be empty) folds shape values with FoldArithmetic, or
// with FoldComparison when `comparison`.
ConverterFn Binary(std::string kiln_op, std::function<PrimExpr(PrimExpr, PrimExpr)> fold = nullptr,
                   bool comparison = false) {
  return [kiln_op, fold, comparison](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    if (fold) {
      std::optional<Value> folded = comparison ? FoldComparison(c, fold) : FoldArithmetic(c, fold);
      if (folded) return std::vector<Value>{*folded};
    }
    KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
    KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
    if (c.opset() < 7 && c.AttrInt("broadcast", 0) != 0 && c.HasAttr("axis")) {
      return c.Unsupported("legacy broadcasting with an axis attribute (opset < 7) is not supported");
    }
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call(kiln_op, {a, b}));
    return Outputs(out);
  };
}

ConverterFn Unary(std::string kiln_op) {
  return [kiln_op](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call(kiln_op, {x}));
    return Outputs(out);
  };
}

// Sum, Mean, Max, Min over any number of inputs (numpy broadcasting between them).
ConverterFn Variadic(std::string kiln_op, bool mean) {
  return [kiln_op, mean](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    if (c.num_inputs() == 0) return c.Error("needs at least one input");
    KILN_ASSIGN_OR_RETURN(Expr acc, c.Input(0));
    for (int i = 1; i < c.num_inputs(); ++i) {
      KILN_ASSIGN_OR_RETURN(Expr x, c.Input(i));
      KILN_ASSIGN_OR_RETURN(acc, c.Call(kiln_op, {acc, x}));
    }
    if (mean && c.num_inputs() > 1) {
      KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
      KILN_ASSIGN_OR_RETURN(acc, c.Call("divide", {acc, ScalarConstant(c.num_inputs(), dtype)}));
    } else if (c.num_inputs() == 1) {
      // One input: the result is that input; bind it so the output has its own variable.
      return std::vector<Value>{*c.InputValue(0)};
    }
    return Outputs(acc);
  };
}

// x's dtype, required floating point for the decomposed activations.
absl::StatusOr<DataType> FloatDType(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_floating()) return c.Error("needs a floating-point input, got ", dtype.ToString());
  return dtype;
}

// An activation written as a function of (context, x, dtype) -> result.
ConverterFn Activation(std::function<absl::StatusOr<Expr>(NodeContext&, Expr, DataType)> body) {
  return [body](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    KILN_ASSIGN_OR_RETURN(DataType dtype, FloatDType(c));
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
    KILN_ASSIGN_OR_RETURN(Expr out, body(c, x, dtype));
    return Outputs(out);
  };
}

absl::StatusOr<std::vector<Value>> ConvertWhere(NodeContext& c) {
  // A proven condition over shape values picks elements at import time.
  absl::StatusOr<DataType> picked = c.InputDType(1);
  if (picked.ok() && picked->is_integer()) {
    std::optional<Value> folded = FoldShapeValues(c, 3, *picked, [](const std::vector<PrimExpr>& e) {
      std::optional<PrimExpr> truth = ProvenTruth(tir::NE(e[0], PrimExpr(0)));
      if (!truth) return std::optional<PrimExpr>();
      return std::optional<PrimExpr>(truth->as_int() == 1 ? e[1] : e[2]);
    });
    if (folded) return std::vector<Value>{*folded};
  }
  KILN_ASSIGN_OR_RETURN(Expr cond, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Input(2));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("where", {cond, x, y}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertPow(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Input(1));
  KILN_ASSIGN_OR_RETURN(DataType xt, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(DataType yt, c.InputDType(1));
  // Since opset 12 the exponent may have another type; the result has the base's.
  if (xt != yt) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", xt}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("power", {x, y}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertPRelu(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr slope, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr negative, c.Call("less", {x, ScalarConstant(0, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr scaled, c.Call("multiply", {x, slope}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("where", {negative, scaled, x}));
  return Outputs(out);
}

// x * sigmoid(alpha * x).
absl::StatusOr<Expr> Swish(NodeContext& c, Expr x, DataType t) {
  const double alpha = c.AttrFloat("alpha", 1.0);
  Expr ax = x;
  if (alpha != 1.0) {
    KILN_ASSIGN_OR_RETURN(ax, c.Call("multiply", {x, ScalarConstant(alpha, t)}));
  }
  KILN_ASSIGN_OR_RETURN(Expr s, c.Call("sigmoid", {ax}));
  return c.Call("multiply", {x, s});
}

// Exact: x * (1 + erf(x / sqrt 2)) / 2 (Kiln's gelu); approximate "tanh":
// x * (1 + tanh(u)) / 2 with u = sqrt(2 / pi) * (x + 0.044715 x^3), computed as the equal
// x * sigmoid(2 u): 1 + tanh(u) cancels to 0 in float32 for u below about -9, where the
// true value (and sigmoid's) is still a normal number.
absl::StatusOr<Expr> Gelu(NodeContext& c, Expr x, DataType t) {
  const std::string approximate = c.AttrString("approximate", "none");
  if (approximate == "none") return c.Call("gelu", {x});
  if (approximate != "tanh") return c.Error("unknown approximate '", approximate, "' (none or tanh)");
  KILN_ASSIGN_OR_RETURN(Expr x2, c.Call("multiply", {x, x}));
  KILN_ASSIGN_OR_RETURN(Expr x3, c.Call("multiply", {x2, x}));
  KILN_ASSIGN_OR_RETURN(Expr cubic, c.Call("multiply", {x3, ScalarConstant(0.044715, t)}));
  KILN_ASSIGN_OR_RETURN(Expr inner, c.Call("add", {x, cubic}));
  KILN_ASSIGN_OR_RETURN(inner, c.Call("multiply", {inner, ScalarConstant(2 * std::sqrt(2.0 / M_PI), t)}));
  KILN_ASSIGN_OR_RETURN(Expr s, c.Call("sigmoid", {inner}));
  return c.Call("multiply", {x, s});
}

// The gated activations SwiGLU (28: Swish(a, alpha) * b) and GeGLU (ONNX's proposed next
// opset: Gelu(a, approximate) * b): a gate a and a value b of one shape and type; ONNX
// applies no broadcasting, so dimensions proven different are an error.
ConverterFn GatedActivation(std::function<absl::StatusOr<Expr>(NodeContext&, Expr, DataType)> gate_fn) {
  return [gate_fn](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> a_shape, c.InputShape(0));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> b_shape, c.InputShape(1));
    KILN_ASSIGN_OR_RETURN(DataType t, FloatDType(c));
    KILN_ASSIGN_OR_RETURN(DataType b_dtype, c.InputDType(1));
    bool same_shape = a_shape.size() == b_shape.size();
    for (size_t i = 0; same_shape && i < a_shape.size(); ++i) {
      std::optional<PrimExpr> differ = ProvenTruth(tir::NE(a_shape[i], b_shape[i]));
      same_shape = !(differ && differ->as_int() == 1);
    }
    if (!same_shape || t != b_dtype) {
      return c.Error("A and B must have the same shape and type (no broadcasting)");
    }
    KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
    KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
    KILN_ASSIGN_OR_RETURN(Expr gate, gate_fn(c, a, t));
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call("multiply", {gate, b}));
    return Outputs(out);
  };
}

}  // namespace

void RegisterElementwiseConverters(ConverterRegistry& r) {
  r.Register("Add", Binary("add", [](PrimExpr a, PrimExpr b) { return a + b; }));
  r.Register("Sub", Binary("subtract", [](PrimExpr a, PrimExpr b) { return a - b; }));
  r.Register("Mul", Binary("multiply", [](PrimExpr a, PrimExpr b) { return a * b; }));
  // Shape values are non-negative, where truncating and floor division agree.
  r.Register("Div", Binary("divide", [](PrimExpr a, PrimExpr b) { return tir::FloorDiv(a, b); }));
  r.Register("Pow", ConvertPow);
  r.Register("Equal", [numeric = Binary("equal", tir::EQ, true)](NodeContext& c) {
    return InputIsString(c, 0) ? ConvertStringEqual(c) : numeric(c);  // string_converters.cc
  });
  r.Register("Less", Binary("less", tir::LT, true));
  r.Register("Greater", Binary("greater", tir::GT, true));
  r.Register("LessOrEqual", Binary("less_equal", tir::LE, true), 12);
  r.Register("GreaterOrEqual", Binary("greater_equal", tir::GE, true), 12);
  r.Register("Where", ConvertWhere, 9);
  r.Register("Sum", Variadic("add", false));
  r.Register("Mean", Variadic("add", true));
  r.Register("Max", Variadic("maximum", false));
  r.Register("Min", Variadic("minimum", false));

  r.Register("Relu", Unary("relu"));
  r.Register("Neg", [](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    // -shape values stay shape values (expanded LayerNormalization negates its axis count).
    const Value* v = c.InputValue(0);
    if (v != nullptr && c.InputElementsKnown(0)) {
      KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> e, c.InputElements(0));
      KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
      if (dtype.is_int()) {
        for (PrimExpr& x : e) x = Simplify(PrimExpr(0) - x);
        const int rank = v->elements ? v->elements_rank : static_cast<int>(v->data->shape.size());
        return std::vector<Value>{Value::OfElements(std::move(e), dtype, rank)};
      }
    }
    return Unary("negative")(c);
  });
  r.Register("Exp", Unary("exp"));
  r.Register("Log", Unary("log"));
  r.Register("Sqrt", Unary("sqrt"));
  r.Register("Tanh", Unary("tanh"));
  r.Register("Sigmoid", Unary("sigmoid"));
  r.Register("PRelu", ConvertPRelu);

  r.Register("Reciprocal", Activation([](NodeContext& c, Expr x, DataType t) {
               return c.Call("divide", {ScalarConstant(1, t), x});
             }));
  // log(exp(x) + 1), as ONNX's reference computes it.
  r.Register("Softplus", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {x}));
               KILN_ASSIGN_OR_RETURN(Expr e1, c.Call("add", {e, ScalarConstant(1, t)}));
               return c.Call("log", {e1});
             }));
  // x / (1 + |x|), |x| as max(x, -x).
  r.Register("Softsign", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr neg, c.Call("negative", {x}));
               KILN_ASSIGN_OR_RETURN(Expr abs, c.Call("maximum", {x, neg}));
               KILN_ASSIGN_OR_RETURN(Expr den, c.Call("add", {abs, ScalarConstant(1, t)}));
               return c.Call("divide", {x, den});
             }));
  r.Register("LeakyRelu", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr negative, c.Call("less", {x, ScalarConstant(0, t)}));
               KILN_ASSIGN_OR_RETURN(Expr scaled, c.Call("multiply", {x, ScalarConstant(c.AttrFloat("alpha", 0.01), t)}));
               return c.Call("where", {negative, scaled, x});
             }));
  r.Register("Elu", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr negative, c.Call("less", {x, ScalarConstant(0, t)}));
               KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {x}));
               KILN_ASSIGN_OR_RETURN(Expr em1, c.Call("subtract", {e, ScalarConstant(1, t)}));
               KILN_ASSIGN_OR_RETURN(Expr scaled, c.Call("multiply", {em1, ScalarConstant(c.AttrFloat("alpha", 1.0), t)}));
               return c.Call("where", {negative, scaled, x});
             }));
  r.Register("Selu", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               const double alpha = c.AttrFloat("alpha", 1.67326319217681884765625);
               const double gamma = c.AttrFloat("gamma", 1.05070102214813232421875);
               KILN_ASSIGN_OR_RETURN(Expr positive, c.Call("greater", {x, ScalarConstant(0, t)}));
               KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {x}));
               KILN_ASSIGN_OR_RETURN(Expr ae, c.Call("multiply", {e, ScalarConstant(alpha, t)}));
               KILN_ASSIGN_OR_RETURN(Expr neg, c.Call("subtract", {ae, ScalarConstant(alpha, t)}));
               KILN_ASSIGN_OR_RETURN(Expr picked, c.Call("where", {positive, x, neg}));
               return c.Call("multiply", {picked, ScalarConstant(gamma, t)});
             }));
  r.Register("ThresholdedRelu", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr above, c.Call("greater", {x, ScalarConstant(c.AttrFloat("alpha", 1.0), t)}));
               return c.Call("where", {above, x, ScalarConstant(0, t)});
             }), 10);
  // max(0, min(1, alpha * x + beta)).
  r.Register("HardSigmoid", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr ax, c.Call("multiply", {x, ScalarConstant(c.AttrFloat("alpha", 0.2), t)}));
               KILN_ASSIGN_OR_RETURN(Expr axb, c.Call("add", {ax, ScalarConstant(c.AttrFloat("beta", 0.5), t)}));
               KILN_ASSIGN_OR_RETURN(Expr lo, c.Call("minimum", {axb, ScalarConstant(1, t)}));
               return c.Call("maximum", {lo, ScalarConstant(0, t)});
             }));
  // x * max(0, min(1, x / 6 + 1 / 2)).
  r.Register("HardSwish", Activation([](NodeContext& c, Expr x, DataType t) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr ax, c.Call("multiply", {x, ScalarConstant(1.0 / 6.0, t)}));
               KILN_ASSIGN_OR_RETURN(Expr axb, c.Call("add", {ax, ScalarConstant(0.5, t)}));
               KILN_ASSIGN_OR_RETURN(Expr lo, c.Call("minimum", {axb, ScalarConstant(1, t)}));
               KILN_ASSIGN_OR_RETURN(Expr hs, c.Call("maximum", {lo, ScalarConstant(0, t)}));
               return c.Call("multiply", {x, hs});
             }), 14);
  r.Register("Gelu", Activation(Gelu), 20);
  r.Register("Swish", Activation(Swish), 24);
  r.Register("SwiGLU", GatedActivation(Swish), 28);
  r.Register("GeGLU", GatedActivation(Gelu), 28);
  // x * tanh(softplus(x)), softplus = log1p(exp(x)): a large x overflows exp to inf, and
  // tanh(inf) = 1 still gives x.
  r.Register("Mish", Activation([](NodeContext& c, Expr x, DataType) -> absl::StatusOr<Expr> {
               KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {x}));
               KILN_ASSIGN_OR_RETURN(Expr sp, c.Call("log1p", {e}));
               KILN_ASSIGN_OR_RETURN(Expr th, c.Call("tanh", {sp}));
               return c.Call("multiply", {x, th});
             }), 18);
}

}  // namespace kiln::frontends::onnx
