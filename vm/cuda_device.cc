#include "vm/cuda_device.h"

#include <dlfcn.h>

#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::vm {

namespace {

// The driver API entry points used, declared here: building needs no CUDA header.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDefault = 0;  // timing enabled (CU_EVENT_DISABLE_TIMING not set)

struct Driver {
  CUresult (*Init)(unsigned);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*StreamCreate)(CUstream*, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**);
  // Events time work on the stream (kiln run --profile); optional: a driver without them
  // still runs kernels, and a profile falls back to host time.
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
};

// Opened and initialized once per process; a failure is kept as the one-line reason.
const absl::StatusOr<Driver>& GetDriver() {
  static const absl::StatusOr<Driver>* driver = []() -> absl::StatusOr<Driver>* {
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      return new absl::StatusOr<Driver>(
          absl::UnavailableError(absl::StrCat("no CUDA driver found (libcuda.so.1): ", e ? e : "dlopen failed")));
    }
    Driver d{};
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (fn == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    };
    sym(d.Init, "cuInit");
    sym(d.GetErrorString, "cuGetErrorString");
    sym(d.DeviceGetCount, "cuDeviceGetCount");
    sym(d.DeviceGet, "cuDeviceGet");
    sym(d.DeviceGetAttribute, "cuDeviceGetAttribute");
    sym(d.DeviceGetName, "cuDeviceGetName");
    sym(d.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(d.CtxSetCurrent, "cuCtxSetCurrent");
    sym(d.MemAlloc, "cuMemAlloc_v2");
    sym(d.MemFree, "cuMemFree_v2");
    sym(d.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    sym(d.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    sym(d.StreamCreate, "cuStreamCreate");
    sym(d.StreamSynchronize, "cuStreamSynchronize");
    sym(d.ModuleLoadData, "cuModuleLoadData");
    sym(d.ModuleUnload, "cuModuleUnload");
    sym(d.ModuleGetFunction, "cuModuleGetFunction");
    sym(d.LaunchKernel, "cuLaunchKernel");
    if (!missing.empty()) {
      return new absl::StatusOr<Driver>(
          absl::UnavailableError(absl::StrCat("the CUDA driver (libcuda.so.1) lacks ", missing)));
    }
    auto optional_sym = [&](auto& fn, std::initializer_list<const char*> names) {
      for (const char* name : names) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
        if (fn != nullptr) return;
      }
    };
    optional_sym(d.EventCreate, {"cuEventCreate"});
    optional_sym(d.EventDestroy, {"cuEventDestroy_v2"});
    optional_sym(d.EventRecord, {"cuEventRecord"});
    optional_sym(d.EventSynchronize, {"cuEventSynchronize"});
    // CUDA 12.8 added _v2 and CUDA 13 drivers keep only it; older drivers have the first.
    optional_sym(d.EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
    CUresult rc = d.Init(0);
    if (rc != kCudaSuccess) {
      const char* text = nullptr;
      d.GetErrorString(rc, &text);
      return new absl::StatusOr<Driver>(absl::UnavailableError(
          absl::StrCat("the CUDA driver (libcuda.so.1) failed to initialize: ", text ? text : "error ", rc)));
    }
    return new absl::StatusOr<Driver>(d);
  }();
  return *driver;
}

std::string ErrorText(const Driver& d, CUresult rc) {
  const char* text = nullptr;
  if (d.GetErrorString(rc, &text) != kCudaSuccess || text == nullptr) return absl::StrCat("CUDA error ", rc);
  return absl::StrCat(text, " (CUDA error ", rc, ")");
}

class CudaModule final : public DeviceModule {
 public:
  CudaModule(const Driver& d, CUcontext context, CUmodule module, std::vector<CUfunction> functions,
             std::vector<DeviceKernelInfo> kernels)
      : d_(d), context_(context), module_(module), functions_(std::move(functions)), kernels_(std::move(kernels)) {}
  ~CudaModule() override {
    d_.CtxSetCurrent(context_);
    d_.ModuleUnload(module_);
  }

  absl::Status Launch(int32_t kernel, const KilnLaunchDims& dims, const KilnArg* args, int32_t num_args,
                      void* stream) override {
    if (kernel < 0 || static_cast<size_t>(kernel) >= functions_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("device kernel ", kernel, " does not exist (the module has ",
                                                     functions_.size(), ")"));
    }
    const DeviceKernelInfo& info = kernels_[kernel];
    if (static_cast<size_t>(num_args) != info.param_types.size()) {
      return absl::InvalidArgumentError(absl::StrCat("device kernel ", info.name, ": ", num_args,
                                                     " arguments for ", info.param_types.size(), " parameters"));
    }
    for (int i = 0; i < 3; ++i) {
      // An empty grid (a tensor with a zero dimension) has nothing to run.
      if (dims.grid[i] == 0 || dims.block[i] == 0) return absl::OkStatus();
    }
    // Each parameter in the width the kernel declares it with.
    std::vector<uint64_t> slots(info.param_types.size());
    std::vector<void*> params(info.param_types.size());
    for (size_t i = 0; i < info.param_types.size(); ++i) {
      const std::string& t = info.param_types[i];
      const KilnArg& a = args[i];
      void* slot = &slots[i];
      params[i] = slot;
      if (t == "handle") {
        void* p = a.value.handle;
        std::memcpy(slot, &p, sizeof p);
      } else if (t == "float32" || t == "float16") {
        float f = static_cast<float>(a.value.f64);
        std::memcpy(slot, &f, sizeof f);
      } else if (t == "float64") {
        std::memcpy(slot, &a.value.f64, sizeof(double));
      } else if (t == "int64" || t == "uint64") {
        std::memcpy(slot, &a.value.i64, 8);
      } else if (t == "int32" || t == "uint32") {
        int32_t v = static_cast<int32_t>(a.value.i64);
        std::memcpy(slot, &v, 4);
      } else if (t == "int16" || t == "uint16") {
        int16_t v = static_cast<int16_t>(a.value.i64);
        std::memcpy(slot, &v, 2);
      } else if (t == "int8" || t == "uint8" || t == "bool") {
        int8_t v = static_cast<int8_t>(t == "bool" ? a.value.i64 != 0 : a.value.i64);
        std::memcpy(slot, &v, 1);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("device kernel ", info.name, " parameter ", i,
                                                       " has the unsupported type ", t));
      }
    }
    d_.CtxSetCurrent(context_);
    CUresult rc = d_.LaunchKernel(functions_[kernel], dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0],
                                  dims.block[1], dims.block[2], dims.dynamic_shared_bytes,
                                  static_cast<CUstream>(stream), params.data(), nullptr);
    if (rc != kCudaSuccess) {
      return absl::InternalError(absl::StrCat("launching device kernel ", info.name, " (grid ", dims.grid[0], "x",
                                              dims.grid[1], "x", dims.grid[2], ", block ", dims.block[0], "x",
                                              dims.block[1], "x", dims.block[2], "): ", ErrorText(d_, rc)));
    }
    return absl::OkStatus();
  }

 private:
  const Driver& d_;
  CUcontext context_;
  CUmodule module_;
  std::vector<CUfunction> functions_;
  std::vector<DeviceKernelInfo> kernels_;
};

// Two events around the timed work on the device's stream; cuEventElapsedTime measures
// the GPU time between them (about half a microsecond resolution).
class CudaEventTimer final : public DeviceTimer {
 public:
  CudaEventTimer(const Driver& d, CUcontext context, CUstream stream, CUevent start, CUevent stop)
      : d_(d), context_(context), stream_(stream), start_(start), stop_(stop) {}
  ~CudaEventTimer() override {
    d_.CtxSetCurrent(context_);
    d_.EventDestroy(start_);
    d_.EventDestroy(stop_);
  }
  absl::Status Start() override {
    d_.CtxSetCurrent(context_);
    CUresult rc = d_.EventRecord(start_, stream_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat("cuEventRecord (profile start): ", ErrorText(d_, rc)));
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> StopNs() override {
    d_.CtxSetCurrent(context_);
    CUresult rc = d_.EventRecord(stop_, stream_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat("cuEventRecord (profile stop): ", ErrorText(d_, rc)));
    rc = d_.EventSynchronize(stop_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat("cuEventSynchronize: ", ErrorText(d_, rc)));
    float ms = 0;
    rc = d_.EventElapsedTime(&ms, start_, stop_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat("cuEventElapsedTime: ", ErrorText(d_, rc)));
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }

 private:
  const Driver& d_;
  CUcontext context_;
  CUstream stream_;
  CUevent start_;
  CUevent stop_;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(const Driver& d, int index, CUcontext context, CUstream stream, int major, int minor)
      : d_(d), index_(index), context_(context), stream_(stream), major_(major), minor_(minor) {}

  DLDevice dl_device() const override { return {kDLCUDA, index_}; }
  std::string name() const override { return absl::StrCat("cuda:", index_); }
  absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) override {
    if (alignment > 256) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": alignment ", alignment, " exceeds the 256 bytes cuMemAlloc gives"));
    }
    d_.CtxSetCurrent(context_);
    CUdeviceptr ptr = 0;
    CUresult rc = d_.MemAlloc(&ptr, bytes == 0 ? 1 : bytes);
    if (rc != kCudaSuccess) {
      return absl::ResourceExhaustedError(absl::StrCat(name(), ": allocating ", bytes, " bytes: ", ErrorText(d_, rc)));
    }
    return reinterpret_cast<void*>(ptr);
  }
  void Free(void* ptr, size_t) override {
    if (ptr == nullptr) return;
    d_.CtxSetCurrent(context_);
    // Kernels still queued may use it: wait for them first.
    d_.StreamSynchronize(stream_);
    d_.MemFree(reinterpret_cast<CUdeviceptr>(ptr));
  }
  absl::Status CopyToHost(void* host_dst, const void* src, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    d_.CtxSetCurrent(context_);
    CUresult rc = d_.MemcpyDtoHAsync(host_dst, reinterpret_cast<CUdeviceptr>(src), bytes, stream_);
    if (rc == kCudaSuccess) rc = d_.StreamSynchronize(stream_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat(name(), ": copy to host: ", ErrorText(d_, rc)));
    return absl::OkStatus();
  }
  absl::Status CopyFromHost(void* dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    d_.CtxSetCurrent(context_);
    CUresult rc = d_.MemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), host_src, bytes, stream_);
    if (rc == kCudaSuccess) rc = d_.StreamSynchronize(stream_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat(name(), ": copy from host: ", ErrorText(d_, rc)));
    return absl::OkStatus();
  }
  absl::Status Synchronize() override {
    d_.CtxSetCurrent(context_);
    CUresult rc = d_.StreamSynchronize(stream_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat(name(), ": ", ErrorText(d_, rc)));
    return absl::OkStatus();
  }
  void* stream() override { return stream_; }
  absl::Status MakeCurrent() {
    CUresult rc = d_.CtxSetCurrent(context_);
    if (rc != kCudaSuccess) return absl::InternalError(absl::StrCat(name(), ": cuCtxSetCurrent: ", ErrorText(d_, rc)));
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<DeviceTimer>> CreateTimer() override {
    if (d_.EventCreate == nullptr || d_.EventDestroy == nullptr || d_.EventRecord == nullptr ||
        d_.EventSynchronize == nullptr || d_.EventElapsedTime == nullptr) {
      return std::unique_ptr<DeviceTimer>();  // an old driver without events: host time instead
    }
    d_.CtxSetCurrent(context_);
    CUevent start = nullptr, stop = nullptr;
    CUresult rc = d_.EventCreate(&start, kEventDefault);
    if (rc == kCudaSuccess) rc = d_.EventCreate(&stop, kEventDefault);
    if (rc != kCudaSuccess) {
      if (start != nullptr) d_.EventDestroy(start);
      return absl::InternalError(absl::StrCat(name(), ": cuEventCreate: ", ErrorText(d_, rc)));
    }
    return std::unique_ptr<DeviceTimer>(new CudaEventTimer(d_, context_, stream_, start, stop));
  }

  absl::StatusOr<std::shared_ptr<DeviceModule>> LoadModule(const DeviceCode& code) override {
    if (code.kind != "cuda") return Device::LoadModule(code);
    std::optional<size_t> chosen = ChooseBinary(code, major_, minor_);
    if (!chosen) {
      std::string have;
      for (const DeviceBinary& b : code.binaries) absl::StrAppend(&have, have.empty() ? "" : ", ", b.format, " ", b.arch);
      return absl::FailedPreconditionError(absl::StrCat(
          name(), " (sm_", major_, minor_, ") cannot run this executable's CUDA kernels, compiled for ",
          have.empty() ? "nothing" : have, "; recompile with --target \"cuda -arch=sm_", major_, minor_, "\""));
    }
    const DeviceBinary& binary = code.binaries[*chosen];
    // PTX is text the driver reads up to its terminating NUL.
    std::string image = binary.bytes;
    if (binary.format == "ptx") image.push_back('\0');
    d_.CtxSetCurrent(context_);
    CUmodule module = nullptr;
    CUresult rc = d_.ModuleLoadData(&module, image.data());
    if (rc != kCudaSuccess) {
      return absl::InternalError(absl::StrCat(name(), ": loading the ", binary.format, " for ", binary.arch, ": ",
                                              ErrorText(d_, rc)));
    }
    std::vector<CUfunction> functions;
    for (const DeviceKernelInfo& k : code.kernels) {
      CUfunction f = nullptr;
      rc = d_.ModuleGetFunction(&f, module, k.name.c_str());
      if (rc != kCudaSuccess) {
        d_.ModuleUnload(module);
        return absl::InternalError(absl::StrCat(name(), ": device kernel ", k.name, " not in the loaded ",
                                                binary.format, ": ", ErrorText(d_, rc)));
      }
      functions.push_back(f);
    }
    return std::shared_ptr<DeviceModule>(std::make_shared<CudaModule>(d_, context_, module, std::move(functions),
                                                                      code.kernels));
  }

 private:
  const Driver& d_;
  int index_;
  CUcontext context_;
  CUstream stream_;
  int major_;
  int minor_;
};

}  // namespace

absl::Status CudaDriverAvailable() { return GetDriver().status(); }

absl::Status MakeCudaContextCurrent(int index) {
  absl::StatusOr<Device*> device = GetDevice(DLDevice{kDLCUDA, index});
  if (!device.ok()) return device.status();
  auto* cuda = dynamic_cast<CudaDevice*>(*device);
  if (cuda == nullptr) return absl::InternalError(absl::StrCat("device cuda:", index, " is not the driver's CUDA device"));
  return cuda->MakeCurrent();
}

absl::StatusOr<Device*> CreateCudaDevice(int index) {
  const absl::StatusOr<Driver>& driver = GetDriver();
  if (!driver.ok()) return driver.status();
  const Driver& d = *driver;
  int count = 0;
  CUresult rc = d.DeviceGetCount(&count);
  if (rc != kCudaSuccess) return absl::UnavailableError(absl::StrCat("counting CUDA devices: ", ErrorText(d, rc)));
  if (index < 0 || index >= count) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", index, " not found: this machine has ", count, " CUDA device(s)"));
  }
  CUdevice device = 0;
  int major = 0, minor = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  rc = d.DeviceGet(&device, index);
  if (rc == kCudaSuccess) rc = d.DeviceGetAttribute(&major, kAttrComputeCapabilityMajor, device);
  if (rc == kCudaSuccess) rc = d.DeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, device);
  if (rc == kCudaSuccess) rc = d.DevicePrimaryCtxRetain(&context, device);
  if (rc == kCudaSuccess) rc = d.CtxSetCurrent(context);
  if (rc == kCudaSuccess) rc = d.StreamCreate(&stream, kStreamNonBlocking);
  if (rc != kCudaSuccess) {
    return absl::UnavailableError(absl::StrCat("opening CUDA device ", index, ": ", ErrorText(d, rc)));
  }
  // Lives for the process, like the device table that holds it.
  return new CudaDevice(d, index, context, stream, major, minor);
}

}  // namespace kiln::vm
