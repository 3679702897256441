// LowerCrossThreadReductions, text in / text out.
#include "tir/transform/lower_cross_thread_reduction.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

constexpr const char* kRowSum = R"TIR(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n,), float32)) {
  for i in thread_binding(0, n, "blockIdx.x") {
    OUTER {
      INNER {
        block "B" {
          vi = spatial(n, i)
          vr = reduce(m, r * 6 + t)
          where r * 6 + t < m
          init {
            B[vi] = 0.0
          }
          B[vi] = B[vi] + A[vi, vr]
        }
      }
    }
  }
})TIR";

// kRowSum with its two loops: `outer` around `inner` around the block.
PrimFunc RowSum(const std::string& outer, const std::string& inner) {
  std::string t = kRowSum;
  t.replace(t.find("OUTER"), 5, outer);
  t.replace(t.find("INNER"), 5, inner);
  return ParseFunc(t);
}
const char* const kSerial = "for r in serial(0, floordiv(m + 5, 6))";
const char* const kThreads = "for t in thread_binding(0, 6, \"threadIdx.x\")";

// Six threads per row (not a power of two: the two above four fold onto the first two
// before the halving steps); the predicate guards the row's tail, never a barrier.
TEST(LowerCrossThreadReductionTest, RowSumBecomesPartialsAndATreeInSharedMemory) {
  PrimFunc f = RowSum(kThreads, kSerial);
  absl::StatusOr<PrimFunc> lowered = LowerCrossThreadReductions(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Print(*lowered), Canonical(R"TIR(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n,), float32)) {
  for i in thread_binding(0, n, "blockIdx.x") {
    for t in thread_binding(0, 6, "threadIdx.x") {
      allocate B_partial: Buffer((1,), float32, scope="local") {
        allocate B_combine: Buffer((6,), float32, scope="shared") {
          B_partial[0] = 0.0
          for r in serial(0, floordiv(m + 5, 6)) {
            block "B" {
              vi = spatial(n, i)
              vr = reduce(m, r * 6 + t)
              where r * 6 + t < m
              B_partial[0] = B_partial[0] + A[vi, vr]
            }
          }
          B_combine[t] = B_partial[0]
          evaluate storage_sync()
          if t < 2 {
            B_combine[t] = B_combine[t] + B_combine[t + 4]
          }
          evaluate storage_sync()
          if t < 2 {
            B_combine[t] = B_combine[t] + B_combine[t + 2]
          }
          evaluate storage_sync()
          if t < 1 {
            B_combine[t] = B_combine[t] + B_combine[t + 1]
          }
          evaluate storage_sync()
          if t == 0 {
            B[i] = B_combine[0]
          }
        }
      }
    }
  }
}
)TIR"));
}

// The rule's order, the serial loop outside the thread loop (run serially, it sums the row
// in order): the thread loop moves outside, the same result as above.
TEST(LowerCrossThreadReductionTest, SerialLoopsAboveTheThreadLoopMoveInside) {

  absl::StatusOr<PrimFunc> thread_outside = LowerCrossThreadReductions(RowSum(kThreads, kSerial));
  absl::StatusOr<PrimFunc> serial_outside = LowerCrossThreadReductions(RowSum(kSerial, kThreads));
  ASSERT_TRUE(thread_outside.ok()) << thread_outside.status();
  ASSERT_TRUE(serial_outside.ok()) << serial_outside.status();
  EXPECT_EQ(Print(*serial_outside), Print(*thread_outside));
}

TEST(LowerCrossThreadReductionTest, FunctionsWithoutThreadBoundReductionsComeBackUnchanged) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((64,), float32)) {
  for t in thread_binding(0, 64, "threadIdx.x") {
    block "A" {
      v = spatial(64, t)
      A[v] = A[v] * 2.0
    }
  }
})TIR");
  absl::StatusOr<PrimFunc> lowered = LowerCrossThreadReductions(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Print(*lowered), Print(f));
}

}  // namespace
}  // namespace kiln::tir::transform
