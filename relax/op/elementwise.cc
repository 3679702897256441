// Elementwise operators.
//
// Binary arithmetic: add, subtract, multiply, divide, maximum, minimum, power (lhs, rhs).
//   No attributes. Operands are tensors of the same dtype (an unknown dtype takes the
//   other's); the result has that dtype and the numpy-broadcast shape of the operands
//   (rule in op_common.h: literal 1 broadcasts; provably different dims are an error;
//   unprovable ones such as n vs m are accepted and checked at run time). Operands on two
//   different explicit devices are an error; an unspecified device takes the other's.
// Comparison: equal, not_equal, less, less_equal, greater, greater_equal (lhs, rhs).
//   As binary arithmetic, but the result dtype is bool.
// Unary: negative, relu (any numeric dtype); exp, log, sqrt, rsqrt, tanh, sigmoid, gelu,
//   silu (floating-point dtype required; an unknown dtype is accepted). No attributes (but
//   silu's numerics: "default" or "ggml", llama.cpp's exp, relax/op/ggml_numerics.h); the
//   result has the operand's struct info (shape, dtype, device).
//   More unary math: erf, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh,
//   log1p, expm1, reciprocal (1 / x) need a floating-point dtype; floor, ceil, round (half to
//   even, as NumPy and ONNX), abs, sign (-1, 0 or 1; sign(NaN) is NaN, sign(-0.0) is 0) take
//   any numeric dtype (floor, ceil and round of an integer are the integer).
// isnan (data), isinf (data, detect_positive=true, detect_negative=true): any numeric dtype
//   (an integer is never NaN or infinite); the result is bool with data's shape. isinf with
//   detect_negative=false reports only +inf, with detect_positive=false only -inf (ONNX IsInf).
// Division and remainder (lhs, rhs), broadcasting as binary arithmetic, numeric dtypes:
//   floor_divide rounds the quotient toward -inf (floats: floor(lhs / rhs));
//   floor_mod has the divisor's sign, lhs - floor(lhs / rhs) * rhs (Python's %, np.mod, ONNX
//     Mod with fmod=0); floats are computed from fmod so that the result is exact, and a zero
//     result takes the divisor's sign as in NumPy;
//   mod has the dividend's sign (C's fmod and %, np.fmod, ONNX Mod with fmod=1); exact.
//   An integer divisor of 0 is a run-time error (as for divide); float ones give NaN / inf.
// clip (x, min, max): min(max(x, min), max) with the NaN-propagating maximum and minimum, so
//   a NaN in any of the three gives NaN; if min > max every element becomes max (ONNX). The
//   three share a dtype and broadcast together (min and max are usually 0-d); the result has
//   x's dtype. Importers fill an absent bound with the dtype's lowest / highest value.
// Logical: logical_and, logical_or, logical_xor (lhs, rhs), logical_not (data) on bool
//   tensors; the result is bool, broadcasting as binary arithmetic.
// Bitwise: bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift (lhs, rhs) and
//   bitwise_not (data) on integer tensors (int or uint of any width; both operands of one
//   dtype), on the two's complement bits. right_shift is arithmetic for int and logical for
//   uint; a shift amount outside [0, bits) shifts every bit out (0, or -1 for a negative int
//   shifted right), as tir/expr.h's Shl and Shr define it.
// where (cond, x, y): cond is bool; x and y share a dtype; all three broadcast together.
//   The result has x/y's dtype.
// Floating-point special values follow NumPy (and PyTorch): maximum/minimum return NaN when
//   either operand is NaN, whatever the argument order; relu(NaN) is NaN, relu(-inf) 0;
//   comparisons with a NaN are false except not_equal; everything else is IEEE 754
//   (gelu(-inf) and silu(-inf) are -inf * 0 = NaN, as the formulas compute).
#include "relax/op/ggml_numerics.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

// What dtypes an operator's tensor operands may have.
enum class DTypeRule {
  kAny,      // the original arithmetic ops: any dtype
  kNumeric,  // not bool (nor handle)
  kFloat,    // float or bfloat
  kInteger,  // int or uint
  kBool,
};

absl::Status CheckDTypeRule(const CallNode& call, const std::optional<DataType>& dtype, DTypeRule rule) {
  if (!dtype || rule == DTypeRule::kAny) return absl::OkStatus();
  const DataType& t = *dtype;
  switch (rule) {
    case DTypeRule::kAny:
      break;
    case DTypeRule::kNumeric:
      if (t.is_bool() || t.is_handle()) return OpError(call, "requires a numeric tensor, got ", t.ToString());
      break;
    case DTypeRule::kFloat:
      if (!t.is_floating()) return OpError(call, "requires a floating-point tensor, got ", t.ToString());
      break;
    case DTypeRule::kInteger:
      if (!t.is_integer()) return OpError(call, "requires an integer tensor, got ", t.ToString());
      break;
    case DTypeRule::kBool:
      if (!t.is_bool()) return OpError(call, "requires a bool tensor, got ", t.ToString());
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferBinary(const CallNode& call, tir::Analyzer& analyzer, bool comparison,
                                       DTypeRule rule = DTypeRule::kAny) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* lhs, TensorArg(call, 0, "lhs"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* rhs, TensorArg(call, 1, "rhs"));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, lhs->dtype, "lhs", rhs->dtype, "rhs"));
  KILN_RETURN_IF_ERROR(CheckDTypeRule(call, dtype, rule));
  KILN_ASSIGN_OR_RETURN(ShapeOrNdim shape, BroadcastTensors(call, *lhs, *rhs, analyzer));
  if (comparison) dtype = DataType::Bool();
  KILN_ASSIGN_OR_RETURN(std::string device,
                        UnifyDevice(call, lhs->device, "lhs", rhs->device, "rhs"));
  return MakeTensor(shape, dtype, device);
}

// `predicate`: the result is bool (isnan, isinf).
absl::StatusOr<StructInfo> InferUnary(const CallNode& call, DTypeRule rule, bool predicate = false) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0, "data"));
  KILN_RETURN_IF_ERROR(CheckDTypeRule(call, x->dtype, rule));
  if (predicate) {
    KILN_RETURN_IF_ERROR(BoolAttr(call, "detect_positive").status());
    KILN_RETURN_IF_ERROR(BoolAttr(call, "detect_negative").status());
  }
  return MakeTensor(ShapeOf(*x), predicate ? std::optional<DataType>(DataType::Bool()) : x->dtype, x->device);
}

absl::StatusOr<StructInfo> InferClip(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0, "x"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* lo, TensorArg(call, 1, "min"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* hi, TensorArg(call, 2, "max"));
  KILN_ASSIGN_OR_RETURN(auto bounds, UnifyDType(call, lo->dtype, "min", hi->dtype, "max"));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, x->dtype, "x", bounds, "min/max"));
  KILN_RETURN_IF_ERROR(CheckDTypeRule(call, dtype, DTypeRule::kNumeric));
  KILN_ASSIGN_OR_RETURN(ShapeOrNdim bounds_shape, BroadcastTensors(call, *lo, *hi, analyzer, "min", "max"));
  TensorStructInfoNode bounds_node(bounds_shape.shape, bounds_shape.ndim, dtype, "");
  KILN_ASSIGN_OR_RETURN(ShapeOrNdim shape, BroadcastTensors(call, *x, bounds_node, analyzer, "x", "min/max"));
  KILN_ASSIGN_OR_RETURN(std::string bounds_device, UnifyDevice(call, lo->device, "min", hi->device, "max"));
  KILN_ASSIGN_OR_RETURN(std::string device, UnifyDevice(call, x->device, "x", bounds_device, "min"));
  return MakeTensor(shape, dtype, device);
}

absl::StatusOr<StructInfo> InferWhere(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* cond, TensorArg(call, 0, "condition"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 1, "x"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* y, TensorArg(call, 2, "y"));
  if (cond->dtype && !cond->dtype->is_bool()) {
    return OpError(call, "condition must be a bool tensor, got ", cond->dtype->ToString());
  }
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, x->dtype, "x", y->dtype, "y"));
  KILN_ASSIGN_OR_RETURN(ShapeOrNdim xy, BroadcastTensors(call, *x, *y, analyzer, "x", "y"));
  // Broadcast the condition against the x/y result.
  TensorStructInfoNode xy_node(xy.shape, xy.ndim, dtype, "");
  KILN_ASSIGN_OR_RETURN(ShapeOrNdim shape,
                        BroadcastTensors(call, *cond, xy_node, analyzer, "condition", "x/y"));
  KILN_ASSIGN_OR_RETURN(std::string xy_device, UnifyDevice(call, x->device, "x", y->device, "y"));
  KILN_ASSIGN_OR_RETURN(std::string device,
                        UnifyDevice(call, cond->device, "condition", xy_device, "x"));
  return MakeTensor(shape, dtype, device);
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  for (const char* name :
       {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"}) {
    registry.Register({name, 2, 2, true, {}, [](const CallNode& call, tir::Analyzer& analyzer) {
                         return InferBinary(call, analyzer, /*comparison=*/false);
                       }});
  }
  for (const char* name :
       {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    registry.Register({name, 2, 2, true, {}, [](const CallNode& call, tir::Analyzer& analyzer) {
                         return InferBinary(call, analyzer, /*comparison=*/true);
                       }});
  }
  auto unary = [&](const char* name, DTypeRule rule) {
    registry.Register({name, 1, 1, true, {}, [rule](const CallNode& call, tir::Analyzer&) {
                         return InferUnary(call, rule);
                       }});
  };
  for (const char* name : {"negative", "relu", "abs", "sign", "floor", "ceil", "round"}) {
    unary(name, DTypeRule::kNumeric);
  }
  // silu alone takes an attribute: numerics = "ggml" (llama.cpp's exp, relax/op/ggml_numerics.h).
  registry.Register({"silu", 1, 1, true, {"numerics"}, [](const CallNode& call, tir::Analyzer&) -> absl::StatusOr<StructInfo> {
                       KILN_RETURN_IF_ERROR(GgmlNumericsAttr(call).status());
                       return InferUnary(call, DTypeRule::kFloat);
                     }});
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "erf", "sin", "cos",
                           "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p",
                           "expm1", "reciprocal"}) {
    unary(name, DTypeRule::kFloat);
  }
  unary("logical_not", DTypeRule::kBool);
  unary("bitwise_not", DTypeRule::kInteger);
  registry.Register({"isnan", 1, 1, true, {}, [](const CallNode& call, tir::Analyzer&) {
                       return InferUnary(call, DTypeRule::kNumeric, /*predicate=*/true);
                     }});
  registry.Register({"isinf", 1, 1, true, {"detect_positive", "detect_negative"},
                     [](const CallNode& call, tir::Analyzer&) {
                       return InferUnary(call, DTypeRule::kNumeric, /*predicate=*/true);
                     }});
  auto binary = [&](const char* name, DTypeRule rule, bool comparison) {
    registry.Register({name, 2, 2, true, {}, [rule, comparison](const CallNode& call, tir::Analyzer& analyzer) {
                         return InferBinary(call, analyzer, comparison, rule);
                       }});
  };
  for (const char* name : {"floor_divide", "floor_mod", "mod"}) binary(name, DTypeRule::kNumeric, false);
  for (const char* name : {"logical_and", "logical_or", "logical_xor"}) binary(name, DTypeRule::kBool, false);
  for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}) {
    binary(name, DTypeRule::kInteger, false);
  }
  registry.Register({"clip", 3, 3, true, {}, InferClip});
  registry.Register({"where", 3, 3, true, {}, InferWhere});
}

}  // namespace kiln::relax::op
