// NarrowGpuIndices / NarrowSplitIndices, text in / text out: int32 index arithmetic where the
// bounds prove it, int64 kept where they do not, and the host-checked int32 variant for an
// unbounded symbolic shape.
#include "tir/transform/narrow_gpu_indices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;
using ::testing::HasSubstr;
using ::testing::Not;

// A device kernel as split_host_device writes it: a fused (b, 256) nest.
std::string Kernel(const std::string& bound) {
  return R"TIR(
prim_func @f(out_data: handle, A_data: handle, b: int64) )TIR" +
         bound + R"TIR({
  attr calling_conv = "device_kernel"
  attr target = "vulkan"
  decl_buffer out: Buffer((b * 256,), float32) = out_data {
    decl_buffer A: Buffer((b * 256,), float32) = A_data {
      for i in thread_binding(0, floordiv(b * 256 + 255, 256), "blockIdx.x") {
        for j in thread_binding(0, 256, "threadIdx.x") {
          out[floordiv(i * 256 + j, 256) * 256 + floormod(i * 256 + j, 256)] = A[i * 256 + j] * 2.0
        }
      }
    }
  }
})TIR";
}

TEST(NarrowGpuIndicesTest, BoundedShapeGivesInt32Indices) {
  NarrowedKernel narrowed = NarrowGpuIndices(ParseFunc(Kernel("where b >= 0, b <= 4096 ")));
  EXPECT_TRUE(narrowed.all_loops_narrowed);
  EXPECT_EQ(Print(narrowed.kernel), Canonical(R"TIR(
prim_func @f(out_data: handle, A_data: handle, b: int64) where b >= 0, b <= 4096 {
  attr calling_conv = "device_kernel"
  attr target = "vulkan"
  let b_i32 = cast(int32, b) {
    decl_buffer out: Buffer((b * 256,), float32) = out_data {
      decl_buffer A: Buffer((b * 256,), float32) = A_data {
        for i in thread_binding(int32(0), floordiv(b_i32 * int32(256) + int32(255), int32(256)), "blockIdx.x") {
          for j in thread_binding(int32(0), int32(256), "threadIdx.x") {
            out[floordiv(i * int32(256) + j, int32(256)) * int32(256) + floormod(i * int32(256) + j, int32(256))] = A[i * int32(256) + j] * 2.0
          }
        }
      }
    }
  }
})TIR"));
}

TEST(NarrowGpuIndicesTest, UnboundedShapeKeepsInt64) {
  NarrowedKernel narrowed = NarrowGpuIndices(ParseFunc(Kernel("where b >= 0 ")));
  EXPECT_FALSE(narrowed.all_loops_narrowed);
  // The block loop (up to b) stays int64; the thread loop (256) is int32 either way.
  EXPECT_THAT(Print(narrowed.kernel), HasSubstr("for i in thread_binding(0, floordiv(b * 256 + 255, 256)"));
  EXPECT_THAT(Print(narrowed.kernel), HasSubstr("A[i * 256 + cast(int64, j)]"));
}

TEST(NarrowGpuIndicesTest, ABoundThatOverflowsInt32KeepsInt64) {
  // b * 256 reaches 2^31 at b = 2^23: b <= 2^24 is not enough.
  NarrowedKernel narrowed = NarrowGpuIndices(ParseFunc(Kernel("where b >= 0, b <= 16777216 ")));
  EXPECT_FALSE(narrowed.all_loops_narrowed);
  EXPECT_THAT(Print(narrowed.kernel), HasSubstr("for i in thread_binding(0, floordiv(cast(int64, b_i32) * 256 + 255, 256)"));
  EXPECT_THAT(Print(narrowed.kernel), HasSubstr("A[i * 256 + cast(int64, j)]"));
}

TEST(NarrowGpuIndicesTest, LoadedIndicesStayInt64) {
  // A gather: the index read from `idx` is unbounded, so its arithmetic stays 64-bit, while
  // the thread's own position is int32.
  NarrowedKernel narrowed = NarrowGpuIndices(ParseFunc(R"TIR(
prim_func @f(out_data: handle, src_data: handle, idx_data: handle, n: int64) where n >= 0, n <= 1000 {
  attr calling_conv = "device_kernel"
  attr target = "vulkan"
  decl_buffer out: Buffer((n,), float32) = out_data {
    decl_buffer src: Buffer((n,), float32) = src_data {
      decl_buffer idx: Buffer((n,), int64) = idx_data {
        for t in thread_binding(0, n, "threadIdx.x") {
          out[t] = src[idx[t] + cast(int64, t < 0) * n]
        }
      }
    }
  }
})TIR"));
  EXPECT_TRUE(narrowed.all_loops_narrowed);
  const std::string text = Print(narrowed.kernel);
  EXPECT_THAT(text, HasSubstr("out[t] = src[idx[t] + cast(int64, t < int32(0)) * cast(int64, n_i32)]"));
}

TEST(NarrowSplitIndicesTest, UnboundedShapeGetsAHostCheckedInt32Variant) {
  SplitResult split;
  split.host = ParseFunc(R"TIR(
prim_func @f(a: handle, o: handle, b: int64) where b >= 0 {
  attr target = "vulkan"
  evaluate launch_kernel(0, floordiv(b * 256 + 255, 256), 1, 1, 256, 1, 1, 0, o, a, b)
})TIR");
  split.device_kernels.push_back(ParseFunc(Kernel("where b >= 0 ")));
  NarrowSplitIndices(&split);
  ASSERT_EQ(split.device_kernels.size(), 2u);
  EXPECT_THAT(Print(split.device_kernels[0]), HasSubstr("for i in thread_binding(0, floordiv(b * 256 + 255, 256)"));
  EXPECT_THAT(Print(split.device_kernels[1]), HasSubstr("for i in thread_binding(int32(0), floordiv(b_i32 * int32(256)"));
  // The largest cap of the list under which b * 256 + 255 fits: 2^20.
  EXPECT_EQ(Print(split.host), Canonical(R"TIR(
prim_func @f(a: handle, o: handle, b: int64) where b >= 0 {
  attr target = "vulkan"
  if b <= 1048576 {
    evaluate launch_kernel(1, floordiv(b * 256 + 255, 256), 1, 1, 256, 1, 1, 0, o, a, b)
  } else {
    evaluate launch_kernel(0, floordiv(b * 256 + 255, 256), 1, 1, 256, 1, 1, 0, o, a, b)
  }
})TIR"));
}

}  // namespace
}  // namespace kiln::tir::transform
