#include "vm/device.h"

#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "vm/cuda_device.h"
#include "vm/pooled_allocator.h"
#include "vm/vulkan_device.h"

namespace kiln::vm {
namespace {

class CpuDeviceImpl final : public Device {
 public:
  DLDevice dl_device() const override { return {kDLCPU, 0}; }
  std::string name() const override { return "cpu"; }
  absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) override {
    if (alignment > PooledAllocator::kAlignment) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu: alignment ", alignment, " exceeds the supported 64 bytes"));
    }
    void* ptr = pool_.Allocate(bytes);
    if (ptr == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("cpu: out of memory allocating ", bytes, " bytes"));
    }
    return ptr;
  }
  void Free(void* ptr, size_t bytes) override { pool_.Free(ptr, bytes); }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }

  PooledAllocator& pool() { return pool_; }

 private:
  PooledAllocator pool_;
};

struct DeviceKind {
  std::string name;
  DeviceFactory factory;
  std::map<int, Device*> instances;
};

struct Registry {
  std::mutex mutex;
  std::map<int, DeviceKind> kinds;  // by DLDeviceType
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    // CUDA and Vulkan are always known: each factory opens its driver on first use and says clearly
    // when there is none (vm/cuda_device.h).
    r->kinds[kDLCUDA] = DeviceKind{"cuda", CreateCudaDevice, {}};
    // Vulkan likewise opens its loader on first use (vm/vulkan_device.h).
    r->kinds[kDLVulkan] = DeviceKind{"vulkan", CreateVulkanDevice, {}};
    return r;
  }();
  return *registry;
}

const char* KindName(DLDeviceType type) {
  switch (type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLVulkan: return "vulkan";
    default: return nullptr;
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<DeviceModule>> Device::LoadModule(const DeviceCode& code) {
  return absl::UnimplementedError(absl::StrCat("device ", name(), " runs no ", code.kind, " kernels"));
}

Device* CpuDevice() {
  static CpuDeviceImpl* device = new CpuDeviceImpl();
  return device;
}

void RegisterDeviceKind(DLDeviceType type, std::string kind_name, DeviceFactory factory) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.kinds[type] = DeviceKind{std::move(kind_name), std::move(factory), {}};
}

std::string DeviceName(DLDevice device) {
  if (device.device_type == kDLCPU) return "cpu";
  const char* name = KindName(device.device_type);
  std::string kind = name ? name : absl::StrCat("device type ", device.device_type);
  if (name == nullptr) {
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.kinds.find(device.device_type);
    if (it != registry.kinds.end()) kind = it->second.name;
  }
  return absl::StrCat(kind, ":", device.device_id);
}

absl::StatusOr<Device*> GetDevice(DLDevice device) {
  if (device.device_type == kDLCPU) return CpuDevice();
  std::string label = DeviceName(device);
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.kinds.find(device.device_type);
  if (it == registry.kinds.end()) {
    return absl::UnavailableError(absl::StrCat(
        "device ", label, " is not available: this build found no driver for it at run time"));
  }
  auto instance = it->second.instances.find(device.device_id);
  if (instance != it->second.instances.end()) return instance->second;
  absl::StatusOr<Device*> created = it->second.factory(device.device_id);
  if (!created.ok()) {
    return absl::UnavailableError(
        absl::StrCat("device ", label, " is not available: ", created.status().message()));
  }
  it->second.instances[device.device_id] = *created;
  return *created;
}

absl::StatusOr<Device*> GetDevice(const std::string& name) {
  std::string kind = name;
  int index = 0;
  if (size_t colon = name.find(':'); colon != std::string::npos) {
    kind = name.substr(0, colon);
    if (!absl::SimpleAtoi(name.substr(colon + 1), &index) || index < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad device '", name, "': expected KIND[:INDEX]"));
    }
  }
  if (kind == "cpu") return GetDevice(DLDevice{kDLCPU, index});
  if (kind == "cuda") return GetDevice(DLDevice{kDLCUDA, index});
  if (kind == "vulkan") return GetDevice(DLDevice{kDLVulkan, index});
  std::string known = "cpu, cuda, vulkan";
  int found = -1;
  {
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    for (const auto& [type, registered] : registry.kinds) {
      if (registered.name == kind) found = type;
      if (KindName(static_cast<DLDeviceType>(type)) == nullptr) absl::StrAppend(&known, ", ", registered.name);
    }
  }
  if (found >= 0) return GetDevice(DLDevice{static_cast<DLDeviceType>(found), index});
  return absl::InvalidArgumentError(absl::StrCat("unknown device '", name, "' (known kinds: ", known, ")"));
}

}  // namespace kiln::vm

namespace kiln::vm {

MemoryStats CpuMemoryStats() {
  PooledAllocator::Stats stats = static_cast<CpuDeviceImpl*>(CpuDevice())->pool().stats();
  return MemoryStats{stats.bytes_in_use, stats.peak_bytes_in_use};
}

void ResetCpuPeakMemory() { static_cast<CpuDeviceImpl*>(CpuDevice())->pool().ResetPeak(); }

}  // namespace kiln::vm
