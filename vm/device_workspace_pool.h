// DeviceWorkspacePool: the VM's workspace memory on GPU devices (ctx->workspace_alloc when
// the call's device is not the CPU), kept for reuse.
//
// A GPU function's host part allocates device workspace for the intermediates its kernels
// share (softmax's row maximum; tir/transform/split_host_device.h) and frees it after its
// last launch. Giving memory back to a device waits for the kernels queued on it (the Vulkan
// device submits its command buffer and waits, the CUDA one synchronizes its stream), which
// would make every such call synchronous. So a freed block stays here, and a later
// allocation of the same device and size class takes it without waiting: kernels on one
// device run in the order they were queued (one stream or queue; Vulkan commands separated by
// barriers), so the kernels that used the block before are done with it by the time a later
// kernel touches it. Sizes are rounded up to PooledAllocator's size classes, so a growing
// sequence length mostly reuses blocks. The idle blocks hold at most `max_idle_bytes`
// (beyond it the largest go back first: fewest waits for the most memory); when a device runs
// out of memory, its idle blocks go back to it and the allocation is tried again. Every
// block goes back to its device when the pool is destroyed (with its VM). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "vm/device.h"

namespace kiln::vm {

class DeviceWorkspacePool {
 public:
  static constexpr uint64_t kDefaultMaxIdleBytes = uint64_t{256} << 20;

  explicit DeviceWorkspacePool(uint64_t max_idle_bytes = kDefaultMaxIdleBytes) : max_idle_bytes_(max_idle_bytes) {}
  ~DeviceWorkspacePool();
  DeviceWorkspacePool(const DeviceWorkspacePool&) = delete;
  DeviceWorkspacePool& operator=(const DeviceWorkspacePool&) = delete;

  // At least `bytes` of `device` memory, 64-byte aligned; nullptr when the device has none
  // left even after the idle blocks went back to it.
  void* Allocate(Device* device, uint64_t bytes);
  // Keeps the block for reuse. A pointer this pool did not hand out is ignored.
  void Free(void* ptr);

  struct Stats {
    int64_t device_allocations = 0;  // blocks the devices handed out
    int64_t reuses = 0;              // allocations served by an idle block
    int64_t idle_blocks = 0;
    int64_t idle_bytes = 0;
  };
  Stats stats() const;

 private:
  struct Block {
    Device* device;
    uint64_t bytes;  // the size class
  };
  // Gives every idle block of `device` back to it (nullptr: of every device).
  void ReleaseIdle(Device* device);

  const uint64_t max_idle_bytes_;
  mutable std::mutex mutex_;
  uint64_t idle_bytes_ = 0;
  std::unordered_map<void*, Block> live_;
  std::multimap<std::pair<Device*, uint64_t>, void*> idle_;
  Stats stats_;
};

}  // namespace kiln::vm
