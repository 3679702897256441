// The operator harness for the cuda target: every case of tests/codegen/op_cases.h is
// compiled through the whole pipeline for `cuda` (GPU schedule rules, TIR lowering, the CUDA
// C emitter, NVRTC to PTX and cubin for sm_80 and sm_90, the host parts into the CPU object)
// and the executable is loaded back. Where a CUDA GPU is present the same executables run
// on it, for every size of the case, against the independent reference evaluator; elsewhere
// that test is skipped, saying why. Cases whose operators the CUDA path does not support yet
// are skipped with the compiler's reason (docs/codegen.md lists them).
//
// KILN_CUDA_BUNDLE_DIR=DIR makes CudaGpuBundle write every compiled case with its inputs
// and the reference's outputs (.npy) and a manifest, for scripts/gpu_check.sh to run on a
// GPU machine without the compiler (tests/gpu_check/gpu_op_check.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "codegen/nvrtc_compiler.h"
#include "formats/npy.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "support/status_macros.h"
#include "tests/codegen/gpu_bundle.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/op_cases.h"
#include "tests/codegen/op_check.h"
#include "tests/reference/reference_evaluator.h"
#include "vm/cuda_device.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::op_cases {

namespace {

using reference::HostTensor;
using reference::RefValue;

// Errors that mean "not supported on cuda yet" (documented gaps), as opposed to bugs.
bool IsUnsupported(const absl::Status& s) { return IsUnsupportedOnGpu(s, "CUDA"); }

absl::StatusOr<std::string> CompileForCuda(const std::string& text) {
  return CompileForGpu(text, tir::Target::Cuda());
}

const GpuCompiled& Compiled(const Case& c) {
  return CompiledForGpu(c, tir::Target::Cuda());
}

class CudaOpHarnessTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaOpHarnessTest, CompilesWithNvrtcForSm80AndSm90) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok())
    GTEST_SKIP() << nvrtc.message();
  const Case& c = GetParam();
  const GpuCompiled& compiled = Compiled(c);
  if (IsUnsupported(compiled.status)) GTEST_SKIP() << "not supported on cuda yet: " << compiled.status.message();
  ASSERT_TRUE(compiled.status.ok()) << compiled.status << "\n" << ModuleText(c);
  const std::vector<vm::DeviceCode>& code = compiled.exe->contents().device_code;
  if (compiled.exe->contents().kernels.empty()) {
    // Folded to a constant at compile time: nothing runs on the GPU.
    EXPECT_TRUE(code.empty());
    return;
  }
  ASSERT_EQ(code.size(), 1u);
  EXPECT_EQ(code[0].kind, "cuda");
  ASSERT_FALSE(code[0].kernels.empty());
  std::map<std::string, int> formats;
  for (const vm::DeviceBinary& b : code[0].binaries) {
    formats[b.format + " " + b.arch]++;
    EXPECT_FALSE(b.bytes.empty());
    if (b.format == "ptx") {
      for (const vm::DeviceKernelInfo& k : code[0].kernels) {
        EXPECT_THAT(b.bytes, ::testing::HasSubstr(absl::StrCat(".entry ", k.name))) << b.arch;
      }
    }
  }
  EXPECT_EQ(formats, (std::map<std::string, int>{{"cubin sm_80", 1}, {"cubin sm_90", 1}, {"ptx sm_80", 1},
                                                 {"ptx sm_90", 1}}));
}

TEST_P(CudaOpHarnessTest, RunsOnTheGpuAndMatchesTheReference) {
  absl::StatusOr<vm::Device*> gpu = vm::GetDevice("cuda:0");
  if (!gpu.ok()) GTEST_SKIP() << "no GPU here: " << gpu.status().message();
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  const Case& c = GetParam();
  const GpuCompiled& compiled = Compiled(c);
  if (IsUnsupported(compiled.status)) GTEST_SKIP() << "not supported on cuda yet: " << compiled.status.message();
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  absl::Status run = RunAgainstReferenceOn(c, compiled.exe, *gpu);
  EXPECT_TRUE(run.ok()) << run;
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaOpHarnessTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Cases one function of which is fine on cuda, to check the runtime's behaviour.
const char kAddModule[] = R"(module {
  func @main(x: Tensor((n,), float32), y: Tensor((n,), float32)) -> Tensor((n,), float32) {
    z = R.add(x, y)
    return z
  }
})";

TEST(CudaRuntimeTest, WithoutADriverTheDeviceIsOneClearLine) {
  if (vm::CudaDriverAvailable().ok()) GTEST_SKIP() << "a CUDA driver is present here";
  absl::StatusOr<vm::Device*> gpu = vm::GetDevice("cuda:0");
  ASSERT_FALSE(gpu.ok());
  const std::string message(gpu.status().message());
  EXPECT_THAT(message, ::testing::HasSubstr("no CUDA driver found (libcuda.so.1)"));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(CudaRuntimeTest, ACudaExecutableWithoutAGpuFailsClearly) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  absl::StatusOr<std::string> bytes = CompileForCuda(kAddModule);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  // On the CPU the host part refuses to launch, naming the kernel; nothing crashes.
  vm::VirtualMachine cpu(*exe);
  vm::Tensor x = *vm::Tensor::Empty({3}, DLDataType{kDLFloat, 32, 1});
  absl::StatusOr<vm::Value> result = cpu.Invoke("main", {vm::Value(x), vm::Value(x)});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), ::testing::AnyOf(::testing::HasSubstr("cannot launch device kernels"),
                                                         ::testing::HasSubstr("expected a tensor in CUDA memory")));
  if (vm::CudaDriverAvailable().ok()) return;
  absl::StatusOr<vm::Device*> gpu = vm::GetDevice("cuda");
  ASSERT_FALSE(gpu.ok());
  EXPECT_THAT(gpu.status().message(), ::testing::HasSubstr("no CUDA driver found (libcuda.so.1)"));
}

TEST(CudaRuntimeTest, TheDeviceCodeSectionRoundTrips) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  absl::StatusOr<std::string> bytes = CompileForCuda(kAddModule);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  const vm::DeviceCode& code = (*exe)->contents().device_code.at(0);
  // The int64 kernel and its int32 variant (the symbolic size has no bound: the host picks).
  ASSERT_EQ(code.kernels.size(), 2u);
  EXPECT_EQ(code.kernels[0].name, "add_kernel_device0");
  EXPECT_EQ(code.kernels[1].name, "add_kernel_device1");
  EXPECT_THAT(code.source, ::testing::HasSubstr("extern \"C\" __global__ void"));
  // The device picks the cubin of its own architecture, else the newest PTX not above it.
  EXPECT_EQ(code.binaries[*vm::ChooseBinary(code, 9, 0)].format, "cubin");
  EXPECT_EQ(code.binaries[*vm::ChooseBinary(code, 8, 6)].format, "ptx");
  EXPECT_EQ(code.binaries[*vm::ChooseBinary(code, 8, 6)].arch, "sm_80");
  EXPECT_EQ(code.binaries[*vm::ChooseBinary(code, 12, 0)].arch, "sm_90");
  EXPECT_FALSE(vm::ChooseBinary(code, 7, 5).has_value());
}

TEST(CudaGpuBundle, WritesCompiledCasesForTheGpuCheck) {
  const char* dir = std::getenv("KILN_CUDA_BUNDLE_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "set KILN_CUDA_BUNDLE_DIR to write the GPU check bundle";
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  WriteGpuBundle(dir, AllCases(), Compiled);
}

}  // namespace
}  // namespace kiln::op_cases
