// LowerIntrinsics, text in / text out: the CPU's choices per float width; GPU targets keep
// the intrinsics.
#include "tir/transform/lower_intrinsics.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

const char* kMath = R"TIR(
prim_func @f(A: Buffer((8,), float32), H: Buffer((8,), float16), D: Buffer((8,), float64)) {
  A[ramp(0, 1, 8)] = exp(A[ramp(0, 1, 8)]) + sigmoid(A[ramp(0, 1, 8)])
  A[0] = rsqrt(A[1]) + sqrt(A[2])
  H[0] = tanh(H[1])
  D[0] = tanh(D[1]) + erf(D[2]) + exp(D[3]) + sigmoid(D[4])
})TIR";

TEST(LowerIntrinsicsTest, CpuChoosesPolynomialsLibmOrExpansions) {
  absl::StatusOr<PrimFunc> lowered = LowerIntrinsics(ParseFunc(kMath));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Print(*lowered), Canonical(R"TIR(
prim_func @f(A: Buffer((8,), float32), H: Buffer((8,), float16), D: Buffer((8,), float64)) {
  A[ramp(0, 1, 8)] = fast_exp(A[ramp(0, 1, 8)]) + fast_sigmoid(A[ramp(0, 1, 8)])
  A[0] = 1.0 / sqrt(A[1]) + sqrt(A[2])
  H[0] = cast(float16, fast_tanh(cast(float32, H[1])))
  D[0] = libm_tanh(D[1]) + libm_erf(D[2]) + exp(D[3]) + float64(1.0) / (float64(1.0) + exp(float64(0.0) - D[4]))
})TIR"));
}

TEST(LowerIntrinsicsTest, GpuTargetsKeepTheIntrinsics) {
  std::string text = kMath;
  text.insert(text.find('{') + 1, "\n  attr target = \"cuda\"");
  PrimFunc f = ParseFunc(text);
  absl::StatusOr<PrimFunc> lowered = LowerIntrinsics(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(lowered->same_as(f));
}

}  // namespace
}  // namespace kiln::tir::transform
