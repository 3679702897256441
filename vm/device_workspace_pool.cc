#include "vm/device_workspace_pool.h"

#include <algorithm>

#include "vm/pooled_allocator.h"

namespace kiln::vm {

namespace {
constexpr size_t kWorkspaceAlignment = 64;
}  // namespace

DeviceWorkspacePool::~DeviceWorkspacePool() {
  ReleaseIdle(nullptr);
  // Blocks still live belong to a kernel that never freed them: they go back too.
  for (auto& [ptr, block] : live_) block.device->Free(ptr, block.bytes);
}

void* DeviceWorkspacePool::Allocate(Device* device, uint64_t bytes) {
  const uint64_t size = PooledAllocator::SizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = idle_.find({device, size}); it != idle_.end()) {
    void* ptr = it->second;
    idle_.erase(it);
    idle_bytes_ -= size;
    live_[ptr] = {device, size};
    ++stats_.reuses;
    return ptr;
  }
  absl::StatusOr<void*> fresh = device->Allocate(size, kWorkspaceAlignment);
  if (!fresh.ok()) {
    // Blocks of other sizes may be what fills the device.
    ReleaseIdle(device);
    fresh = device->Allocate(size, kWorkspaceAlignment);
    if (!fresh.ok()) return nullptr;
  }
  live_[*fresh] = {device, size};
  ++stats_.device_allocations;
  return *fresh;
}

void DeviceWorkspacePool::Free(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  idle_.emplace(std::make_pair(it->second.device, it->second.bytes), ptr);
  idle_bytes_ += it->second.bytes;
  live_.erase(it);
  while (idle_bytes_ > max_idle_bytes_) {
    auto largest = std::max_element(idle_.begin(), idle_.end(),
                                    [](const auto& a, const auto& b) { return a.first.second < b.first.second; });
    largest->first.first->Free(largest->second, largest->first.second);
    idle_bytes_ -= largest->first.second;
    idle_.erase(largest);
  }
}

void DeviceWorkspacePool::ReleaseIdle(Device* device) {
  for (auto it = idle_.begin(); it != idle_.end();) {
    if (device != nullptr && it->first.first != device) {
      ++it;
      continue;
    }
    it->first.first->Free(it->second, it->first.second);
    idle_bytes_ -= it->first.second;
    it = idle_.erase(it);
  }
}

DeviceWorkspacePool::Stats DeviceWorkspacePool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.idle_blocks = static_cast<int64_t>(idle_.size());
  s.idle_bytes = static_cast<int64_t>(idle_bytes_);
  return s;
}

}  // namespace kiln::vm
