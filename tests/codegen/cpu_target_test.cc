#include "codegen/cpu_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "llvm/MC/MCSubtargetInfo.h"
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

// LLVM knows 32-bit x86 CPUs and aborts the process when asked for x86-64 code for one
// (`kiln compile --mcpu pentium` did): they are refused as names, and 64bit cannot be turned off.
TEST(CpuTargetTest, ThirtyTwoBitCpusAreRefused) {
  for (const char* name : {"pentium", "i386", "i686", "pentium4"}) {
    absl::StatusOr<CpuTarget> named = CpuTarget::Named(name);
    ASSERT_FALSE(named.ok()) << name;
    EXPECT_THAT(named.status().message(), HasSubstr("cannot run x86-64 code")) << name;
    EXPECT_FALSE(ResolveCpuTarget(tir::Target::Cpu(name)).ok()) << name;
  }
  absl::StatusOr<tir::Target> no64 = ResolveCpuTarget(*tir::Target::Parse("cpu -mcpu=haswell -mattr=-64bit"));
  ASSERT_FALSE(no64.ok());
  EXPECT_THAT(no64.status().message(), HasSubstr("the 64bit feature cannot be turned off"));
  EXPECT_TRUE(CpuTarget::Named("x86-64").ok());
  EXPECT_TRUE(CpuTarget::Named("nocona").ok());  // the first 64-bit Pentium 4 stays valid
}

TEST(CpuTargetTest, TargetMachineForANamedCpu) {
  absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
  ASSERT_TRUE(haswell.ok());
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> machine = CreateTargetMachine(*haswell);
  ASSERT_TRUE(machine.ok()) << machine.status();
  EXPECT_EQ((*machine)->getTargetCPU().str(), "haswell");
  EXPECT_EQ((*machine)->getTargetTriple().getArchName().str(), "x86_64");
}

// The host as a tir::Target names the CPU and only the features that differ from what the
// name implies, yet gives LLVM exactly the host's feature set.
TEST(CpuTargetTest, HostTargetIsShortAndExact) {
  tir::Target host = HostTarget(3);
  EXPECT_EQ(host.mcpu, CpuTarget::Host().mcpu);
  EXPECT_EQ(host.num_threads, 3);
  EXPECT_TRUE(host.vector_bits == 128 || host.vector_bits == 256 || host.vector_bits == 512) << host.vector_bits;
  EXPECT_EQ(host.Float32Lanes(), *Float32VectorLanes(CpuTarget::Host()));
  absl::StatusOr<CpuTarget> llvm_view = ToCpuTarget(host);
  ASSERT_TRUE(llvm_view.ok()) << llvm_view.status();
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> exact = CreateTargetMachine(CpuTarget::Host());
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> mapped = CreateTargetMachine(*llvm_view);
  ASSERT_TRUE(exact.ok() && mapped.ok());
  EXPECT_EQ((*exact)->getMCSubtargetInfo()->getFeatureBits(), (*mapped)->getMCSubtargetInfo()->getFeatureBits())
      << host.ToString();
  // Resolving "host" gives the same; resolving is idempotent.
  absl::StatusOr<tir::Target> resolved = ResolveCpuTarget(tir::Target::Cpu("host", 0, 3));
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, host);
  EXPECT_EQ(*ResolveCpuTarget(*resolved), host);
}

TEST(CpuTargetTest, ResolvingNamedTargets) {
  absl::StatusOr<tir::Target> skx = ResolveCpuTarget(*tir::Target::Parse("cpu -mcpu=skylake-avx512"));
  ASSERT_TRUE(skx.ok()) << skx.status();
  EXPECT_EQ(skx->vector_bits, 512);
  EXPECT_EQ(skx->ToString(), "cpu -mcpu=skylake-avx512 -vector-bits=512 -num-threads=2");
  absl::StatusOr<tir::Target> no512 = ResolveCpuTarget(*tir::Target::Parse("cpu -mcpu=skylake-avx512 -mattr=-avx512f"));
  ASSERT_TRUE(no512.ok()) << no512.status();
  EXPECT_EQ(no512->vector_bits, 256);
  EXPECT_EQ(ToCpuTarget(*no512)->features, "-avx512f");
  EXPECT_THAT(ResolveCpuTarget(*tir::Target::Parse("cpu -mcpu=pentium-9000")).status().message(),
              HasSubstr("unknown CPU 'pentium-9000'"));
  EXPECT_THAT(ResolveCpuTarget(*tir::Target::Parse("cpu -mcpu=haswell -mattr=+warp-drive")).status().message(),
              HasSubstr("unknown CPU feature 'warp-drive'"));
  EXPECT_THAT(ResolveCpuTarget(tir::Target::Cuda()).status().message(), HasSubstr("is not a cpu target"));
}

}  // namespace
}  // namespace kiln::codegen
