#include <gtest/gtest.h>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

TEST(CallTirTest, ResultIsTheSinfoArg) {
  tir::Var n = tir::Var::Shape("n");
  Expr f = GlobalVar("add_kernel");
  Expr args = TupleOf({T({n, 4}), T({n, 4})});
  EXPECT_EQ(Infer("call_tir", {f, args}, {}, {TensorSInfo({n, 4}, f32)}),
            "Tensor((n, 4), float32)");
  EXPECT_EQ(Infer("call_tir", {f, args, ShapeExpr({n})}, {},
                  {TupleSInfo({TensorSInfo({n}, f32), TensorSInfo({n + 1}, i64)})}),
            "Tuple(Tensor((n,), float32), Tensor((n + 1,), int64))");
  EXPECT_EQ(Infer("call_tir", {f, args}),
            "error: call_tir: needs exactly one output struct info (sinfo_args), got 0");
  EXPECT_EQ(Infer("call_tir", {f, args}, {}, {ObjectSInfo()}),
            "error: call_tir: outputs must be Tensors, got Object");
  EXPECT_EQ(
      Infer("call_tir", {f, args}, {}, {TensorSInfoOfNdim(kUnknownNdim, f32)}),
      "error: call_tir: output Tensor(float32) must have a known ndim (the caller allocates it)");
  EXPECT_EQ(Infer("call_tir", {ExternFunc("k"), args}, {}, {TensorSInfo({n}, f32)}),
            "error: call_tir: argument 0 must be a GlobalVar (a PrimFunc)");
  EXPECT_EQ(Infer("call_tir", {f, T({n})}, {}, {TensorSInfo({n}, f32)}),
            "error: call_tir: argument 1 must be a Tuple of arguments, got Tensor((n,), float32)");
  EXPECT_EQ(Infer("call_tir", {f, args, T({n})}, {}, {TensorSInfo({n}, f32)}),
            "error: call_tir: tir_vars (argument 2) must be a Shape, got Tensor((n,), float32)");
}

TEST(CallDpsLibraryTest, ResultIsTheSinfoArg) {
  tir::Var n = tir::Var::Shape("n");
  Expr f = ExternFunc("kiln.gemm");
  EXPECT_EQ(Infer("call_dps_library", {f, TupleOf({T({n, 4}), T({4, 8})})}, {},
                  {TensorSInfo({n, 8}, f32)}),
            "Tensor((n, 8), float32)");
  EXPECT_EQ(Infer("call_dps_library", {GlobalVar("g"), TupleOf({})}, {}, {TensorSInfo({n}, f32)}),
            "error: call_dps_library: argument 0 must be an ExternFunc");
}

TEST(CallBuiltinTest, ImpureWithOptionalResult) {
  tir::Var n = tir::Var::Shape("n");
  Expr f = ExternFunc("vm.builtin.alloc_storage");
  EXPECT_EQ(Infer("call_builtin", {f, ShapeExpr({n}), PrimValue(int64_t{0})}), "Object");
  EXPECT_EQ(Infer("call_builtin", {f}, {}, {TensorSInfo({n}, f32)}), "Tensor((n,), float32)");
  EXPECT_EQ(Infer("call_builtin", {f}, {}, {ObjectSInfo(), ObjectSInfo()}),
            "error: call_builtin: takes at most one result struct info (sinfo_args), got 2");
  EXPECT_EQ(Infer("call_builtin", {T({n})}),
            "error: call_builtin: argument 0 must be an ExternFunc");
  EXPECT_FALSE(OpRegistry::Global().Find("call_builtin")->pure);
}

TEST(ShapeOfTest, ShapeOrNdim) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("shape_of", {T({n, n + 1})}), "Shape((n, n + 1))");
  EXPECT_EQ(Infer("shape_of", {TNdim(2)}), "Shape(ndim=2)");
  EXPECT_EQ(Infer("shape_of", {TNdim(kUnknownNdim)}), "Shape");
  EXPECT_EQ(Infer("shape_of", {ShapeExpr({n})}),
            "error: shape_of: data (argument 0) must be a Tensor, got Shape((n,))");
}

TEST(PrintTest, ImpureObject) {
  tir::Var n = tir::Var::Shape("n");
  EXPECT_EQ(Infer("print", {T({n})}, {{"format", std::string("x = {}")}}), "Object");
  EXPECT_EQ(Infer("print", {}), "Object");
  EXPECT_EQ(Infer("print", {T({n})}, {{"format", int64_t{1}}}),
            "error: print: attribute 'format' must be a string");
  EXPECT_EQ(Infer("print", {T({n}), T({n})}, {{"format", std::string("shapes:")}}), "Object");
  // A miscounted format printed "{}" itself, or tacked the extra value on at the end.
  EXPECT_EQ(Infer("print", {T({n})}, {{"format", std::string("{} and {}")}}),
            "error: print: format \"{} and {}\" has 2 {} for 1 value");
  EXPECT_EQ(Infer("print", {T({n}), T({n})}, {{"format", std::string("x = {}")}}),
            "error: print: format \"x = {}\" has 1 {} for 2 values");
  EXPECT_EQ(Infer("print", {}, {{"format", std::string("{}")}}), "error: print: format \"{}\" has 1 {} for 0 values");
  EXPECT_FALSE(OpRegistry::Global().Find("print")->pure);
}

}  // namespace
}  // namespace kiln::relax::testing
