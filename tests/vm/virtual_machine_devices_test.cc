// The VM's device table, proven with a device that is not the CPU: host memory presented
// as DLDevice {kDLExtDev, i} ("test_dev:i"), counting what is done on it.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "builtins/default_builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/executable_builder.h"
#include "vm/virtual_machine.h"

namespace kiln::vm {
namespace {

using ::testing::HasSubstr;

// The device's own clock for profiles: each timed call measures 1234 ns.
class TestTimer final : public DeviceTimer {
 public:
  explicit TestTimer(std::atomic<int>* marks) : marks_(marks) {}
  absl::Status Start() override {
    ++*marks_;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> StopNs() override {
    ++*marks_;
    return 1234;
  }

 private:
  std::atomic<int>* marks_;
};

class TestDevice final : public Device {
 public:
  explicit TestDevice(int index) : index_(index) {}
  DLDevice dl_device() const override { return {kDLExtDev, index_}; }
  std::string name() const override { return "test_dev:" + std::to_string(index_); }
  absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) override {
    ++allocations;
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (p == nullptr) return absl::ResourceExhaustedError("test device out of memory");
    return p;
  }
  void Free(void* ptr, size_t) override {
    ++frees;
    std::free(ptr);
  }
  absl::Status CopyToHost(void* host_dst, const void* src, size_t bytes) override {
    ++copies_to_host;
    std::memcpy(host_dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyFromHost(void* dst, const void* host_src, size_t bytes) override {
    ++copies_from_host;
    std::memcpy(dst, host_src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  void* stream() override { return &stream_marker; }
  absl::StatusOr<std::unique_ptr<DeviceTimer>> CreateTimer() override {
    return std::unique_ptr<DeviceTimer>(new TestTimer(&timer_marks));
  }

  std::atomic<int> allocations{0}, frees{0}, copies_to_host{0}, copies_from_host{0}, timer_marks{0};
  int stream_marker = 0;

 private:
  int index_;
};

TestDevice* TheTestDevice() {
  static TestDevice* device = [] {
    auto* d = new TestDevice(0);
    RegisterDeviceKind(kDLExtDev, "test_dev", [d](int index) -> absl::StatusOr<Device*> {
      if (index != 0) return absl::NotFoundError("only test_dev:0 exists");
      return d;
    });
    return d;
  }();
  return device;
}

// kernel (x, out): out = 2 * x through a workspace buffer, float32; checks that it runs
// with the test device and its stream in the call context.
int32_t DoubleOnDevice(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (ctx->device.device_type != kDLExtDev || ctx->stream != &TheTestDevice()->stream_marker) {
    ctx->set_error(ctx, "not called on the test device with its stream");
    return 1;
  }
  const DLTensor* x = args[0].value.tensor;
  const DLTensor* out = args[1].value.tensor;
  int64_t n = x->shape[0];
  auto* scratch = static_cast<float*>(ctx->workspace_alloc(ctx, static_cast<uint64_t>(n) * sizeof(float)));
  if (scratch == nullptr) {
    ctx->set_error(ctx, "no workspace");
    return 1;
  }
  const auto* in = reinterpret_cast<const float*>(static_cast<const char*>(x->data) + x->byte_offset);
  for (int64_t i = 0; i < n; ++i) scratch[i] = 2.0f * in[i];
  std::memcpy(static_cast<char*>(out->data) + out->byte_offset, scratch, static_cast<size_t>(n) * sizeof(float));
  ctx->workspace_free(ctx, scratch);
  return 0;
}

BuiltinRegistry& Registry() {
  static BuiltinRegistry* r = [] {
    auto* registry = new BuiltinRegistry();
    builtins::RegisterMemoryBuiltins(*registry);
    registry->RegisterKernel("test.double_on_device", "tt", DoubleOnDevice);
    return registry;
  }();
  return *r;
}

// main(x: f32[n] on the CPU) = copy to the device, double it there into planned storage on
// the device, copy back. on_device(x: f32[n] on test_dev:0) = the kernel straight away.
// wrong(x: f32[n] on the CPU) = the device kernel on a CPU tensor.
std::shared_ptr<const Executable> DeviceProgram(const std::string& device_name = "test_dev:0") {
  ExecutableBuilder b;
  int32_t dev = b.DeclareDevice(device_name);
  int32_t kernel = b.DeclareKernel("test.double_on_device", "tt", KernelDecl::Source::kLibrary, dev);
  const DLDataType f32 = DTypeFloat32();
  {
    FunctionBuilder& f = b.AddFunction("main", {TensorParam("x", f32, {Dim::Sym("n")})});
    int32_t xd = f.NewRegister(), bytes = f.NewRegister(), storage = f.NewRegister(), shape = f.NewRegister(),
            out = f.NewRegister(), back = f.NewRegister();
    f.CopyToDevice(xd, f.param(0), dev);
    f.IntOp(bytes, IntOpKind::kMul, Operand::Reg(f.sym("n")), Operand::Imm(4));
    f.AllocStorage(storage, Operand::Reg(bytes), dev);
    f.MakeShape(shape, {Operand::Reg(f.sym("n"))});
    f.AllocTensor(out, storage, Operand::Imm(0), shape, f32);
    f.CallKernel(kernel, {Operand::Reg(xd), Operand::Reg(out)});
    f.CopyToDevice(back, out, 0);
    f.Ret(back);
  }
  {
    ParamSpec x = TensorParam("x", f32, {Dim::Sym("n")});
    x.device = dev;
    FunctionBuilder& f = b.AddFunction("on_device", {x});
    int32_t storage = f.NewRegister(), shape = f.NewRegister(), out = f.NewRegister();
    f.AllocStorage(storage, Operand::Imm(1 << 12), dev);
    f.MakeShape(shape, {Operand::Reg(f.sym("n"))});
    f.AllocTensor(out, storage, Operand::Imm(0), shape, f32);
    f.CallKernel(kernel, {Operand::Reg(f.param(0)), Operand::Reg(out)});
    f.Ret(out);
  }
  {
    FunctionBuilder& f = b.AddFunction("wrong", {TensorParam("x", f32, {Dim::Sym("n")})});
    int32_t storage = f.NewRegister(), shape = f.NewRegister(), out = f.NewRegister();
    f.AllocStorage(storage, Operand::Imm(1 << 12), dev);
    f.MakeShape(shape, {Operand::Reg(f.sym("n"))});
    f.AllocTensor(out, storage, Operand::Imm(0), shape, f32);
    f.SetDebugName("y");
    f.CallKernel(kernel, {Operand::Reg(f.param(0)), Operand::Reg(out)});
    f.Ret(out);
  }
  {
    // A kernel on the device given a constant of the executable (host memory) directly, and
    // through a register.
    Tensor weights = *Tensor::Empty({3}, f32);
    for (int i = 0; i < 3; ++i) weights.data_as<float>()[i] = 1.5f * static_cast<float>(i + 1);
    int32_t constant = b.AddConstant(Value(weights));
    FunctionBuilder& f = b.AddFunction("constant", {});
    int32_t storage = f.NewRegister(), shape = f.NewRegister(), out = f.NewRegister(), loaded = f.NewRegister(),
            again = f.NewRegister(), back = f.NewRegister();
    f.AllocStorage(storage, Operand::Imm(1 << 12), dev);
    f.MakeShape(shape, {Operand::Imm(3)});
    f.AllocTensor(out, storage, Operand::Imm(0), shape, f32);
    f.CallKernel(kernel, {Operand::Const(constant), Operand::Reg(out)});
    f.LoadConst(loaded, constant);
    f.AllocTensor(again, storage, Operand::Imm(64), shape, f32);
    f.CallKernel(kernel, {Operand::Reg(loaded), Operand::Reg(again)});
    f.CopyToDevice(back, again, 0);
    f.Ret(back);
  }
  absl::StatusOr<std::string> bytes = b.Build();
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*bytes, Registry());
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *exe : nullptr;
}

Tensor Iota(int64_t n) {
  Tensor t = *Tensor::Empty({n}, DTypeFloat32());
  for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(VirtualMachineDevices, CopiesAllocatesAndRunsAKernelOnAnotherDevice) {
  TestDevice* device = TheTestDevice();
  auto exe = DeviceProgram();
  ASSERT_NE(exe, nullptr);
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm = VirtualMachine::Create(exe);
  ASSERT_TRUE(vm.ok()) << vm.status();
  ASSERT_EQ((*vm)->devices().size(), 2u);
  EXPECT_EQ((*vm)->devices()[0], CpuDevice());
  EXPECT_EQ((*vm)->devices()[1], device);
  int allocations = device->allocations, frees = device->frees;
  int to_host = device->copies_to_host, from_host = device->copies_from_host;
  absl::StatusOr<Value> r = (*vm)->Invoke("main", {Value(Iota(100))});
  ASSERT_TRUE(r.ok()) << r.status();
  const Tensor& out = r->as_tensor();
  EXPECT_EQ(out.device().device_type, kDLCPU);
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(out.data_as<float>()[i], 2.0f * static_cast<float>(i));
  // The input copy, the storage and the kernel's workspace were on the device; the first two
  // freed, the workspace kept by the VM for the next call (vm/device_workspace_pool.h).
  EXPECT_EQ(device->allocations - allocations, 3);
  EXPECT_EQ(device->frees - frees, 2);
  EXPECT_EQ(device->copies_from_host - from_host, 1);
  EXPECT_EQ(device->copies_to_host - to_host, 1);
  ASSERT_TRUE((*vm)->Invoke("main", {Value(Iota(100))}).ok());
  EXPECT_EQ(device->allocations - allocations, 5);  // the workspace reused
  EXPECT_EQ(device->frees - frees, 4);

  // A parameter on the device.
  Tensor on_device = *Iota(5).CopyTo(device);
  absl::StatusOr<Value> d = (*vm)->Invoke("on_device", {Value(on_device)});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->as_tensor().device().device_type, kDLExtDev);
  Tensor host = *d->as_tensor().CopyTo(CpuDevice());
  EXPECT_EQ(host.data_as<float>()[4], 8.0f);

  // A VM gives its workspace back to the device when it goes.
  absl::StatusOr<std::unique_ptr<VirtualMachine>> other = VirtualMachine::Create(exe);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->Invoke("main", {Value(Iota(100))}).ok());
  int before_reset = device->frees;
  other->reset();
  EXPECT_EQ(device->frees - before_reset, 1);
}

// kiln run --profile: a kernel on a device with its own timer (CUDA events) gets the
// device's time, not the host's; the CPU device has none.
TEST(VirtualMachineDevices, ProfilesTimeDeviceKernelsWithTheDevicesTimer) {
  TestDevice* device = TheTestDevice();
  auto exe = DeviceProgram();
  ASSERT_NE(exe, nullptr);
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm = VirtualMachine::Create(exe);
  ASSERT_TRUE(vm.ok()) << vm.status();
  (*vm)->EnableProfiling(true);
  const int marks = device->timer_marks;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*vm)->Invoke("main", {Value(Iota(10))}).ok());
  EXPECT_EQ((*vm)->profile().kernel_calls[0], 3);
  EXPECT_EQ((*vm)->profile().kernel_ns[0], 3 * 1234);
  EXPECT_EQ(device->timer_marks - marks, 6);  // a start and a stop per call
  absl::StatusOr<std::unique_ptr<DeviceTimer>> cpu_timer = CpuDevice()->CreateTimer();
  ASSERT_TRUE(cpu_timer.ok());
  EXPECT_EQ(*cpu_timer, nullptr);
}

TEST(VirtualMachineDevices, ConstantsAreCopiedToTheDeviceOfTheKernelOnce) {
  TestDevice* device = TheTestDevice();
  auto exe = DeviceProgram();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  int from_host = device->copies_from_host;
  for (int call = 0; call < 3; ++call) {
    absl::StatusOr<Value> r = vm.Invoke("constant", {});
    ASSERT_TRUE(r.ok()) << r.status();
    const Tensor& out = r->as_tensor();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out.data_as<float>()[i], 3.0f * static_cast<float>(i + 1));
  }
  // One copy for the VM's life, however often and however the kernels are given it.
  EXPECT_EQ(device->copies_from_host - from_host, 1);
}

TEST(VirtualMachineDevices, TensorsOnTheWrongDeviceAreClearErrors) {
  TheTestDevice();
  auto exe = DeviceProgram();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  absl::StatusOr<Value> kernel = vm.Invoke("wrong", {Value(Iota(4))});
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().message(),
            "in function 'wrong' at instruction 3 (y): kernel 'test.double_on_device' argument 0: the tensor is on cpu "
            "but the kernel runs on test_dev:0 (copy it there first)");
  absl::StatusOr<Value> param = vm.Invoke("on_device", {Value(Iota(4))});
  ASSERT_FALSE(param.ok());
  EXPECT_EQ(param.status().message(),
            "function 'on_device' parameter 'x': expected a tensor on test_dev:0, got one on cpu (float32[4])");
  absl::StatusOr<Value> main = vm.Invoke("main", {Value(*Iota(4).CopyTo(TheTestDevice()))});
  ASSERT_FALSE(main.ok());
  EXPECT_THAT(std::string(main.status().message()), HasSubstr("expected a tensor on cpu, got one on test_dev:0"));
  EXPECT_TRUE(vm.Invoke("main", {Value(Iota(4))}).ok());
}

TEST(VirtualMachineDevices, AnUnavailableDeviceIsAnErrorWhenTheVmIsCreated) {
  auto exe = DeviceProgram("vulkan:3");
  ASSERT_NE(exe, nullptr);
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm = VirtualMachine::Create(exe);
  ASSERT_FALSE(vm.ok());
  EXPECT_THAT(std::string(vm.status().message()),
              HasSubstr("the executable runs on device 'vulkan:3', which this VM cannot use: device vulkan:3 is not available"));
  VirtualMachine plain(exe);
  EXPECT_EQ(plain.Invoke("main", {Value(Iota(4))}).status().message(), vm.status().message());
}

TEST(VirtualMachineDevices, TheDeviceTableRoundTripsThroughTheFile) {
  ExecutableBuilder b;
  EXPECT_EQ(b.DeclareDevice("cpu"), 0);
  EXPECT_EQ(b.DeclareDevice("cuda:1"), 1);
  EXPECT_EQ(b.DeclareDevice("cuda:1"), 1);
  b.DeclareKernel("k", "t", KernelDecl::Source::kLibrary, 1);
  ParamSpec x = TensorParam("x", DTypeFloat32(), {Dim::Any()});
  x.device = 1;
  FunctionBuilder& f = b.AddFunction("f", {x});
  int32_t s = f.NewRegister();
  f.AllocStorage(s, Operand::Imm(8), 1);
  f.Ret(f.param(0));
  absl::StatusOr<Executable::Contents> c = Executable::Decode(*b.Build());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->devices, (std::vector<std::string>{"cpu", "cuda:1"}));
  EXPECT_EQ(c->kernels[0].device, 1);
  EXPECT_EQ(c->functions[0].params[0].device, 1);
  EXPECT_EQ(c->functions[0].code[0].a, 1);

  // A device index past the table is refused.
  Executable::Contents bad = *c;
  bad.kernels[0].device = 2;
  EXPECT_THAT(std::string(Executable::Verify(bad).message()), HasSubstr("names no device of the device table"));
  bad = *c;
  bad.devices = {"cuda:1"};
  EXPECT_THAT(std::string(Executable::Verify(bad).message()), HasSubstr("must start with \"cpu\""));
}

}  // namespace
}  // namespace kiln::vm
