// Scalar PrimExpr evaluation: floor semantics, wrapping, casts, intrinsics, errors.
#include "tests/reference/prim_eval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln::reference {
namespace {

using tir::PrimExpr;

int64_t EvalInt(const PrimExpr& e, const SymbolEnv& env = {}) {
  auto r = EvalPrimExpr(e, env);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->int_value : -999;
}

double EvalFloat(const PrimExpr& e) {
  auto r = EvalPrimExpr(e, {});
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->float_value : NAN;
}

TEST(PrimEvalTest, FloorDivisionAndModulo) {
  EXPECT_EQ(EvalInt(tir::FloorDiv(-7, 2)), -4);
  EXPECT_EQ(EvalInt(tir::FloorMod(-7, 2)), 1);
  EXPECT_EQ(EvalInt(tir::FloorDiv(7, -2)), -4);
  EXPECT_EQ(EvalInt(tir::FloorMod(7, -2)), -1);
  EXPECT_EQ(EvalInt(tir::FloorDiv(6, 3)), 2);
  EXPECT_EQ(EvalInt(tir::Div(-7, 2)), -3);  // integer Div truncates
  EXPECT_EQ(EvalInt(tir::Min(3, -1)), -1);
  EXPECT_EQ(EvalInt(tir::Max(3, -1)), 3);
}

TEST(PrimEvalTest, VariablesAndLogic) {
  tir::Var n = tir::Var::Shape("n"), m = tir::Var::Shape("m");
  SymbolEnv env{{n.get(), PrimScalar{DataType::Int64(), 5, 0}}, {m.get(), PrimScalar{DataType::Int64(), 2, 0}}};
  EXPECT_EQ(EvalInt(n * m + 1, env), 11);
  EXPECT_EQ(EvalInt(tir::Or(tir::LT(n, m), tir::GE(m, 2)), env), 1);
  EXPECT_EQ(EvalInt(tir::Not(tir::EQ(n, 5)), env), 0);
  EXPECT_EQ(EvalInt(tir::Select(tir::GT(n, m), n, m), env), 5);
  auto unbound = EvalPrimExpr(n + tir::Var::Shape("k"), env);
  ASSERT_FALSE(unbound.ok());
  EXPECT_NE(std::string(unbound.status().message()).find("'k' is not defined"), std::string::npos);
}

TEST(PrimEvalTest, DTypesAndCasts) {
  DataType i32 = DataType::Int32(), f32 = DataType::Float32();
  EXPECT_EQ(EvalInt(tir::Add(tir::IntImm(i32, 2147483647), tir::IntImm(i32, 1))), -2147483648LL);
  EXPECT_EQ(EvalInt(tir::Cast(DataType::Int(8), tir::IntImm(i32, 300))), 44);
  EXPECT_EQ(EvalInt(tir::Cast(i32, tir::FloatImm(f32, -2.75))), -2);
  EXPECT_EQ(EvalFloat(tir::FloatImm(f32, 0.1)), static_cast<double>(0.1f));
  EXPECT_EQ(EvalFloat(tir::Div(tir::FloatImm(DataType::Float(64), 1), tir::FloatImm(DataType::Float(64), 4))), 0.25);
  EXPECT_NEAR(EvalFloat(tir::Call("exp", {tir::FloatImm(DataType::Float(64), 1)})), 2.718281828459045, 1e-15);
  EXPECT_NEAR(EvalFloat(tir::Call("erf", {tir::FloatImm(DataType::Float(64), 0.5)})), 0.5204998778130465, 1e-15);
}

TEST(PrimEvalTest, DivisionByZeroIsAnError) {
  auto r = EvalPrimExpr(tir::FloorDiv(1, 0), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::reference
