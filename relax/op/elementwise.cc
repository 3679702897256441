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
//   silu (floating-point dtype required; an unknown dtype is accepted). No attributes; the
//   result has the operand's struct info (shape, dtype, device).
// where (cond, x, y): cond is bool; x and y share a dtype; all three broadcast together.
//   The result has x/y's dtype.
// Floating-point special values follow NumPy (and PyTorch): maximum/minimum return NaN when
//   either operand is NaN, whatever the argument order; relu(NaN) is NaN, relu(-inf) 0;
//   comparisons with a NaN are false except not_equal; everything else is IEEE 754
//   (gelu(-inf) and silu(-inf) are -inf * 0 = NaN, as the formulas compute).
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> InferBinary(const CallNode& call, tir::Analyzer& analyzer,
                                       bool comparison) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* lhs, TensorArg(call, 0, "lhs"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* rhs, TensorArg(call, 1, "rhs"));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, lhs->dtype, "lhs", rhs->dtype, "rhs"));
  KILN_ASSIGN_OR_RETURN(ShapeOrNdim shape, BroadcastTensors(call, *lhs, *rhs, analyzer));
  if (comparison) dtype = DataType::Bool();
  KILN_ASSIGN_OR_RETURN(std::string device,
                        UnifyDevice(call, lhs->device, "lhs", rhs->device, "rhs"));
  return MakeTensor(shape, dtype, device);
}

absl::StatusOr<StructInfo> InferUnary(const CallNode& call, bool needs_float) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0, "data"));
  if (x->dtype &&
      (needs_float ? !x->dtype->is_floating() : (x->dtype->is_bool() || x->dtype->is_handle()))) {
    return OpError(call, "requires a ", needs_float ? "floating-point" : "numeric", " tensor, got ",
                   x->dtype->ToString());
  }
  return MakeTensor(ShapeOf(*x), x->dtype, x->device);
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
  for (const char* name : {"negative", "relu"}) {
    registry.Register({name, 1, 1, true, {}, [](const CallNode& call, tir::Analyzer&) {
                         return InferUnary(call, /*needs_float=*/false);
                       }});
  }
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "silu"}) {
    registry.Register({name, 1, 1, true, {}, [](const CallNode& call, tir::Analyzer&) {
                         return InferUnary(call, /*needs_float=*/true);
                       }});
  }
  registry.Register({"where", 3, 3, true, {}, InferWhere});
}

}  // namespace kiln::relax::op
