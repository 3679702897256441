// ONNX's elementwise math, rounding, logical and bitwise operators, Clip, Mod, IsNaN/IsInf,
// and the activations Celu and Shrink, mapped onto Kiln's elementwise operators
// (relax/op/elementwise.cc).
//
// Opset differences handled here: Clip's bounds are attributes (min/max, floats) before
// opset 11 and optional 0-d inputs from 11 on; an absent bound is no bound (so an infinite
// input stays infinite, as NumPy's clip with None). Mod's fmod attribute picks the remainder's
// sign: 0 the divisor's (floor_mod, Python), 1 the dividend's (mod, C's fmod). BitShift's
// direction is an attribute; the Bitwise* operators appear in opset 18.
#include <string>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/converters/shape_value_folding.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// `kiln_op` applied to every input in order: one output.
ConverterFn Direct(std::string kiln_op, int arity) {
  return [kiln_op, arity](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    std::vector<Expr> args;
    for (int i = 0; i < arity; ++i) {
      KILN_ASSIGN_OR_RETURN(Expr x, c.Input(i));
      args.push_back(x);
    }
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call(kiln_op, std::move(args)));
    return Outputs(out);
  };
}

absl::StatusOr<std::vector<Value>> ConvertClip(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  std::optional<Expr> lo, hi;
  if (c.opset() < 11) {
    if (c.HasAttr("min")) lo = ScalarConstant(c.AttrFloat("min", 0), dtype);
    if (c.HasAttr("max")) hi = ScalarConstant(c.AttrFloat("max", 0), dtype);
  } else {
    for (int i : {1, 2}) {
      if (!c.has_input(i)) continue;
      KILN_ASSIGN_OR_RETURN(Expr bound, c.Input(i));
      KILN_ASSIGN_OR_RETURN(DataType bound_dtype, c.InputDType(i));
      if (bound_dtype != dtype) {
        return c.Error("input ", i, " (", i == 1 ? "min" : "max", ") is ", bound_dtype.ToString(), " but input 0 is ",
                       dtype.ToString());
      }
      (i == 1 ? lo : hi) = bound;
    }
  }
  if (lo && hi) {
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call("clip", {x, *lo, *hi}));
    return Outputs(out);
  }
  if (lo) {
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call("maximum", {x, *lo}));
    return Outputs(out);
  }
  if (hi) {
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call("minimum", {x, *hi}));
    return Outputs(out);
  }
  return std::vector<Value>{*c.InputValue(0)};
}

absl::StatusOr<std::vector<Value>> ConvertMod(NodeContext& c) {
  const int64_t fmod = c.AttrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) return c.Error("attribute fmod must be 0 or 1, got ", fmod);
  // Shape values: floor_mod on the elements; C's fmod only on constants (its sign rule
  // differs from floor_mod's for negative operands).
  absl::StatusOr<tir::DataType> dtype = c.InputDType(0);
  if (dtype.ok() && dtype->is_integer()) {
    std::optional<Value> folded =
        FoldShapeValues(c, 2, std::nullopt, [fmod](const std::vector<PrimExpr>& e) -> std::optional<PrimExpr> {
          std::optional<int64_t> a = e[0].as_int(), b = e[1].as_int();
          if (b && *b == 0) return std::nullopt;  // the run-time kernel decides what x mod 0 is
          if (fmod == 0) return tir::FloorMod(e[0], e[1]);
          if (!a || !b) return std::nullopt;
          return PrimExpr(*a % *b);
        });
    if (folded) return std::vector<Value>{*folded};
  }
  KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call(fmod == 1 ? "mod" : "floor_mod", {a, b}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertIsInf(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("isinf", {x}, {{"detect_positive", c.AttrInt("detect_positive", 1) != 0},
                                                         {"detect_negative", c.AttrInt("detect_negative", 1) != 0}}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertBitShift(NodeContext& c) {
  const std::string direction = c.AttrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return c.Error("attribute direction must be \"LEFT\" or \"RIGHT\", got \"", direction, "\"");
  }
  KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call(direction == "LEFT" ? "left_shift" : "right_shift", {a, b}));
  return Outputs(out);
}

// Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)), i.e. x where x > 0, else
// alpha expm1(x / alpha) (expm1 keeps the relative accuracy near 0). NaN stays NaN.
absl::StatusOr<std::vector<Value>> ConvertCelu(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType t, c.InputDType(0));
  if (!t.is_floating()) return c.Error("needs a floating-point input, got ", t.ToString());
  const double alpha = c.AttrFloat("alpha", 1.0);
  if (alpha == 0) return c.Error("attribute alpha must not be 0");
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr scaled, c.Call("multiply", {x, ScalarConstant(1.0 / alpha, t)}));
  KILN_ASSIGN_OR_RETURN(Expr em1, c.Call("expm1", {scaled}));
  KILN_ASSIGN_OR_RETURN(Expr negative_part, c.Call("multiply", {em1, ScalarConstant(alpha, t)}));
  KILN_ASSIGN_OR_RETURN(Expr positive, c.Call("greater", {x, ScalarConstant(0, t)}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("where", {positive, x, negative_part}));
  return Outputs(out);
}

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between (NaN: 0, as the comparisons
// are false; ONNX's reference gives the same).
absl::StatusOr<std::vector<Value>> ConvertShrink(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType t, c.InputDType(0));
  const double bias = c.AttrFloat("bias", 0.0);
  const double lambd = c.AttrFloat("lambd", 0.5);
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr below, c.Call("less", {x, ScalarConstant(-lambd, t)}));
  KILN_ASSIGN_OR_RETURN(Expr above, c.Call("greater", {x, ScalarConstant(lambd, t)}));
  KILN_ASSIGN_OR_RETURN(Expr plus, c.Call("add", {x, ScalarConstant(bias, t)}));
  KILN_ASSIGN_OR_RETURN(Expr minus, c.Call("subtract", {x, ScalarConstant(bias, t)}));
  KILN_ASSIGN_OR_RETURN(Expr upper, c.Call("where", {above, minus, ScalarConstant(0, t)}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("where", {below, plus, upper}));
  return Outputs(out);
}

// Not / And / Or / Xor: folded on bool shape values when `condition` (of the elements) is
// proved either way, else Kiln's `kiln_op`.
ConverterFn ConvertLogical(std::string kiln_op, int arity, std::function<PrimExpr(const std::vector<PrimExpr>&)> condition) {
  return [kiln_op, arity, condition](NodeContext& c) -> absl::StatusOr<std::vector<Value>> {
    std::optional<Value> folded = FoldShapeValues(c, arity, tir::DataType::Bool(),
                                                  [&](const std::vector<PrimExpr>& e) { return ProvenTruth(condition(e)); });
    if (folded) return std::vector<Value>{*folded};
    return Direct(kiln_op, arity)(c);
  };
}

}  // namespace

void RegisterMathConverters(ConverterRegistry& r) {
  for (auto [onnx_op, kiln_op] : {std::pair{"Abs", "abs"}, {"Ceil", "ceil"}, {"Floor", "floor"}, {"Erf", "erf"},
                                  {"Sin", "sin"}, {"Cos", "cos"}, {"Tan", "tan"}, {"Asin", "asin"}, {"Acos", "acos"},
                                  {"Atan", "atan"}, {"Sinh", "sinh"}, {"Cosh", "cosh"}, {"Asinh", "asinh"},
                                  {"Acosh", "acosh"}, {"Atanh", "atanh"}}) {
    r.Register(onnx_op, Direct(kiln_op, 1));
  }
  r.Register("Not", ConvertLogical("logical_not", 1, [](const std::vector<PrimExpr>& e) { return tir::EQ(e[0], 0); }));
  r.Register("And", ConvertLogical("logical_and", 2, [](const std::vector<PrimExpr>& e) {
               return tir::And(tir::NE(e[0], 0), tir::NE(e[1], 0));
             }), 7);
  r.Register("Or", ConvertLogical("logical_or", 2, [](const std::vector<PrimExpr>& e) {
               return tir::Or(tir::NE(e[0], 0), tir::NE(e[1], 0));
             }), 7);
  r.Register("Xor", ConvertLogical("logical_xor", 2, [](const std::vector<PrimExpr>& e) {
               return tir::NE(tir::NE(e[0], 0), tir::NE(e[1], 0));
             }), 7);
  r.Register("Round", Direct("round", 1), 11);
  r.Register("Sign", Direct("sign", 1), 9);
  r.Register("IsNaN", Direct("isnan", 1), 9);
  r.Register("IsInf", ConvertIsInf, 10);
  for (auto [onnx_op, kiln_op] :
       {std::pair{"BitwiseAnd", "bitwise_and"}, {"BitwiseOr", "bitwise_or"}, {"BitwiseXor", "bitwise_xor"}}) {
    r.Register(onnx_op, Direct(kiln_op, 2), 18);
  }
  r.Register("BitwiseNot", Direct("bitwise_not", 1), 18);
  r.Register("BitShift", ConvertBitShift, 11);
  r.Register("Mod", ConvertMod, 10);
  r.Register("Clip", ConvertClip, 6);
  r.Register("Celu", ConvertCelu, 12);
  r.Register("Shrink", ConvertShrink, 9);
}

}  // namespace kiln::frontends::onnx
