// LowerBlocks, text in / text out.
#include "tir/transform/lower_blocks.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

TEST(LowerBlocksTest, ReductionWithPredicateInitAndAllocation) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n, 8), float32), B: Buffer((n,), float32)) {
  for i_0 in serial(0, floordiv(n + 3, 4)) {
    for i_1 in serial(0, 4) {
      for k in serial(0, 8) {
        block "sum" {
          vi = spatial(n, i_0 * 4 + i_1)
          vk: int32 = reduce(8, k)
          where i_0 * 4 + i_1 < n
          alloc t: Buffer((1,), float32, scope="local")
          init {
            B[vi] = 0.0
          }
          t[0] = A[vi, vk]
          B[vi] = B[vi] + t[0]
        }
      }
    }
  }
})TIR");
  EXPECT_EQ(Print(LowerBlocks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((n, 8), float32), B: Buffer((n,), float32)) {
  for i_0 in serial(0, floordiv(n + 3, 4)) {
    for i_1 in serial(0, 4) {
      for k in serial(0, 8) {
        if i_0 * 4 + i_1 < n {
          allocate t: Buffer((1,), float32, scope="local") {
            if cast(int32, k) == int32(0) {
              B[i_0 * 4 + i_1] = 0.0
            }
            t[0] = A[i_0 * 4 + i_1, cast(int32, k)]
            B[i_0 * 4 + i_1] = B[i_0 * 4 + i_1] + t[0]
          }
        }
      }
    }
  }
})TIR"));
}

TEST(LowerBlocksTest, DividingBindingsAreBoundBeforeThePredicate) {
  // vi divides and uses no vector lane: bound by a let outside the `if`, where LLVM may
  // hoist its division out of the loop over j. vj uses the vector lane j_1: it stays inline,
  // so the accesses stay contiguous in j_1.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n, 8), float32)) {
  for f in serial(0, n * 2) {
    for j_1 in vectorized(0, 4) {
      block "fill" {
        vi = spatial(n, floordiv(f, 2))
        vj = spatial(8, floormod(f, 2) * 4 + j_1)
        where floordiv(f, 2) < n
        A[vi, vj] = 1.0
      }
    }
  }
})TIR");
  EXPECT_EQ(Print(LowerBlocks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((n, 8), float32)) {
  for f in serial(0, n * 2) {
    for j_1 in vectorized(0, 4) {
      let vi = floordiv(f, 2) {
        if floordiv(f, 2) < n {
          A[vi, floormod(f, 2) * 4 + j_1] = 1.0
        }
      }
    }
  }
})TIR"));
}

TEST(LowerBlocksTest, InitWithoutReductionRunsAndNestedBlocksLower) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((4,), float32)) {
  for i in serial(0, 4) {
    block "outer" {
      vi = spatial(4, i)
      init {
        A[vi] = 1.0
      }
      block "inner" {
        vj = spatial(4, vi)
        A[vj] = A[vj] * 2.0
      }
    }
  }
})TIR");
  EXPECT_EQ(Print(LowerBlocks(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((4,), float32)) {
  for i in serial(0, 4) {
    A[i] = 1.0
    A[i] = A[i] * 2.0
  }
})TIR"));
}

TEST(LowerBlocksTest, WithoutBlocksNothingChanges) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((4,), float32)) {
  for i in serial(0, 4) {
    A[i] = 0.0
  }
})TIR");
  EXPECT_TRUE(LowerBlocks(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::transform
