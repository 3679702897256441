// The operator harness for the vulkan target: every case of tests/codegen/op_cases.h is
// compiled through the whole pipeline for `vulkan` (GPU schedule rules, TIR lowering, the
// SPIR-V emitter, the host parts into the CPU object), the executable is loaded back, and
// its SPIR-V module passes `spirv-val --target-env vulkan1.1` (Debian's spirv-tools, an
// independent validator). Where a Vulkan device is present (lavapipe on the CI machines)
// every case also runs through the VM on it (vm/vulkan_device.h) at every size against the
// reference evaluator. Cases whose operators the Vulkan path does not support yet are skipped
// with the compiler's reason (docs/codegen.md lists them).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "support/status_macros.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/op_cases.h"
#include "tests/codegen/op_check.h"
#include "tests/codegen/spirv_tools.h"
#include "vm/device.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

namespace kiln::op_cases {

namespace {

// Errors that mean "not supported on vulkan yet" (documented gaps), as opposed to bugs.
bool IsUnsupported(const absl::Status& s) { return IsUnsupportedOnGpu(s, "SPIR-V"); }

absl::StatusOr<std::string> CompileForVulkan(const std::string& text) {
  return CompileForGpu(text, tir::Target::Vulkan());
}

// `text` compiled for vulkan and loaded: the executable (its device code is at
// contents().device_code[0]).
absl::StatusOr<std::shared_ptr<const vm::Executable>> LoadForVulkan(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, CompileForVulkan(text));
  return vm::Executable::Load(bytes, builtins::DefaultRegistry());
}

const GpuCompiled& Compiled(const Case& c) {
  return CompiledForGpu(c, tir::Target::Vulkan());
}

class VulkanOpHarnessTest : public ::testing::TestWithParam<Case> {};

TEST_P(VulkanOpHarnessTest, CompilesToSpirvThatSpirvValAccepts) {
  if (!HaveSpirvTools()) GTEST_SKIP() << "spirv-val / spirv-dis not found (Debian spirv-tools, scripts/setup.sh)";
  const Case& c = GetParam();
  const GpuCompiled& compiled = Compiled(c);
  if (IsUnsupported(compiled.status)) GTEST_SKIP() << "not supported on vulkan yet: " << compiled.status.message();
  ASSERT_TRUE(compiled.status.ok()) << compiled.status << "\n" << ModuleText(c);
  const std::vector<vm::DeviceCode>& code = compiled.exe->contents().device_code;
  if (compiled.exe->contents().kernels.empty()) {
    // Folded to a constant at compile time: nothing runs on the GPU.
    EXPECT_TRUE(code.empty());
    return;
  }
  ASSERT_EQ(code.size(), 1u);
  EXPECT_EQ(code[0].kind, "vulkan");
  ASSERT_FALSE(code[0].kernels.empty());
  ASSERT_EQ(code[0].binaries.size(), 1u);
  EXPECT_EQ(code[0].binaries[0].format, "spirv");
  std::string disassembly;
  Tool val = Validate(c.name, code[0].binaries[0].bytes, &disassembly);
  EXPECT_EQ(val.exit_code, 0) << val.output << "\n" << disassembly;
  for (const vm::DeviceKernelInfo& k : code[0].kernels) {
    EXPECT_THAT(disassembly, ::testing::HasSubstr(absl::StrCat("OpEntryPoint GLCompute %", k.name, " \"", k.name, "\"")));
  }
}

TEST_P(VulkanOpHarnessTest, RunsOnVulkanAndMatchesTheReference) {
  absl::StatusOr<vm::Device*> device = vm::GetDevice("vulkan:0");
  if (!device.ok()) GTEST_SKIP() << "no Vulkan device here: " << device.status().message();
  const Case& c = GetParam();
  const GpuCompiled& compiled = Compiled(c);
  if (IsUnsupported(compiled.status)) GTEST_SKIP() << "not supported on vulkan yet: " << compiled.status.message();
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  absl::Status run = RunAgainstReferenceOn(c, compiled.exe, *device);
  EXPECT_TRUE(run.ok()) << run;
}

INSTANTIATE_TEST_SUITE_P(AllOps, VulkanOpHarnessTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The layout the runtime relies on (docs/codegen.md, "Vulkan"): handles are bindings 0, 1,
// ... of set 0; the scalars one push-constant block of 8-byte slots; LocalSize the threads.
TEST(VulkanKernelContractTest, BindingsPushConstantsAndWorkgroupSize) {
  if (!HaveSpirvTools()) GTEST_SKIP() << "spirv-val / spirv-dis not found (Debian spirv-tools, scripts/setup.sh)";
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = LoadForVulkan(R"(module {
  func @main(x: Tensor((n,), float16), c: Tensor((n,), bool)) -> Tensor((n,), float16) {
    z = R.where(c, x, R.negative(x))
    return z
  }
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  const vm::DeviceCode& code = (*exe)->contents().device_code.at(0);
  // negative, then where, each followed by its int32 variant (n has no bound: the host picks).
  ASSERT_EQ(code.kernels.size(), 4u);
  EXPECT_EQ(code.binaries[0].arch, "");
  EXPECT_EQ(code.source, "");
  const std::vector<std::string>& params = code.kernels[2].param_types;
  // where's kernel: its handles in order of first use (the output, c, x, -x), then n.
  EXPECT_EQ(params, (std::vector<std::string>{"handle", "handle", "handle", "handle", "int64"}));
  std::string dis;
  Tool val = Validate("contract", code.binaries[0].bytes, &dis);
  ASSERT_EQ(val.exit_code, 0) << val.output << dis;
  // The buffers keep the PrimFunc's names (out, A, B, C; the first kernel's get _0).
  for (const char* line : {
           "OpDecorate %out_0 DescriptorSet 0", "OpDecorate %out_0 Binding 0", "OpDecorate %A_0 Binding 1",
           "OpDecorate %B Binding 2", "OpDecorate %C Binding 3",
           // bool elements are bytes, float16 ones halves.
           "OpCapability StorageBuffer8BitAccess", "OpCapability StorageBuffer16BitAccess",
           "%_runtimearr_half = OpTypeRuntimeArray %half", "%_runtimearr_uchar = OpTypeRuntimeArray %uchar",
           // n: one int64 slot at offset 0 of the push-constant block.
           "%where_kernel_device0_scalars = OpTypeStruct %ulong",
           "OpMemberDecorate %where_kernel_device0_scalars 0 Offset 0",
           "OpTypePointer PushConstant %where_kernel_device0_scalars",
           "OpExecutionMode %where_kernel_device0 LocalSize 256 1 1"}) {
    EXPECT_TRUE(absl::StrContains(dis, line)) << line;
  }
  if (HasFailure()) ADD_FAILURE() << dis;
}

// narrow_gpu_indices (docs/codegen.md): with the batch bounded, the kernel's index arithmetic
// (the fused loop's floordiv / floormod by 3 included) is 32-bit: no 64-bit division,
// remainder or multiplication is left in the module.
TEST(VulkanIndexWidthTest, BoundedShapesGet32BitIndexArithmetic) {
  if (!HaveSpirvTools()) GTEST_SKIP() << "spirv-val / spirv-dis not found (Debian spirv-tools, scripts/setup.sh)";
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = LoadForVulkan(R"(module {
  func @main(x: Tensor((n, 3), float32), y: Tensor((3,), float32)) -> Tensor((n, 3), float32) where n <= 100000 {
    z = R.add(x, y)
    return z
  }
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  const vm::DeviceCode& code = (*exe)->contents().device_code.at(0);
  ASSERT_EQ(code.kernels.size(), 1u);  // bounded: no int64 fallback kernel
  std::string dis;
  Tool val = Validate("index_width", code.binaries[0].bytes, &dis);
  ASSERT_EQ(val.exit_code, 0) << val.output << dis;
  EXPECT_THAT(dis, ::testing::HasSubstr("OpSDiv %uint"));
  EXPECT_THAT(dis, ::testing::Not(::testing::ContainsRegex("Op(SDiv|UDiv|SRem|UMod|SMod|IMul) %ulong")));
}


// dynamic_strided_slice on the GPU (docs/ir.md, "Shapes known only at run time"): its
// begin / end / strides live in device memory; the stride check and the shape reach the
// host through builtins that copy them there, so a zero stride stops the call with the
// same message as on the CPU, and a valid slice runs (the harness checks its values).
TEST(VulkanDataDependentShapeTest, ZeroStrideStopsTheCallWithItsMessage) {
  absl::StatusOr<vm::Device*> device = vm::GetDevice("vulkan:0");
  if (!device.ok()) GTEST_SKIP() << "no Vulkan device here: " << device.status().message();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = LoadForVulkan(R"(module {
  func @main(x: Tensor((n,), float32), b: Tensor((1,), int64), e: Tensor((1,), int64), s: Tensor((1,), int64)) -> Object {
    r = R.dynamic_strided_slice(x, b, e, s)
    return r
  }
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> machine = vm::VirtualMachine::Create(*exe, *device);
  ASSERT_TRUE(machine.ok()) << machine.status();
  auto on_device = [&](std::vector<int64_t> shape, DLDataType dtype, const void* data, size_t bytes) {
    vm::Tensor host = *vm::Tensor::Empty(std::move(shape), dtype);
    std::memcpy(host.data(), data, bytes);
    absl::StatusOr<vm::Tensor> t = host.CopyTo(*device);
    EXPECT_TRUE(t.ok()) << t.status();
    return vm::Value(*t);
  };
  const float x[5] = {0, 1, 2, 3, 4};
  auto i64 = [&](int64_t v) { return on_device({1}, {kDLInt, 64, 1}, &v, sizeof v); };
  const vm::Value data = on_device({5}, {kDLFloat, 32, 1}, x, sizeof x);
  // x[-1 :: -2] = {4, 2, 0}
  absl::StatusOr<vm::Value> ok = (*machine)->Invoke("main", {data, i64(-1), i64(-100), i64(-2)});
  ASSERT_TRUE(ok.ok()) << ok.status();
  absl::StatusOr<vm::Tensor> result = ok->as_tensor().CopyTo(vm::CpuDevice());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->shape(), std::vector<int64_t>({3}));
  EXPECT_EQ(result->data_as<float>()[0], 4);
  EXPECT_EQ(result->data_as<float>()[2], 0);
  absl::StatusOr<vm::Value> zero = (*machine)->Invoke("main", {data, i64(0), i64(5), i64(0)});
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), ::testing::HasSubstr("dynamic_strided_slice: the stride of axis 0 (strides[0]) is 0"));
}

}  // namespace
}  // namespace kiln::op_cases
