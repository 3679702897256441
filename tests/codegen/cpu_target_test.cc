#include "codegen/cpu_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "llvm/Target/TargetMachine.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

TEST(CpuTargetTest, HostIsDetected) {
  CpuTarget host = CpuTarget::Host();
  EXPECT_FALSE(host.mcpu.empty());
  EXPECT_THAT(host.features, HasSubstr("sse2"));
  absl::StatusOr<CpuTarget> named = CpuTarget::Named("host");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->mcpu, host.mcpu);
}

TEST(CpuTargetTest, NamedCpusAndFlags) {
  absl::StatusOr<CpuTarget> haswell = CpuTarget::FromFlag("--mcpu=haswell");
  ASSERT_TRUE(haswell.ok()) << haswell.status();
  EXPECT_EQ(haswell->mcpu, "haswell");
  EXPECT_TRUE(haswell->features.empty());
  absl::StatusOr<CpuTarget> skx = CpuTarget::FromFlag("skylake-avx512");
  ASSERT_TRUE(skx.ok()) << skx.status();
  EXPECT_EQ(skx->mcpu, "skylake-avx512");
}

TEST(CpuTargetTest, UnknownCpuIsAClearError) {
  absl::StatusOr<CpuTarget> bogus = CpuTarget::FromFlag("--mcpu=pentium-9000");
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bogus.status().message(), HasSubstr("unknown CPU 'pentium-9000'"));
  EXPECT_FALSE(CpuTarget::Named("").ok());
}

TEST(CpuTargetTest, TargetMachineForANamedCpu) {
  absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
  ASSERT_TRUE(haswell.ok());
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> machine = CreateTargetMachine(*haswell);
  ASSERT_TRUE(machine.ok()) << machine.status();
  EXPECT_EQ((*machine)->getTargetCPU().str(), "haswell");
  EXPECT_EQ((*machine)->getTargetTriple().getArchName().str(), "x86_64");
}

}  // namespace
}  // namespace kiln::codegen
