// LowerPrimFunc: the passes run in the documented order and leave what the emitters expect.
#include "tir/transform/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"
#include "tir/transform/make_kernel_abi.h"

namespace kiln::tir::transform {
namespace {

using testing::ParseFunc;
using testing::Print;
using ::testing::HasSubstr;
using ::testing::Not;

const char* kAdd = R"TIR(
prim_func @f(A: Buffer((n, 8), float32), B: Buffer((n, 8), float32)) {
  for i in parallel(0, n) {
    for j in vectorized(0, 8) {
      block "B" {
        vi = spatial(n, i)
        vj = spatial(8, j)
        B[vi, vj] = exp(A[vi, vj])
      }
    }
  }
})TIR";

TEST(TirPipelineTest, PassesRunInOrder) {
  std::vector<std::string> seen;
  LowerOptions options;
  options.after_pass = [&](const std::string& pass, const PrimFunc&) { seen.push_back(pass); };
  absl::StatusOr<LoweredFunc> lowered = LowerPrimFunc(ParseFunc(kAdd), Target::Cpu("haswell", 256), options);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(seen, TirPassNames());
  EXPECT_TRUE(lowered->device_kernels.empty());
  std::string text = Print(lowered->host);
  EXPECT_THAT(text, HasSubstr("attr calling_conv = \"kernel_abi\""));
  EXPECT_THAT(text, HasSubstr("attr target = \"cpu -mcpu=haswell -vector-bits=256 -num-threads=2\""));
  EXPECT_THAT(text, Not(HasSubstr("block \"")));
  // Vectorized, flattened, and exp chosen for the CPU.
  EXPECT_THAT(text, HasSubstr("B[ramp(8 * i, 1, 8)] = fast_exp(A[ramp(8 * i, 1, 8)])"));
}

TEST(TirPipelineTest, GpuFunctionsSplit) {
  absl::StatusOr<LoweredFunc> lowered = LowerPrimFunc(ParseFunc(R"TIR(
prim_func @f(A: Buffer((n,), float32)) {
  attr target = "cuda"
  for tx in thread_binding(0, n, "threadIdx.x") {
    A[tx] = exp(A[tx])
  }
})TIR"),
                                                      Target::Cpu());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  // n has no upper bound: the int64 kernel, and its int32 variant launched when n fits
  // (narrow_gpu_indices).
  ASSERT_EQ(lowered->device_kernels.size(), 2u);
  EXPECT_THAT(Print(lowered->host), HasSubstr("evaluate launch_kernel(0, 1, 1, 1, n, 1, 1, 0, tensor_data(A_tensor), n)"));
  EXPECT_THAT(Print(lowered->host), HasSubstr("if n <= 2147483647 {"));
  EXPECT_THAT(Print(lowered->host), HasSubstr("evaluate launch_kernel(1, 1, 1, 1, n, 1, 1, 0, tensor_data(A_tensor), n)"));
  EXPECT_THAT(Print(lowered->device_kernels[0]), HasSubstr("A[tx] = exp(A[tx])"));
  EXPECT_THAT(Print(lowered->device_kernels[1]), HasSubstr("for tx in thread_binding(int32(0), n_i32, \"threadIdx.x\")"));
}

TEST(TirPipelineTest, ErrorsComeFromThePass) {
  absl::StatusOr<LoweredFunc> lowered = LowerPrimFunc(ParseFunc(R"TIR(
prim_func @f(A: Buffer((4,), float32)) {
  for tx in thread_binding(0, 4, "threadIdx.x") {
    A[tx] = 1.0
  }
})TIR"),
                                                      Target::Cpu());
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(lowered.status().message(), HasSubstr("loop tx is bound to the GPU thread index threadIdx.x"));
}

}  // namespace
}  // namespace kiln::tir::transform
