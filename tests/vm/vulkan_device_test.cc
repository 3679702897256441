// The Vulkan device on whatever Vulkan driver the machine has (lavapipe in CI): memory and
// copies, and a kernel written here as SPIR-V assembly (assembled by spirv-as at test time)
// loaded and launched through Device::LoadModule / DeviceModule::Launch, the path the VM's
// ctx->launch takes, checked against the same sum computed on the host. Skipped, saying
// why, only where no Vulkan device is present.
#include "vm/vulkan_device.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/tensor.h"

namespace kiln::vm {
namespace {

using ::testing::HasSubstr;

// c[i] = a[i] + alpha * b[i] for i < n, one invocation per element, 64 per workgroup.
// Parameters per the kernel contract: a, b, c are handles (bindings 0, 1, 2); n (int64) and
// alpha (float32, passed as a double) are the two 8-byte push-constant slots.
constexpr char kAxpyAssembly[] = R"(
               OpCapability Shader
               OpCapability Int64
               OpCapability Float64
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "axpy" %gid
               OpExecutionMode %main LocalSize 64 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %floats ArrayStride 4
               OpMemberDecorate %Buffer 0 Offset 0
               OpDecorate %Buffer Block
               OpDecorate %a DescriptorSet 0
               OpDecorate %a Binding 0
               OpDecorate %b DescriptorSet 0
               OpDecorate %b Binding 1
               OpDecorate %c DescriptorSet 0
               OpDecorate %c Binding 2
               OpMemberDecorate %Push 0 Offset 0
               OpMemberDecorate %Push 1 Offset 8
               OpDecorate %Push Block
       %void = OpTypeVoid
     %fnvoid = OpTypeFunction %void
      %float = OpTypeFloat 32
     %double = OpTypeFloat 64
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
       %long = OpTypeInt 64 1
     %v3uint = OpTypeVector %uint 3
       %bool = OpTypeBool
     %floats = OpTypeRuntimeArray %float
     %Buffer = OpTypeStruct %floats
  %BufferPtr = OpTypePointer StorageBuffer %Buffer
   %FloatPtr = OpTypePointer StorageBuffer %float
       %Push = OpTypeStruct %long %double
    %PushPtr = OpTypePointer PushConstant %Push
    %LongPtr = OpTypePointer PushConstant %long
  %DoublePtr = OpTypePointer PushConstant %double
     %GidPtr = OpTypePointer Input %v3uint
    %UintPtr = OpTypePointer Input %uint
         %u0 = OpConstant %uint 0
         %u1 = OpConstant %uint 1
          %a = OpVariable %BufferPtr StorageBuffer
          %b = OpVariable %BufferPtr StorageBuffer
          %c = OpVariable %BufferPtr StorageBuffer
       %push = OpVariable %PushPtr PushConstant
        %gid = OpVariable %GidPtr Input
       %main = OpFunction %void None %fnvoid
      %entry = OpLabel
      %gxptr = OpAccessChain %UintPtr %gid %u0
         %gx = OpLoad %uint %gxptr
       %gx64 = OpUConvert %ulong %gx
        %gxs = OpBitcast %long %gx64
       %nptr = OpAccessChain %LongPtr %push %u0
          %n = OpLoad %long %nptr
     %inside = OpSLessThan %bool %gxs %n
               OpSelectionMerge %end None
               OpBranchConditional %inside %body %end
       %body = OpLabel
   %alphaptr = OpAccessChain %DoublePtr %push %u1
    %alpha64 = OpLoad %double %alphaptr
      %alpha = OpFConvert %float %alpha64
         %pa = OpAccessChain %FloatPtr %a %u0 %gx
         %pb = OpAccessChain %FloatPtr %b %u0 %gx
         %pc = OpAccessChain %FloatPtr %c %u0 %gx
         %va = OpLoad %float %pa
         %vb = OpLoad %float %pb
     %scaled = OpFMul %float %alpha %vb
        %sum = OpFAdd %float %va %scaled
               OpStore %pc %sum
               OpBranch %end
        %end = OpLabel
               OpReturn
               OpFunctionEnd
)";

// The module's words, assembled by spirv-as for Vulkan 1.1 (SPIR-V 1.3).
std::string Assemble(const std::string& text) {
  std::string dir = ::testing::TempDir();
  std::string base = absl::StrCat(dir, "/vulkan_device_test_", getpid());
  std::ofstream(base + ".spvasm") << text;
  std::string command = absl::StrCat("spirv-as --target-env vulkan1.1 -o ", base, ".spv ", base, ".spvasm 2>&1");
  int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << "spirv-as failed (Debian package spirv-tools; scripts/setup.sh installs it): " << command;
  std::ifstream in(base + ".spv", std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::remove((base + ".spv").c_str());
  std::remove((base + ".spvasm").c_str());
  return bytes.str();
}

DeviceCode AxpyCode(const std::string& kernel_name = "axpy") {
  DeviceCode code;
  code.kind = "vulkan";
  code.kernels.push_back({kernel_name, {"handle", "handle", "handle", "int64", "float32"}});
  code.binaries.push_back({"spirv", "", Assemble(kAxpyAssembly)});
  return code;
}

class VulkanDeviceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (absl::Status available = VulkanAvailable(); !available.ok()) {
      GTEST_SKIP() << "no Vulkan device here: " << available.message();
    }
    absl::StatusOr<std::unique_ptr<Device>> opened = OpenVulkanDevice(0, VulkanDeviceOptions{.force_staging = GetParam()});
    ASSERT_TRUE(opened.ok()) << opened.status();
    device_ = *std::move(opened);
  }

  // Device memory holding `values`.
  void* Upload(const std::vector<float>& values) {
    absl::StatusOr<void*> p = device_->Allocate(values.size() * sizeof(float), 64);
    EXPECT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(device_->CopyFromHost(*p, values.data(), values.size() * sizeof(float)).ok());
    return *p;
  }
  std::vector<float> Download(const void* p, size_t n) {
    std::vector<float> out(n);
    absl::Status s = device_->CopyToHost(out.data(), p, n * sizeof(float));
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  static KilnArg Handle(void* p) { return Arg(kKilnArgHandle, [&](KilnArg& a) { a.value.handle = p; }); }
  static KilnArg Int(int64_t v) { return Arg(kKilnArgInt, [&](KilnArg& a) { a.value.i64 = v; }); }
  static KilnArg Float(double v) { return Arg(kKilnArgFloat, [&](KilnArg& a) { a.value.f64 = v; }); }
  template <typename Set>
  static KilnArg Arg(int32_t type_code, Set set) {
    KilnArg a{};
    set(a);
    a.type_code = type_code;
    return a;
  }
  static KilnLaunchDims Dims(int64_t n) {
    KilnLaunchDims d{};
    d.grid[0] = static_cast<uint32_t>((n + 63) / 64);
    d.grid[1] = d.grid[2] = 1;
    d.block[0] = 64;
    d.block[1] = d.block[2] = 1;
    return d;
  }

  std::unique_ptr<Device> device_;
};

std::vector<float> Ramp(size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 1000) + shift;
  return v;
}

TEST_P(VulkanDeviceTest, CopiesRoundTripAtEverySize) {
  // Empty, one byte, primes (not a multiple of the 4-byte words buffers are made of) and
  // more than a MiB.
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{13}, size_t{1021}, size_t{(3 << 20) + 5}}) {
    std::string host(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<char>((i * 131 + 7) & 0xff);
    absl::StatusOr<void*> p = device_->Allocate(bytes, 64);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 64, 0u);
    ASSERT_TRUE(device_->CopyFromHost(*p, host.data(), bytes).ok());
    std::string back(bytes, 'x');
    ASSERT_TRUE(device_->CopyToHost(back.data(), *p, bytes).ok());
    EXPECT_EQ(back, host) << bytes << " bytes";
    if (bytes > 8) {
      // A copy into the middle of an allocation (a tensor placed inside a storage).
      ASSERT_TRUE(device_->CopyFromHost(static_cast<char*>(*p) + 3, "kiln", 4).ok());
      char middle[6] = {};
      ASSERT_TRUE(device_->CopyToHost(middle, static_cast<char*>(*p) + 2, 6).ok());
      EXPECT_EQ(std::string(middle, 6), std::string(1, host[2]) + "kiln" + std::string(1, host[7]));
    }
    device_->Free(*p, bytes);
  }
}

TEST_P(VulkanDeviceTest, CopyOutsideItsMemoryIsAnError) {
  absl::StatusOr<void*> p = device_->Allocate(16, 64);
  ASSERT_TRUE(p.ok());
  char host[32] = {};
  absl::Status past_end = device_->CopyToHost(host, static_cast<char*>(*p) + 8, 32);
  EXPECT_FALSE(past_end.ok());
  EXPECT_THAT(past_end.message(), HasSubstr("is not memory of vulkan:0"));
  EXPECT_FALSE(device_->CopyFromHost(host, host, 4).ok());
  device_->Free(*p, 16);
}

TEST_P(VulkanDeviceTest, AxpyMatchesTheHost) {
  absl::StatusOr<std::shared_ptr<DeviceModule>> module = device_->LoadModule(AxpyCode());
  ASSERT_TRUE(module.ok()) << module.status();
  for (int64_t n : {1, 7, 64, 1000, 100003}) {
    std::vector<float> a = Ramp(n, 0.5f, 1.0f), b = Ramp(n, -0.25f, 3.0f);
    void* da = Upload(a);
    void* db = Upload(b);
    void* dc = Upload(std::vector<float>(n, -1.0f));
    KilnArg args[] = {Handle(da), Handle(db), Handle(dc), Int(n), Float(2.5)};
    absl::Status launched = (*module)->Launch(0, Dims(n), args, 5, device_->stream());
    ASSERT_TRUE(launched.ok()) << launched;
    std::vector<float> c = Download(dc, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + 2.5f * b[i]) << "n=" << n << " i=" << i;
    for (void* p : {da, db, dc}) device_->Free(p, n * sizeof(float));
  }
}

TEST_P(VulkanDeviceTest, ChainedLaunchesSeeEachOthersResults) {
  absl::StatusOr<std::shared_ptr<DeviceModule>> module = device_->LoadModule(AxpyCode());
  ASSERT_TRUE(module.ok()) << module.status();
  const int64_t n = 4099;
  std::vector<float> a = Ramp(n, 1.0f, 0.0f), b = Ramp(n, 0.0f, 1.0f);
  void* da = Upload(a);
  void* db = Upload(b);
  void* dc = Upload(std::vector<float>(n, 0.0f));
  // c = a + b, then a = c + 2b, then c = a - b: queued together, each reads the last.
  KilnArg first[] = {Handle(da), Handle(db), Handle(dc), Int(n), Float(1.0)};
  KilnArg second[] = {Handle(dc), Handle(db), Handle(da), Int(n), Float(2.0)};
  KilnArg third[] = {Handle(da), Handle(db), Handle(dc), Int(n), Float(-1.0)};
  ASSERT_TRUE((*module)->Launch(0, Dims(n), first, 5, nullptr).ok());
  ASSERT_TRUE((*module)->Launch(0, Dims(n), second, 5, nullptr).ok());
  ASSERT_TRUE((*module)->Launch(0, Dims(n), third, 5, nullptr).ok());
  std::vector<float> c = Download(dc, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], ((a[i] + b[i]) + 2.0f * b[i]) - b[i]) << i;
  for (void* p : {da, db, dc}) device_->Free(p, n * sizeof(float));
}

TEST_P(VulkanDeviceTest, BuffersAtAnOffsetInsideAnAllocation) {
  absl::StatusOr<std::shared_ptr<DeviceModule>> module = device_->LoadModule(AxpyCode());
  ASSERT_TRUE(module.ok()) << module.status();
  // One storage holding a, b and c at 256-byte-aligned offsets, as memory planning places
  // tensors.
  const int64_t n = 37;
  absl::StatusOr<void*> storage = device_->Allocate(3 * 256, 64);
  ASSERT_TRUE(storage.ok());
  char* base = static_cast<char*>(*storage);
  std::vector<float> a = Ramp(n, 1.5f, 2.0f), b = Ramp(n, 3.0f, -1.0f);
  ASSERT_TRUE(device_->CopyFromHost(base, a.data(), n * 4).ok());
  ASSERT_TRUE(device_->CopyFromHost(base + 256, b.data(), n * 4).ok());
  KilnArg args[] = {Handle(base), Handle(base + 256), Handle(base + 512), Int(n), Float(0.5)};
  absl::Status launched = (*module)->Launch(0, Dims(n), args, 5, nullptr);
  ASSERT_TRUE(launched.ok()) << launched;
  std::vector<float> c = Download(base + 512, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + 0.5f * b[i]) << i;
  // An offset the device cannot bind a buffer at is refused, naming the kernel.
  KilnArg skewed[] = {Handle(base + 4), Handle(base + 256), Handle(base + 512), Int(n), Float(0.5)};
  absl::Status refused = (*module)->Launch(0, Dims(n), skewed, 5, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), HasSubstr("device kernel axpy: argument 0 starts 4 bytes into its buffer"));
  device_->Free(*storage, 3 * 256);
}

TEST_P(VulkanDeviceTest, LaunchErrorsNameTheKernel) {
  absl::StatusOr<std::shared_ptr<DeviceModule>> module = device_->LoadModule(AxpyCode());
  ASSERT_TRUE(module.ok()) << module.status();
  int host_array[4] = {};
  KilnArg not_device[] = {Handle(host_array), Handle(host_array), Handle(host_array), Int(4), Float(1)};
  absl::Status s = (*module)->Launch(0, Dims(4), not_device, 5, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("device kernel axpy: argument 0: address"));
  s = (*module)->Launch(0, Dims(4), not_device, 3, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("device kernel axpy: 3 arguments for 5 parameters"));
  s = (*module)->Launch(7, Dims(4), not_device, 5, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("device kernel 7 does not exist"));
  // Nothing to run: an empty grid is not launched at all.
  KilnLaunchDims empty = Dims(0);
  EXPECT_TRUE((*module)->Launch(0, empty, not_device, 5, nullptr).ok());
}

TEST_P(VulkanDeviceTest, AMissingEntryPointIsRefusedAtLoad) {
  absl::StatusOr<std::shared_ptr<DeviceModule>> module = device_->LoadModule(AxpyCode("saxpy"));
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("device kernel saxpy has no GLCompute entry point"));
}

TEST_P(VulkanDeviceTest, MalformedModulesAreRefusedAtLoad) {
  DeviceCode code = AxpyCode();
  code.binaries[0].bytes = "not spir-v at all";
  absl::StatusOr<std::shared_ptr<DeviceModule>> module = device_->LoadModule(code);
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("32-bit words"));
  code.binaries[0].bytes = std::string(20, '\x01');
  EXPECT_THAT(device_->LoadModule(code).status().message(), HasSubstr("not a SPIR-V module"));
  code = AxpyCode();
  // The last instruction (OpFunctionEnd, one word) claims five words.
  code.binaries[0].bytes[code.binaries[0].bytes.size() - 2] = 5;
  EXPECT_THAT(device_->LoadModule(code).status().message(), HasSubstr("bad word count"));
  code.binaries.clear();
  EXPECT_THAT(device_->LoadModule(code).status().message(), HasSubstr("no SPIR-V module"));
}

INSTANTIATE_TEST_SUITE_P(Memory, VulkanDeviceTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "StagingCopies" : "MappedMemory";
                         });

TEST(VulkanDeviceTableTest, TensorsMoveThroughTheDeviceTable) {
  if (absl::Status available = VulkanAvailable(); !available.ok()) {
    GTEST_SKIP() << "no Vulkan device here: " << available.message();
  }
  absl::StatusOr<Device*> device = GetDevice("vulkan");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)->name(), "vulkan:0");
  std::vector<float> values = Ramp(1031, 0.125f, -7.0f);
  Tensor host = Tensor::Empty({1031}, DLDataType{kDLFloat, 32, 1}, CpuDevice()).value();
  std::copy(values.begin(), values.end(), host.data_as<float>());
  absl::StatusOr<Tensor> on_device = host.CopyTo(*device);
  ASSERT_TRUE(on_device.ok()) << on_device.status();
  EXPECT_EQ(on_device->device().device_type, kDLVulkan);
  absl::StatusOr<Tensor> back = on_device->CopyTo(CpuDevice());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::vector<float>(back->data_as<float>(), back->data_as<float>() + 1031), values);

  absl::StatusOr<Device*> missing = GetDevice("vulkan:99");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("Vulkan device 99 not found: this machine has"));
}

}  // namespace
}  // namespace kiln::vm
