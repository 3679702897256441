// SplitHostDevice, text in / text out: thread-bound nests become device kernels launched by
// the host function; a CPU target refuses them.
#include "tir/transform/split_host_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;
using ::testing::HasSubstr;

// After make_kernel_abi and flatten_buffers: the tensors are declared on their data.
const char* kScale = R"TIR(
prim_func @f(a: handle, c: handle, n: int64, alpha: float32) {
  attr target = "cuda -arch=sm_90"
  decl_buffer A: Buffer((n,), float32) = a {
    decl_buffer C: Buffer((n,), float32) = c {
      for bx in thread_binding(0, floordiv(n + 127, 128), "blockIdx.x") {
        for tx in thread_binding(0, 128, "threadIdx.x") {
          if bx * 128 + tx < n {
            C[bx * 128 + tx] = A[bx * 128 + tx] * alpha
          }
        }
      }
      C[0] = 0.0
    }
  }
})TIR";

TEST(SplitHostDeviceTest, ThreadNestsBecomeDeviceKernels) {
  absl::StatusOr<SplitResult> split = SplitHostDevice(ParseFunc(kScale));
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(Print(split->host), Canonical(R"TIR(
prim_func @f(a: handle, c: handle, n: int64, alpha: float32) {
  attr target = "cuda -arch=sm_90"
  decl_buffer A: Buffer((n,), float32) = a {
    decl_buffer C: Buffer((n,), float32) = c {
      evaluate launch_kernel(0, floordiv(n + 127, 128), 1, 1, 128, 1, 1, 0, c, a, n, alpha)
      C[0] = 0.0
    }
  }
})TIR"));
  ASSERT_EQ(split->device_kernels.size(), 1u);
  EXPECT_EQ(Print(split->device_kernels[0]), Canonical(R"TIR(
prim_func @f(C_data: handle, A_data: handle, n: int64, alpha: float32) {
  attr calling_conv = "device_kernel"
  attr target = "cuda -arch=sm_90 -max-threads-per-block=1024 -max-shared-memory-per-block=49152 -warp-size=32"
  decl_buffer C: Buffer((n,), float32) = C_data {
    decl_buffer A: Buffer((n,), float32) = A_data {
      for bx in thread_binding(0, floordiv(n + 127, 128), "blockIdx.x") {
        for tx in thread_binding(0, 128, "threadIdx.x") {
          if bx * 128 + tx < n {
            C[bx * 128 + tx] = A[bx * 128 + tx] * alpha
          }
        }
      }
    }
  }
})TIR"));
}

TEST(SplitHostDeviceTest, CpuTargetsRefuseThreadBindings) {
  std::string text = kScale;
  text.replace(text.find("cuda -arch=sm_90"), 16, "cpu");
  absl::StatusOr<SplitResult> split = SplitHostDevice(ParseFunc(text));
  ASSERT_FALSE(split.ok());
  EXPECT_THAT(split.status().message(), HasSubstr("loop bx is bound to the GPU thread index blockIdx.x, which the CPU "
                                                  "target cannot run"));
  // Without thread bindings a CPU function comes back as it is.
  PrimFunc plain = ParseFunc("prim_func @f(A: Buffer((4,), float32)) {\n  A[0] = 1.0\n}");
  absl::StatusOr<SplitResult> same = SplitHostDevice(plain);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->host.same_as(plain));
  EXPECT_TRUE(same->device_kernels.empty());
}

TEST(SplitHostDeviceTest, LaunchDimensionsMustBeKnownBeforeTheLaunch) {
  absl::StatusOr<SplitResult> split = SplitHostDevice(ParseFunc(R"TIR(
prim_func @f(a: handle) {
  attr target = "vulkan"
  decl_buffer A: Buffer((64,), float32) = a {
    for bx in thread_binding(0, 4, "blockIdx.x") {
      for tx in thread_binding(0, bx + 1, "threadIdx.x") {
        A[bx * 16 + tx] = 1.0
      }
    }
  }
})TIR"));
  ASSERT_FALSE(split.ok());
  EXPECT_THAT(split.status().message(), HasSubstr("depends on bx, which is defined inside the kernel"));
}

}  // namespace
}  // namespace kiln::tir::transform
