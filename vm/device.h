// Devices: where tensors live and kernels run.
//
// A Device allocates and frees memory, copies between host and device, and synchronizes.
// The CPU device is always present; CUDA and Vulkan register themselves at run time when
// their driver can be opened (dlopen), so one binary runs on a machine without a GPU and
// says clearly that such a device is unavailable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include <dlpack/dlpack.h>

#include "vm/device_code.h"
#include "vm/kernel_abi.h"

namespace kiln::vm {

// An executable's device code loaded on a device (Device::LoadModule): runs its kernels.
class DeviceModule {
 public:
  virtual ~DeviceModule() = default;
  // Runs kernel `kernel` (an index into DeviceCode::kernels) with `dims` over `args` on
  // `stream`. An error names the kernel.
  virtual absl::Status Launch(int32_t kernel, const KilnLaunchDims& dims, const KilnArg* args, int32_t num_args,
                              void* stream) = 0;
};

// Times work queued on a device's stream with the device's own clock (CUDA events), so a
// profile counts the kernels' time on the GPU, not launch overhead or host waits.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Marks the start on the stream; call before the timed work is queued.
  virtual absl::Status Start() = 0;
  // Marks the end on the stream after the timed work, waits for that mark and returns the
  // nanoseconds between the two marks.
  virtual absl::StatusOr<int64_t> StopNs() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DLDevice dl_device() const = 0;
  // "cpu", "cuda:0", ...
  virtual std::string name() const = 0;
  // Returns memory aligned to at least `alignment` bytes, or an error when exhausted.
  virtual absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
  // Copies between memory of this device and host memory (either direction).
  virtual absl::Status CopyToHost(void* host_dst, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyFromHost(void* dst, const void* host_src, size_t bytes) = 0;
  virtual absl::Status Synchronize() = 0;
  // The stream or queue kernels on this device are given (KilnCallContext::stream); the CPU
  // has none.
  virtual void* stream() { return nullptr; }
  // Loads the kernels of `code` (an executable's device code for this device's kind). The
  // CPU runs no device kernels: Unimplemented.
  virtual absl::StatusOr<std::shared_ptr<DeviceModule>> LoadModule(const DeviceCode& code);
  // A timer on this device's stream, or null where the device has no clock of its own (the
  // CPU, Vulkan): a profile then takes host time up to Synchronize().
  virtual absl::StatusOr<std::unique_ptr<DeviceTimer>> CreateTimer() { return std::unique_ptr<DeviceTimer>(); }
};

// The process-wide CPU device (pooled, 64-byte aligned allocations).
Device* CpuDevice();

// Looks a device up by name: "cpu", "cuda:0", "vulkan:0", or KIND[:INDEX] of a kind given
// to RegisterDeviceKind. A known kind whose driver is not present is an Unavailable error
// saying why.
absl::StatusOr<Device*> GetDevice(const std::string& name);
absl::StatusOr<Device*> GetDevice(DLDevice device);

// Lets a GPU backend make its devices known once its driver has been opened. `factory` is
// called on first use of a device of that kind and index.
using DeviceFactory = std::function<absl::StatusOr<Device*>(int index)>;
void RegisterDeviceKind(DLDeviceType type, std::string kind_name, DeviceFactory factory);

// "cpu", "cuda:0", "ext_dev:1", ... (the kind's registered name where there is one).
std::string DeviceName(DLDevice device);

}  // namespace kiln::vm

namespace kiln::vm {
struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
};
// Host memory handed out by the CPU device (tensors, storage, workspaces), and its peak.
MemoryStats CpuMemoryStats();
void ResetCpuPeakMemory();
}  // namespace kiln::vm
