// LowerCooperativeCopies, text in / text out.
#include "tir/transform/lower_cooperative_copies.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

// A 2 x 3 thread block reading a 4 x 5 tile of A per step (s steps), as CacheReadShared leaves it:
// each thread copies the whole tile (guarded at A's rows) at the start of each step.
constexpr const char* kTile = R"TIR(
prim_func @f(A: Buffer((m, 5 * s), float32), B: Buffer((m, 3), float32), s: int64) {
  for bx in thread_binding(0, floordiv(m + 3, 4), "blockIdx.x") {
    for ty in thread_binding(0, 2, "threadIdx.y") {
      for tx in thread_binding(0, 3, "threadIdx.x") {
        allocate A_shared: Buffer((4, 5), float32, scope="shared") {
          for k in serial(0, s) {
            for ax0 in serial(0, 4) {
              for ax1 in serial(0, 5) {
                block "A_cache" {
                  v0 = spatial(m, bx * 4 + ax0)
                  v1 = spatial(5 * s, k * 5 + ax1)
                  where bx * 4 + ax0 < m
                  A_shared[ax0, ax1] = A[v0, v1]
                }
              }
            }
            B[bx * 4 + ty, tx] = B[bx * 4 + ty, tx] + A_shared[ty, tx]
          }
        }
      }
    }
  }
})TIR";

// 20 elements over 6 threads: 4 rounds, the last guarded; the digits of the element index
// replace the copy's loop variables; a barrier on each side of the copy, outside every guard.
TEST(LowerCooperativeCopiesTest, TheBlocksThreadsSplitTheCopyBetweenTwoBarriers) {
  absl::StatusOr<PrimFunc> lowered = LowerCooperativeCopies(ParseFunc(kTile));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Print(*lowered), Canonical(R"TIR(
prim_func @f(A: Buffer((m, 5 * s), float32), B: Buffer((m, 3), float32), s: int64) {
  for bx in thread_binding(0, floordiv(m + 3, 4), "blockIdx.x") {
    for ty in thread_binding(0, 2, "threadIdx.y") {
      for tx in thread_binding(0, 3, "threadIdx.x") {
        allocate A_shared: Buffer((4, 5), float32, scope="shared") {
          for k in serial(0, s) {
            evaluate storage_sync()
            for ax0_coop in unroll(0, 4) {
              block "A_cache" {
                v0 = spatial(m, 4 * bx + floordiv(6 * ax0_coop + tx + 3 * ty, 5))
                v1 = spatial(5 * s, 5 * k + floormod(6 * ax0_coop + tx + 3 * ty, 5))
                where ax0_coop * 6 + (ty * 3 + tx) < 20 && bx * 4 + floordiv(6 * ax0_coop + tx + 3 * ty, 5) < m
                A_shared[floordiv(6 * ax0_coop + tx + 3 * ty, 5), floormod(6 * ax0_coop + tx + 3 * ty, 5)] = A[v0, v1]
              }
            }
            evaluate storage_sync()
            B[bx * 4 + ty, tx] = B[bx * 4 + ty, tx] + A_shared[ty, tx]
          }
        }
      }
    }
  }
}
)TIR"));
}

TEST(LowerCooperativeCopiesTest, FunctionsWithoutSharedCopiesAreUnchanged) {
  // Outside every thread loop a copy into shared memory is left alone (the verifier refuses
  // the allocation there), as is a copy into local memory.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((8,), float32), B: Buffer((8,), float32)) {
  for t in thread_binding(0, 8, "threadIdx.x") {
    allocate L: Buffer((8,), float32, scope="local") {
      for a in serial(0, 8) {
        block "L_cache" {
          v = spatial(8, a)
          L[a] = A[v]
        }
      }
      B[t] = L[7 - t]
    }
  }
})TIR");
  absl::StatusOr<PrimFunc> lowered = LowerCooperativeCopies(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Print(*lowered), Print(f));
}

}  // namespace
}  // namespace kiln::tir::transform
