// Target: the text form parses and prints back, errors name the bad field, and a PrimFunc
// carries its target as an attribute.
#include "tir/target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;

TEST(TargetTest, ParsesAndPrintsEveryKind) {
  absl::StatusOr<Target> cpu = Target::Parse("cpu -mcpu=znver3 -mattr=+avx512f,-avx512vl -vector-bits=512 -num-threads=4");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->kind, TargetKind::kCpu);
  EXPECT_EQ(cpu->mcpu, "znver3");
  EXPECT_EQ(cpu->features, (std::vector<std::string>{"+avx512f", "-avx512vl"}));
  EXPECT_EQ(cpu->vector_bits, 512);
  EXPECT_EQ(cpu->Float32Lanes(), 16);
  EXPECT_EQ(cpu->num_threads, 4);
  EXPECT_EQ(cpu->ToString(), "cpu -mcpu=znver3 -mattr=+avx512f,-avx512vl -vector-bits=512 -num-threads=4");

  absl::StatusOr<Target> cuda = Target::Parse("cuda -arch=sm_90");
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_TRUE(cuda->is_gpu());
  EXPECT_EQ(cuda->arch, "sm_90");
  EXPECT_EQ(cuda->max_threads_per_block, 1024);
  EXPECT_EQ(cuda->ToString(),
            "cuda -arch=sm_90 -max-threads-per-block=1024 -max-shared-memory-per-block=49152 -warp-size=32");

  absl::StatusOr<Target> vulkan = Target::Parse("vulkan -warp-size=64 -max-threads-per-block=512");
  ASSERT_TRUE(vulkan.ok()) << vulkan.status();
  EXPECT_EQ(vulkan->warp_size, 64);
  EXPECT_EQ(vulkan->ToString(), "vulkan -max-threads-per-block=512 -max-shared-memory-per-block=16384 -warp-size=64");

  // Defaults, and printing then parsing gives the same target.
  EXPECT_EQ(Target::Parse("cpu")->ToString(), "cpu -mcpu=host -num-threads=2");
  for (const Target& t : {*cpu, *cuda, *vulkan, Target::Cpu(), Target::Cuda(), Target::Vulkan()}) {
    absl::StatusOr<Target> again = Target::Parse(t.ToString());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, t) << t.ToString();
  }
}

TEST(TargetTest, ErrorsNameTheField) {
  auto error = [](const std::string& text) {
    absl::StatusOr<Target> t = Target::Parse(text);
    EXPECT_FALSE(t.ok()) << text;
    return t.ok() ? std::string() : std::string(t.status().message());
  };
  EXPECT_THAT(error("tpu"), HasSubstr("unknown target 'tpu'"));
  // TVM's target names are answered with Kiln's.
  EXPECT_EQ(error("llvm -mcpu=skylake"), "unknown target 'llvm' (the kinds are cpu, cuda and vulkan; for this CPU use 'cpu')");
  EXPECT_THAT(error("nvptx"), HasSubstr("for NVIDIA GPUs use 'cuda'"));
  EXPECT_THAT(error(""), HasSubstr("empty"));
  EXPECT_THAT(error("cpu -vector-bits=300"), HasSubstr("-vector-bits must be 128, 256 or 512, found '300'"));
  EXPECT_THAT(error("cpu -num-threads=0"), HasSubstr("-num-threads must be an integer in [1, 4096]"));
  EXPECT_THAT(error("cpu -arch=sm_90"), HasSubstr("-arch is not an attribute of a cpu target"));
  EXPECT_THAT(error("cuda -mcpu=znver3"), HasSubstr("-mcpu is not an attribute of a cuda target"));
  EXPECT_THAT(error("cpu -colour=blue"), HasSubstr("unknown attribute -colour"));
  EXPECT_THAT(error("cpu -mcpu=a -mcpu=b"), HasSubstr("-mcpu is given twice"));
  EXPECT_THAT(error("cpu mcpu=znver3"), HasSubstr("expected -name=value, found 'mcpu=znver3'"));
  EXPECT_THAT(error("cpu -mattr=avx2"), HasSubstr("each feature is +name or -name, found 'avx2'"));
  EXPECT_THAT(error("cuda -warp-size=x"), HasSubstr("-warp-size must be an integer"));
}

TEST(TargetTest, PrimFuncsCarryTheirTarget) {
  PrimFunc f({}, Evaluate(0), {{"op_pattern", "elementwise"}});
  absl::StatusOr<std::optional<Target>> none = TargetOf(f);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  PrimFunc g = WithTarget(f, Target::Cuda("sm_80"));
  EXPECT_EQ(g->attrs.at("op_pattern"), "elementwise");
  EXPECT_EQ(g->attrs.at(kTargetAttr), Target::Cuda("sm_80").ToString());
  absl::StatusOr<std::optional<Target>> cuda = TargetOf(g);
  ASSERT_TRUE(cuda.ok() && cuda->has_value());
  EXPECT_EQ(**cuda, Target::Cuda("sm_80"));
  PrimFunc bad({}, Evaluate(0), {{kTargetAttr, "cpu -vector-bits=7"}});
  EXPECT_THAT(TargetOf(bad).status().message(), HasSubstr("attribute \"target\": invalid target"));
}

}  // namespace
}  // namespace kiln::tir
