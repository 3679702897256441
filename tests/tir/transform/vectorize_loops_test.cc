// VectorizeLoops, text in / text out.
#include "tir/transform/vectorize_loops.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

TEST(VectorizeLoopsTest, StraightLineBodiesBecomeSimd) {
  // The first loop vectorizes (a lane-invariant condition stays scalar); the second reads B
  // at another index than it writes, so it stays a loop.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((4, 8), float32), B: Buffer((8,), float32)) {
  for i in serial(0, 4) {
    for j in vectorized(0, 8) {
      if i < 3 {
        A[i, j] = exp(A[i, j]) * 2.0
      }
    }
  }
  for k in vectorized(0, 4) {
    B[k] = B[k + 1]
  }
})TIR");
  EXPECT_EQ(Print(VectorizeLoops(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((4, 8), float32), B: Buffer((8,), float32)) {
  for i in serial(0, 4) {
    if i < 3 {
      A[i, ramp(0, 1, 8)] = exp(A[i, ramp(0, 1, 8)]) * broadcast(2.0, 8)
    }
  }
  for k in vectorized(0, 4) {
    B[k] = B[k + 1]
  }
})TIR"));
}

}  // namespace
}  // namespace kiln::tir::transform
