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
  // Row-major and strided offsets (int32 indices cast to int64) in their canonical linear
  // form, constants folded; a 0-d buffer; contiguous vector accesses (ramp, broadcast +
  // ramp) become one ramp, a strided one a vector of offsets.
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
          t[0] = A[8 * cast(int64, i) + 39] + S[s * cast(int64, i) + 6]
          v[ramp(8, 1, 8)] = A[ramp(10, 1, 8)]
          v[broadcast(0, 4) * broadcast(8, 4) + ramp(0, 2, 4)] = A[(broadcast(0, 4) * broadcast(4, 4) + broadcast(1, 4)) * broadcast(8, 4) + ramp(0, 2, 4)]
        }
      }
    }
  }
})TIR"));
}

TEST(FlattenBuffersTest, RowsOfAnUnrolledTileDifferByConstants) {
  // The accumulator of a register tile six rows tall, its row loop unrolled (by LLVM): in
  // the nested form (6 * i + r) * 256 + j LLVM folded each row's offset differently and
  // could not prove the rows apart; as 1536 * i + 256 * r + j each row is one constant more.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(h: handle, n: int64) {
  decl_buffer A: Buffer((n,), float32) = h {
    allocate acc: Buffer((48, 256), float32, scope="local") {
      for i in serial(0, 8) {
        for r in unroll(0, 6) {
          for j in serial(0, 256) {
            acc[6 * i + r, j] = acc[6 * i + r, j] + A[j]
          }
        }
      }
    }
  }
})TIR");
  EXPECT_EQ(Print(FlattenBuffers(f)), Canonical(R"TIR(
prim_func @f(h: handle, n: int64) {
  decl_buffer A: Buffer((n,), float32) = h {
    allocate acc: Buffer((12288,), float32, scope="local") {
      for i in serial(0, 8) {
        for r in unroll(0, 6) {
          for j in serial(0, 256) {
            acc[1536 * i + j + 256 * r] = acc[1536 * i + j + 256 * r] + A[j]
          }
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
