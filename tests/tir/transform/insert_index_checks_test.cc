// InsertIndexChecks: indices that come from the data are checked against the buffer's
// extent before the access; indices made of loop and shape variables are left alone.
#include "tir/transform/insert_index_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using ::testing::HasSubstr;
using testing::ParseFunc;
using testing::Print;

TEST(InsertIndexChecksTest, GatherIndexIsCheckedAgainstTheExtent) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(D: Buffer((n, 4), float32), I: Buffer((m,), int64), O: Buffer((m, 4), float32)) {
  for i in serial(0, m) {
    for j in serial(0, 4) {
      O[i, j] = D[I[i], j]
    }
  }
})TIR");
  const std::string text = Print(InsertIndexChecks(f));
  EXPECT_THAT(text, HasSubstr("assert I[i] >= 0 && I[i] < n, \"index {} is out of range for dim 0 of 'D' (extent {})\""))
      << text;
  // The check precedes the access, inside the loops.
  EXPECT_LT(text.find("assert"), text.find("O[i, j] = D[I[i], j]")) << text;
}

TEST(InsertIndexChecksTest, ScatterIndexAndScalarParameterIndexAreChecked) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(I: Buffer((m,), int32), O: Buffer((8,), float32), k: int64) {
  for i in serial(0, m) {
    O[I[i]] = float32(1)
  }
  O[k] = float32(2)
})TIR");
  const std::string text = Print(InsertIndexChecks(f));
  EXPECT_THAT(text, HasSubstr("assert cast(int64, I[i]) >= 0 && cast(int64, I[i]) < 8, \"index {} is out of range for dim 0 of 'O' (extent {})\", cast(int64, I[i]), 8")) << text;
  EXPECT_THAT(text, HasSubstr("assert k >= 0 && k < 8")) << text;
}

TEST(InsertIndexChecksTest, LoopAndShapeIndicesAreNotChecked) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n * m,), float32)) {
  for fused in serial(0, n * m) {
    B[fused] = A[floordiv(fused, m), floormod(fused, m)]
  }
})TIR");
  EXPECT_TRUE(InsertIndexChecks(f).same_as(f));
}

TEST(InsertIndexChecksTest, AnIndexInASelectBranchIsCheckedOnlyWhenTaken) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(D: Buffer((4,), float32), I: Buffer((m,), int64), O: Buffer((m,), float32)) {
  for i in serial(0, m) {
    O[i] = select(I[i] >= 0, D[I[i]], float32(0))
  }
})TIR");
  const std::string text = Print(InsertIndexChecks(f));
  EXPECT_THAT(text, HasSubstr("assert !(I[i] >= 0) || I[i] >= 0 && I[i] < 4")) << text;
  // Both branches are evaluated: the index is made safe where the check does not apply.
  EXPECT_THAT(text, HasSubstr("D[select(I[i] >= 0 && I[i] < 4, I[i], 0)]")) << text;
}

}  // namespace
}  // namespace kiln::tir::transform
