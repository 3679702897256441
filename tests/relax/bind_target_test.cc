// BindTarget and the schedule pass reading each PrimFunc's target.
#include "relax/transform/bind_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/schedule_prim_funcs.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;

IRModule Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed->module;
}

const char* kTwoKernels = R"(module {
  prim_func @scale(A: Buffer((n, 64), float32), B: Buffer((n, 64), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 64) {
        block "B" {
          vi = spatial(n, i)
          vj = spatial(64, j)
          B[vi, vj] = A[vi, vj] * 2.0
        }
      }
    }
  }
  prim_func @own(A: Buffer((n, 64), float32), B: Buffer((n, 64), float32)) {
    attr target = "cpu -mcpu=x86-64 -vector-bits=128 -num-threads=1"
    for i in serial(0, n) {
      for j in serial(0, 64) {
        block "B" {
          vi = spatial(n, i)
          vj = spatial(64, j)
          B[vi, vj] = A[vi, vj] * 2.0
        }
      }
    }
  }
})";

TEST(BindTargetTest, PrimFuncsWithoutATargetGetTheModulesOne) {
  tir::Target avx512 = tir::Target::Cpu("skylake-avx512", 512, 4);
  absl::StatusOr<IRModule> bound = BindTarget(Parse(kTwoKernels), avx512);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ((*bound->Find("scale")->prim_func())->attrs.at("target"), avx512.ToString());
  EXPECT_EQ((*bound->Find("own")->prim_func())->attrs.at("target"), "cpu -mcpu=x86-64 -vector-bits=128 -num-threads=1");

  // The schedule follows each function's target: 16 lanes and parallel loops for the one,
  // 4 lanes and no parallel loop for the other.
  absl::StatusOr<IRModule> scheduled = SchedulePrimFuncs(*bound, tir::Target::Cpu());
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  std::string scale = PrintPrimFunc(*scheduled->Find("scale")->prim_func(), "scale");
  std::string own = PrintPrimFunc(*scheduled->Find("own")->prim_func(), "own");
  EXPECT_THAT(scale, HasSubstr("in vectorized(0, 16)"));
  EXPECT_THAT(scale, HasSubstr("in parallel("));
  EXPECT_THAT(own, HasSubstr("in vectorized(0, 4)"));
  EXPECT_THAT(own, testing::Not(HasSubstr("in parallel(")));
}

TEST(BindTargetTest, BadOrUnsupportedTargetsAreErrors) {
  IRModule bad = Parse(R"(module {
  prim_func @k(A: Buffer((4,), float32)) {
    attr target = "cpu -vector-bits=7"
    A[0] = 1.0
  }
})");
  absl::StatusOr<IRModule> bound = BindTarget(bad, tir::Target::Cpu());
  ASSERT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(), HasSubstr("PrimFunc 'k': attribute \"target\": invalid target"));
  // cuda and vulkan share the GPU rules (tir/schedule_rules/gpu_schedule.h).
  for (const tir::Target& target : {tir::Target::Cuda(), tir::Target::Vulkan()}) {
    absl::StatusOr<IRModule> gpu = BindTarget(Parse(kTwoKernels), target);
    ASSERT_TRUE(gpu.ok());
    absl::StatusOr<IRModule> scheduled = SchedulePrimFuncs(*gpu, tir::Target::Cpu());
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    EXPECT_THAT(PrintPrimFunc(*scheduled->Find("scale")->prim_func(), "scale"), HasSubstr("threadIdx.x"));
  }
}

}  // namespace
}  // namespace kiln::relax
