// FlattenBuffers, text in / text out.
#include "tir/transform/flatten_buffers.h"

#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

TEST(FlattenBuffersTest, RowMajorStridedVectorAndScalarAccesses) {
  // Row-major and strided offsets (int32 indices cast to int64); a 0-d buffer; contiguous
  // vector accesses (ramp, broadcast + ramp) become one ramp, a strided one a vector of
  // offsets.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(h: handle, g: handle, i: int32, n: int64, s: int64) {
  decl_buffer A: Buffer((n, 4, 8), float32) = h {
    decl_buffer S: Buffer((4, 4), float32, strides=(s, 2)) = g {
      allocate t: Buffer((), float32, scope="local") {
        allocate v: Buffer((2, 8), float32, scope="local") {
          t[] = A[1, i, 7] + S[i, 3]
          v[1, ramp(0, 1, 8)] = A[0, 1, broadcast(2, 8) + ramp(0, 1, 8)]
          v[0, ramp(0, 2, 4)] = A[0, 1, ramp(0, 2, 4)]
        }
      }
    }
  }
})TIR");
  EXPECT_EQ(Print(FlattenBuffers(f)), Canonical(R"TIR(
prim_func @f(h: handle, g: handle, i: int32, n: int64, s: int64) {
  decl_buffer A: Buffer((n * 4 * 8,), float32) = h {
    decl_buffer S: Buffer((1 + 3 * s + 6,), float32) = g {
      allocate t: Buffer((1,), float32, scope="local") {
        allocate v: Buffer((16,), float32, scope="local") {
          t[0] = A[(1 * 4 + cast(int64, i)) * 8 + 7] + S[cast(int64, i) * s + 3 * 2]
          v[ramp(1 * 8 + 0, 1, 8)] = A[ramp((0 * 4 + 1) * 8 + (2 + 0), 1, 8)]
          v[broadcast(0, 4) * broadcast(8, 4) + ramp(0, 2, 4)] = A[(broadcast(0, 4) * broadcast(4, 4) + broadcast(1, 4)) * broadcast(8, 4) + ramp(0, 2, 4)]
        }
      }
    }
  }
})TIR"));
}

TEST(FlattenBuffersTest, OneDimensionalInt64AccessesStay) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(h: handle, n: int64) {
  decl_buffer A: Buffer((n,), float32) = h {
    for i in serial(0, n) {
      A[i] = A[i] + 1.0
    }
  }
})TIR");
  EXPECT_TRUE(FlattenBuffers(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::transform
