// InsertDivisionChecks, text in / text out: data-dependent integer divisors are checked,
// index arithmetic is left alone.
#include "tir/transform/insert_division_checks.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

TEST(InsertDivisionChecksTest, TensorDivisorGetsZeroAndOverflowChecks) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n,), int32), B: Buffer((n,), int32), C: Buffer((n,), int32)) {
  for i in serial(0, n) {
    C[i] = floordiv(A[i], B[i])
  }
})TIR");
  EXPECT_EQ(Print(InsertDivisionChecks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((n,), int32), B: Buffer((n,), int32), C: Buffer((n,), int32)) {
  for i in serial(0, n) {
    assert B[i] != int32(0), "division by zero in floordiv(A[i], B[i])"
    assert !(A[i] == int32(-2147483648) && B[i] == int32(-1)), "integer overflow in floordiv(A[i], B[i]): -2147483648 divided by -1"
    C[i] = floordiv(A[i], B[i])
  }
})TIR"));
}

TEST(InsertDivisionChecksTest, UnsignedAndScalarParameterDivisors) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n,), uint8), C: Buffer((n,), uint8), k: int64, d: uint8) {
  for i in serial(0, n) {
    C[i] = floormod(A[i], d) + cast(uint8, floordiv(i, k))
  }
})TIR");
  EXPECT_EQ(Print(InsertDivisionChecks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((n,), uint8), C: Buffer((n,), uint8), k: int64, d: uint8) {
  for i in serial(0, n) {
    assert d != uint8(0), "division by zero in floormod(A[i], d)"
    assert k != 0, "division by zero in floordiv(i, k)"
    C[i] = floormod(A[i], d) + cast(uint8, floordiv(i, k))
  }
})TIR"));
}

TEST(InsertDivisionChecksTest, IndexArithmeticAndSafeDivisorsAreNotChecked) {
  // Shape variables, loop variables and constants as divisors; a divisor whose bounds
  // exclude 0 and -1; a float division.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n, m), int32), B: Buffer((n * m,), int32), X: Buffer((4,), float32)) {
  for fused in serial(0, n * m) {
    B[fused] = floordiv(A[floordiv(fused, m), floormod(fused, m)], int32(3)) + floordiv(A[0, 0], max(A[0, 1], int32(1)))
  }
  X[0] = X[1] / X[2]
})TIR");
  EXPECT_TRUE(InsertDivisionChecks(f).same_as(f));
}

TEST(InsertDivisionChecksTest, LiteralMinusOneChecksOverflowOnly) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((4,), int32)) {
  A[0] = floordiv(A[1], int32(-1))
})TIR");
  EXPECT_EQ(Print(InsertDivisionChecks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((4,), int32)) {
  assert A[1] != int32(-2147483648), "integer overflow in floordiv(A[1], int32(-1)): -2147483648 divided by -1"
  A[0] = floordiv(A[1], int32(-1))
})TIR"));
}

TEST(InsertDivisionChecksTest, SelectBranchesAndLetsAreGuarded) {
  // The division only matters when the select takes it; the divisor is made safe because
  // both branches are evaluated. A let-bound divisor is re-bound inside the check.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((4,), int32), B: Buffer((4,), int32)) {
  A[0] = select(B[0] != int32(0), floordiv(A[1], B[0]), int32(0))
  A[1] = let d = B[1] * int32(2) in floormod(A[2], d)
})TIR");
  EXPECT_EQ(Print(InsertDivisionChecks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((4,), int32), B: Buffer((4,), int32)) {
  assert !(B[0] != int32(0)) || B[0] != int32(0), "division by zero in floordiv(A[1], B[0])"
  assert !(B[0] != int32(0)) || !(A[1] == int32(-2147483648) && B[0] == int32(-1)), "integer overflow in floordiv(A[1], B[0]): -2147483648 divided by -1"
  A[0] = select(B[0] != int32(0), floordiv(A[1], select(B[0] != int32(0) && !(A[1] == int32(-2147483648) && B[0] == int32(-1)), B[0], int32(1))), int32(0))
  assert let d = B[1] * int32(2) in d != int32(0), "division by zero in floormod(A[2], d)"
  assert let d_1 = B[1] * int32(2) in !(A[2] == int32(-2147483648) && d_1 == int32(-1)), "integer overflow in floormod(A[2], d): -2147483648 divided by -1"
  A[1] = let d_2 = B[1] * int32(2) in floormod(A[2], d_2)
})TIR"));
}

}  // namespace
}  // namespace kiln::tir::transform
