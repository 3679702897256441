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

// Softmax's shape: one kernel writes each row's maximum into an intermediate the host part
// allocates, a later kernel reads it. The allocation stays in the host function (device
// workspace, allocated by its emitter on the GPU) and each kernel gets it as a buffer
// parameter like a tensor, its argument the workspace's address.
TEST(SplitHostDeviceTest, AHostAllocationIsDeviceWorkspaceForTheKernelsThatUseIt) {
  absl::StatusOr<SplitResult> split = SplitHostDevice(ParseFunc(R"TIR(
prim_func @f(a: handle, c: handle, n: int64) {
  attr target = "vulkan"
  decl_buffer A: Buffer((n * 8,), float32) = a {
    decl_buffer C: Buffer((n * 8,), float32) = c {
      allocate M: Buffer((n,), float32) {
        for bx in thread_binding(0, n, "blockIdx.x") {
          M[bx] = A[bx * 8]
        }
        for bx in thread_binding(0, n, "blockIdx.x") {
          for tx in thread_binding(0, 8, "threadIdx.x") {
            C[bx * 8 + tx] = A[bx * 8 + tx] - M[bx]
          }
        }
      }
    }
  }
})TIR"));
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(Print(split->host), Canonical(R"TIR(
prim_func @f(a: handle, c: handle, n: int64) {
  attr target = "vulkan"
  decl_buffer A: Buffer((n * 8,), float32) = a {
    decl_buffer C: Buffer((n * 8,), float32) = c {
      allocate M: Buffer((n,), float32) {
        evaluate launch_kernel(0, n, 1, 1, 1, 1, 1, 0, address_of(M[0]), a, n)
        evaluate launch_kernel(1, n, 1, 1, 8, 1, 1, 0, c, a, address_of(M[0]), n)
      }
    }
  }
})TIR"));
  ASSERT_EQ(split->device_kernels.size(), 2u);
  EXPECT_EQ(Print(split->device_kernels[1]), Canonical(R"TIR(
prim_func @f(C_data: handle, A_data: handle, M_data: handle, n: int64) {
  attr calling_conv = "device_kernel"
  attr target = "vulkan -max-threads-per-block=256 -max-shared-memory-per-block=16384 -warp-size=32"
  decl_buffer C: Buffer((n * 8,), float32) = C_data {
    decl_buffer A: Buffer((n * 8,), float32) = A_data {
      decl_buffer M: Buffer((n,), float32) = M_data {
        for bx in thread_binding(0, n, "blockIdx.x") {
          for tx in thread_binding(0, 8, "threadIdx.x") {
            C[bx * 8 + tx] = A[bx * 8 + tx] - M[bx]
          }
        }
      }
    }
  }
})TIR"));
}

// Shared and per-thread memory live inside one kernel; between kernels only device memory.
TEST(SplitHostDeviceTest, OnlyGlobalMemoryIsSharedBetweenKernels) {
  absl::StatusOr<SplitResult> split = SplitHostDevice(ParseFunc(R"TIR(
prim_func @f(a: handle) {
  attr target = "cuda"
  decl_buffer A: Buffer((64,), float32) = a {
    allocate T: Buffer((1,), float32, scope="local") {
      for bx in thread_binding(0, 64, "blockIdx.x") {
        T[0] = A[bx]
        A[bx] = T[0] + 1.0
      }
    }
  }
})TIR"));
  ASSERT_FALSE(split.ok());
  EXPECT_THAT(split.status().message(), HasSubstr("buffer T (scope \"local\") is allocated outside the GPU kernel that "
                                                  "uses it; only global memory can be device workspace"));
}

}  // namespace
}  // namespace kiln::tir::transform
