// The Vulkan device's class, shared by its memory and submission half (vulkan_device.cc)
// and its kernel half (vulkan_module.cc). Internal to the runtime: users go through
// vm/vulkan_device.h and the device table.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "vm/device.h"
#include "vm/vulkan_device.h"
#include "vm/vulkan_loader.h"

namespace kiln::vm::vulkan {

// One allocation: its buffer, memory, and the address range standing for it.
struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t size = 0;        // the buffer's size (at least 4: Vulkan has no empty buffers)
  char* address = nullptr;  // mapped memory, or a reserved range (reserved_bytes) of no memory
  size_t reserved_bytes = 0;
};

// A pointer resolved to the buffer holding it.
struct BufferSpan {
  const Allocation* allocation;
  uint64_t offset;
};

// Everything about a physical device chosen and opened (filled by OpenVulkanDevice).
struct DeviceSetup {
  Api api;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  std::set<uint32_t> capabilities;  // SPIR-V capabilities the device enables
};

class VulkanDevice final : public Device {
 public:
  VulkanDevice(int index, DeviceSetup setup, const VulkanDeviceOptions& options);
  ~VulkanDevice() override;
  // Creates the queue's command pool, command buffer, fence and descriptor pool.
  absl::Status Init();

  DLDevice dl_device() const override { return {kDLVulkan, index_}; }
  std::string name() const override;
  absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) override;
  void Free(void* ptr, size_t bytes) override;
  absl::Status CopyToHost(void* host_dst, const void* src, size_t bytes) override;
  absl::Status CopyFromHost(void* dst, const void* host_src, size_t bytes) override;
  absl::Status Synchronize() override;
  void* stream() override { return queue_; }
  absl::StatusOr<std::shared_ptr<DeviceModule>> LoadModule(const DeviceCode& code) override;

  // For the kernels (vulkan_module.cc). Callers hold mutex().
  std::mutex& mutex() { return mutex_; }
  const Api& api() const { return setup_.api; }
  VkDevice device() const { return setup_.device; }
  const VkPhysicalDeviceLimits& limits() const { return setup_.properties.limits; }
  const std::set<uint32_t>& capabilities() const { return setup_.capabilities; }
  // "vulkan:0 (llvmpipe (LLVM 15.0.6, 256 bits))"
  std::string description() const;
  // The allocation holding `ptr` (`bytes` from it must lie inside), or an error.
  absl::StatusOr<BufferSpan> Resolve(const void* ptr, uint64_t bytes) const;
  // A descriptor set from the pool of the commands being recorded (submitting them first
  // when the pool is spent).
  absl::StatusOr<VkDescriptorSet> AllocateDescriptorSet(VkDescriptorSetLayout layout);
  // The command buffer being recorded, begun if it was not; a barrier orders each new
  // command after the ones before it.
  absl::StatusOr<VkCommandBuffer> Record();
  // Submits what was recorded and waits for it; `what` names the work in an error.
  absl::Status Flush(const std::string& what);

 private:
  absl::Status CopyThroughStaging(const BufferSpan& span, void* host, uint64_t bytes, bool to_device);
  // A buffer of a.size bytes with its own memory of type `memory_type`, bound (a.buffer and
  // a.memory set as far as they were made: Release frees them on failure).
  VkResult CreateBuffer(VkBufferUsageFlags usage, uint32_t memory_type, Allocation& a);
  void Release(Allocation& a);

  int index_;
  DeviceSetup setup_;
  VulkanDeviceOptions options_;
  bool mapped_ = false;  // allocations are host-visible and mapped
  uint32_t buffer_memory_type_ = 0;
  uint32_t staging_memory_type_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  bool recording_ = false;
  bool any_recorded_ = false;
  Allocation staging_;  // grown on demand (staging path only)
  std::map<uintptr_t, Allocation> allocations_;  // by start address
  std::mutex mutex_;
};

}  // namespace kiln::vm::vulkan
