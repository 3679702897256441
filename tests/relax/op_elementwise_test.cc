#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

using ::testing::HasSubstr;

TEST(OpRegistryTest, FindsEveryOperatorAndDeclaresPurity) {
  const OpRegistry& reg = OpRegistry::Global();
  for (const char* name : {"add",          "subtract",     "multiply",
                           "divide",       "maximum",      "minimum",
                           "power",        "negative",     "exp",
                           "log",          "sqrt",         "rsqrt",
                           "tanh",         "sigmoid",      "relu",
                           "gelu",         "silu",         "matmul",
                           "reshape",      "permute_dims", "broadcast_to",
                           "concat",       "split",        "strided_slice",
                           "take",         "where",        "sum",
                           "mean",         "max",          "argmax",
                           "softmax",      "layer_norm",   "rms_norm",
                           "astype",       "full",         "zeros",
                           "ones",         "arange",       "conv2d",
                           "max_pool2d",   "call_tir",     "call_dps_library",
                           "call_builtin", "shape_of",     "print"}) {
    const OpInfo* info = reg.Find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
  }
  EXPECT_EQ(reg.Find("no_such_op"), nullptr);
  EXPECT_TRUE(reg.Find("add")->pure);
  EXPECT_TRUE(reg.Find("call_tir")->pure);
  EXPECT_FALSE(reg.Find("call_builtin")->pure);
  EXPECT_TRUE(reg.Find("call_pure_builtin")->pure);
  EXPECT_FALSE(reg.Find("print")->pure);
  std::vector<std::string> names = reg.Names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(OpRegistryTest, ArityAttributeAndUnknownOpErrorsNameTheOp) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("add", {T({n})}), "error: add: expects 2 arguments, got 1");
  EXPECT_EQ(Infer("exp", {T({n}), T({n})}), "error: exp: expects 1 argument, got 2");
  EXPECT_EQ(Infer("add", {T({n}), T({n})}, {{"axis", int64_t{0}}}),
            "error: add: unknown attribute 'axis' (accepted: none)");
  EXPECT_EQ(Infer("sum", {T({n})}, {{"axes", int64_t{0}}}),
            "error: sum: unknown attribute 'axes' (accepted: axis, keepdims)");
  EXPECT_EQ(Infer("frobnicate", {}), "error: unknown operator 'frobnicate'");
  // A typo, or another framework's name, is answered with Kiln's.
  EXPECT_EQ(Infer("relux", {T({n})}), "error: unknown operator 'relux' (did you mean 'relu'?)");
  EXPECT_EQ(Infer("transpose", {T({n})}), "error: unknown operator 'transpose' (Kiln calls it 'permute_dims')");
  EXPECT_EQ(Infer("cat", {T({n})}), "error: unknown operator 'cat' (Kiln calls it 'concat')");
  EXPECT_EQ(Infer("arange", {PrimValue(1), PrimValue(2), PrimValue(3), PrimValue(4)}),
            "error: arange: expects 0 to 3 arguments, got 4");
  EXPECT_EQ(Infer("call_builtin", {}), "error: call_builtin: expects at least 1 argument, got 0");
  // A call whose arguments carry no struct info was not normalized.
  EXPECT_THAT(Infer("add", {Tuple({}), T({n})}), HasSubstr("add: argument 0 has no struct info"));
}

TEST(ElementwiseTest, BinaryBroadcastsSymbolicShapes) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  EXPECT_EQ(Infer("add", {T({n, 4}), T({n, 4})}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("subtract", {T({n, 1}), T({1, 4})}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("multiply", {T({1}), T({n + 1, n})}), "Tensor((n + 1, n), float32)");
  EXPECT_EQ(Infer("divide", {T({2, n, 3}), T({3})}), "Tensor((2, n, 3), float32)");
  EXPECT_EQ(Infer("maximum", {T({n + 1}), T({n + 1})}), "Tensor((n + 1,), float32)");
  EXPECT_EQ(Infer("minimum", {T({}), T({n})}), "Tensor((n,), float32)");
  // n vs m cannot be decided: accepted (checked at run time), the left dim is kept.
  EXPECT_EQ(Infer("power", {T({n}), T({m})}), "Tensor((n,), float32)");
  // n vs 4: accepted, the literal is kept.
  EXPECT_EQ(Infer("add", {T({n}), T({4})}), "Tensor((4,), float32)");
}

TEST(ElementwiseTest, BinaryRejectsProvablyDifferentDims) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("add", {T({n}), T({n + 1})}),
            "error: add: cannot broadcast dim 0 (n) against dim 0 (n + 1)");
  EXPECT_EQ(Infer("multiply", {T({2, 3}), T({5, 4})}),
            "error: multiply: cannot broadcast dim 1 (3) against dim 1 (4)");
  EXPECT_EQ(Infer("subtract", {T({n, 3}), T({4})}),
            "error: subtract: cannot broadcast dim 1 (3) against dim 0 (4)");
}

TEST(ElementwiseTest, BinaryDtypesAndUnknowns) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("add", {T({n}, f32), T({n}, i32)}),
            "error: add: dtypes differ: lhs is float32, rhs is int32");
  EXPECT_EQ(Infer("add", {T({n}, std::nullopt), T({n}, f16)}), "Tensor((n,), float16)");
  EXPECT_EQ(Infer("add", {T({n}, std::nullopt), T({n}, std::nullopt)}), "Tensor((n,))");
  EXPECT_EQ(Infer("add", {TNdim(kUnknownNdim), T({n})}), "Tensor(float32)");
  EXPECT_EQ(Infer("add", {TNdim(3), T({n})}), "Tensor(ndim=3, float32)");
  EXPECT_EQ(Infer("add", {T({n}), Var("s", ShapeSInfo({n}))}),
            "error: add: rhs (argument 1) must be a Tensor, got Shape((n,))");
  Var cpu("a", TensorSInfo({n}, f32, "cpu"));
  EXPECT_EQ(Infer("add", {cpu, cpu}), "Tensor((n,), float32, device=\"cpu\")");
  EXPECT_EQ(Infer("add", {T({n}), cpu}), "Tensor((n,), float32, device=\"cpu\")");
  Var gpu("g", TensorSInfo({n}, f32, "cuda:0"));
  EXPECT_EQ(Infer("add", {cpu, gpu}),
            "error: add: operands are on different devices: lhs on \"cpu\", rhs on \"cuda:0\"");
  EXPECT_EQ(Infer("matmul", {Var("a", TensorSInfo({n, 4}, f32, "cpu")),
                             Var("b", TensorSInfo({4, 2}, f32, "cuda:0"))}),
            "error: matmul: operands are on different devices: lhs on \"cpu\", rhs on \"cuda:0\"");
}

TEST(ElementwiseTest, ShapeDimsMustBeInt64) {
  tir::Var k("k", i32);
  EXPECT_EQ(Infer("add", {T({4}), T({k})}),
            "error: add: rhs (argument 1) dim 0 (k) must be an int64 expression, got int32");
}

TEST(ElementwiseTest, ComparisonsGiveBool) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("less", {T({n, 1}), T({4})}), "Tensor((n, 4), bool)");
  EXPECT_EQ(Infer("equal", {T({n}, i64), T({n}, i64)}), "Tensor((n,), bool)");
}

TEST(ElementwiseTest, Unary) {
  tir::Var n = tir::Var::Shape("n");
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "silu"}) {
    EXPECT_EQ(Infer(op, {T({n + 1, 4})}), "Tensor((n + 1, 4), float32)") << op;
    EXPECT_EQ(Infer(op, {T({n}, i32)}),
              std::string("error: ") + op + ": requires a floating-point tensor, got int32");
    EXPECT_EQ(Infer(op, {TNdim(kUnknownNdim, std::nullopt)}), "Tensor") << op;
  }
  EXPECT_EQ(Infer("negative", {T({n}, i32)}), "Tensor((n,), int32)");
  EXPECT_EQ(Infer("relu", {TNdim(2, f16)}), "Tensor(ndim=2, float16)");
  EXPECT_EQ(Infer("negative", {T({n}, boolean)}),
            "error: negative: requires a numeric tensor, got bool");
}

TEST(ElementwiseTest, MathUnary) {
  tir::Var n = tir::Var::Shape("n");
  for (const char* op : {"erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                         "log1p", "expm1", "reciprocal"}) {
    EXPECT_EQ(Infer(op, {T({n, 4}, f16)}), "Tensor((n, 4), float16)") << op;
    EXPECT_EQ(Infer(op, {T({n}, i64)}), std::string("error: ") + op + ": requires a floating-point tensor, got int64");
  }
  for (const char* op : {"abs", "sign", "floor", "ceil", "round"}) {
    EXPECT_EQ(Infer(op, {T({n}, i32)}), "Tensor((n,), int32)") << op;
    EXPECT_EQ(Infer(op, {T({n}, boolean)}), std::string("error: ") + op + ": requires a numeric tensor, got bool");
  }
  EXPECT_EQ(Infer("isnan", {T({n, 3})}), "Tensor((n, 3), bool)");
  EXPECT_EQ(Infer("isinf", {T({n})}, {{"detect_negative", false}}), "Tensor((n,), bool)");
  EXPECT_EQ(Infer("isinf", {T({n})}, {{"detect_negative", int64_t{0}}}),
            "error: isinf: attribute 'detect_negative' must be a bool, got int");
  EXPECT_EQ(Infer("isnan", {T({n})}, {{"detect_negative", false}}),
            "error: isnan: unknown attribute 'detect_negative' (accepted: none)");
}

TEST(ElementwiseTest, DivisionLogicalAndBitwiseDtypes) {
  tir::Var n = tir::Var::Shape("n");
  for (const char* op : {"floor_divide", "floor_mod", "mod"}) {
    EXPECT_EQ(Infer(op, {T({n, 1}, i32), T({4}, i32)}), "Tensor((n, 4), int32)") << op;
    EXPECT_EQ(Infer(op, {T({n}), T({n})}), "Tensor((n,), float32)") << op;
    EXPECT_EQ(Infer(op, {T({n}, boolean), T({n}, boolean)}),
              std::string("error: ") + op + ": requires a numeric tensor, got bool");
  }
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    EXPECT_EQ(Infer(op, {T({n}, boolean), T({1}, boolean)}), "Tensor((n,), bool)") << op;
    EXPECT_EQ(Infer(op, {T({n}), T({n})}), std::string("error: ") + op + ": requires a bool tensor, got float32");
  }
  EXPECT_EQ(Infer("logical_not", {T({n}, i32)}), "error: logical_not: requires a bool tensor, got int32");
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}) {
    EXPECT_EQ(Infer(op, {T({n}, i64), T({n}, i64)}), "Tensor((n,), int64)") << op;
    EXPECT_EQ(Infer(op, {T({n}), T({n})}), std::string("error: ") + op + ": requires an integer tensor, got float32");
    EXPECT_EQ(Infer(op, {T({n}, i64), T({n}, i32)}),
              std::string("error: ") + op + ": dtypes differ: lhs is int64, rhs is int32");
  }
  EXPECT_EQ(Infer("bitwise_not", {T({n}, boolean)}), "error: bitwise_not: requires an integer tensor, got bool");
}

TEST(ElementwiseTest, Clip) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("clip", {T({n, 4}), T({}), T({})}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("clip", {T({4}), T({n, 1}), T({1})}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("clip", {T({n}), T({}, i32), T({})}), "error: clip: dtypes differ: min is int32, max is float32");
  EXPECT_EQ(Infer("clip", {T({n}, i32), T({}), T({})}),
            "error: clip: dtypes differ: x is int32, min/max is float32");
  EXPECT_EQ(Infer("clip", {T({n}, boolean), T({}, boolean), T({}, boolean)}),
            "error: clip: requires a numeric tensor, got bool");
  EXPECT_EQ(Infer("clip", {T({n}), T({n + 1}), T({})}),
            "error: clip: cannot broadcast dim 0 (n) against dim 0 (n + 1)");
}

TEST(ElementwiseTest, Where) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("where", {T({n, 1}, boolean), T({1, 4}), T({4})}), "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("where", {T({n}, f32), T({n}), T({n})}),
            "error: where: condition must be a bool tensor, got float32");
  EXPECT_EQ(Infer("where", {T({n}, boolean), T({n}, f32), T({n}, i64)}),
            "error: where: dtypes differ: x is float32, y is int64");
  EXPECT_EQ(Infer("where", {T({n + 1}, boolean), T({n}), T({n})}),
            "error: where: cannot broadcast dim 0 (n + 1) against dim 0 (n)");
}

}  // namespace
}  // namespace kiln::relax::testing
