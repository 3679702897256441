#include "vm/vulkan_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vm/vulkan_device_impl.h"

namespace kiln::vm {
namespace vulkan {
namespace {

// Descriptor sets recorded between two submissions; a pool spent submits early.
constexpr uint32_t kDescriptorSetsPerPool = 512;
constexpr uint32_t kStorageBuffersPerPool = 8192;

std::string Failed(const std::string& what, VkResult result) { return absl::StrCat(what, ": ", ResultName(result)); }

// The process's instance and its physical devices that can compute, or why there are none.
struct Instance {
  Api api;
  VkInstance instance = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> compute_devices;
};

bool HasComputeQueue(const Api& api, VkPhysicalDevice physical, uint32_t* family) {
  uint32_t count = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  api.vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  for (uint32_t i = 0; i < count; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      if (family) *family = i;
      return true;
    }
  }
  return false;
}

const absl::StatusOr<Instance>& GetInstance() {
  static const absl::StatusOr<Instance>* instance = []() -> absl::StatusOr<Instance>* {
    const absl::StatusOr<Api>& loader = Loader();
    if (!loader.ok()) return new absl::StatusOr<Instance>(loader.status());
    Instance in;
    in.api = *loader;
    uint32_t version = 0;
    in.api.vkEnumerateInstanceVersion(&version);
    VkApplicationInfo app = Info<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "kiln";
    app.pEngineName = "kiln";
    // 1.1 is enough for SPIR-V 1.3; 1.2 brings the 8-bit storage and float16/int8 features
    // into the core.
    app.apiVersion = version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
    VkInstanceCreateInfo info = Info<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.pApplicationInfo = &app;
    VkResult rc = in.api.vkCreateInstance(&info, nullptr, &in.instance);
    if (rc != VK_SUCCESS) {
      return new absl::StatusOr<Instance>(
          absl::UnavailableError(Failed("creating a Vulkan instance (is a Vulkan driver installed?)", rc)));
    }
    if (absl::Status s = LoadInstanceFunctions(in.instance, in.api); !s.ok()) return new absl::StatusOr<Instance>(s);
    uint32_t count = 0;
    in.api.vkEnumeratePhysicalDevices(in.instance, &count, nullptr);
    std::vector<VkPhysicalDevice> all(count);
    in.api.vkEnumeratePhysicalDevices(in.instance, &count, all.data());
    for (VkPhysicalDevice p : all) {
      VkPhysicalDeviceProperties props;
      in.api.vkGetPhysicalDeviceProperties(p, &props);
      if (props.apiVersion >= VK_API_VERSION_1_1 && HasComputeQueue(in.api, p, nullptr)) {
        in.compute_devices.push_back(p);
      }
    }
    if (in.compute_devices.empty()) {
      return new absl::StatusOr<Instance>(absl::UnavailableError(absl::StrCat(
          "no Vulkan device that can compute (Vulkan 1.1, a compute queue) among the ", count, " found")));
    }
    return new absl::StatusOr<Instance>(in);
  }();
  return *instance;
}

bool HasExtension(const Api& api, VkPhysicalDevice physical, const char* name) {
  uint32_t count = 0;
  api.vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  api.vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  for (const VkExtensionProperties& e : extensions) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

// SPIR-V capability values (the specification's SpvCapability).
constexpr uint32_t kCapShader = 1, kCapFloat16 = 9, kCapFloat64 = 10, kCapInt64 = 11, kCapInt16 = 22, kCapInt8 = 39,
                   kCapStorageBuffer16 = 4433, kCapStorageBuffer8 = 4448;

// Chooses physical device `index`, and creates a logical device with one compute queue and,
// of the features the kernel contract allows, those the device has.
absl::StatusOr<DeviceSetup> OpenPhysicalDevice(int index) {
  const absl::StatusOr<Instance>& instance = GetInstance();
  if (!instance.ok()) return instance.status();
  if (index < 0 || static_cast<size_t>(index) >= instance->compute_devices.size()) {
    return absl::UnavailableError(absl::StrCat("Vulkan device ", index, " not found: this machine has ",
                                               instance->compute_devices.size(), " Vulkan device(s) that can compute"));
  }
  DeviceSetup s;
  s.api = instance->api;
  s.physical = instance->compute_devices[index];
  const Api& api = s.api;
  api.vkGetPhysicalDeviceProperties(s.physical, &s.properties);
  api.vkGetPhysicalDeviceMemoryProperties(s.physical, &s.memory);
  HasComputeQueue(api, s.physical, &s.queue_family);

  // What the device has: the 1.2 features only where it speaks 1.2 or has their extension.
  bool core12 = s.properties.apiVersion >= VK_API_VERSION_1_2;
  std::vector<const char*> extensions;
  bool has8 = core12 || HasExtension(api, s.physical, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  bool has_f16i8 = core12 || HasExtension(api, s.physical, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  VkPhysicalDevice16BitStorageFeatures storage16 = Info<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  VkPhysicalDevice8BitStorageFeatures storage8 = Info<VkPhysicalDevice8BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  VkPhysicalDeviceShaderFloat16Int8Features f16i8 = Info<VkPhysicalDeviceShaderFloat16Int8Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  VkPhysicalDeviceFeatures2 have = Info<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  have.pNext = &storage16;
  void** tail = &storage16.pNext;
  if (has8) {
    *tail = &storage8;
    tail = &storage8.pNext;
  }
  if (has_f16i8) *tail = &f16i8;
  api.vkGetPhysicalDeviceFeatures2(s.physical, &have);

  // What is enabled: only those, so no feature with a cost (robust buffer access) is on.
  VkPhysicalDevice16BitStorageFeatures want16 = Info<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  VkPhysicalDevice8BitStorageFeatures want8 = Info<VkPhysicalDevice8BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  VkPhysicalDeviceShaderFloat16Int8Features want_f16i8 = Info<VkPhysicalDeviceShaderFloat16Int8Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  VkPhysicalDeviceFeatures2 want = Info<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  s.capabilities.insert(kCapShader);
  auto enable = [&](VkBool32 has, VkBool32& field, uint32_t capability) {
    if (!has) return;
    field = VK_TRUE;
    s.capabilities.insert(capability);
  };
  enable(have.features.shaderInt64, want.features.shaderInt64, kCapInt64);
  enable(have.features.shaderFloat64, want.features.shaderFloat64, kCapFloat64);
  enable(have.features.shaderInt16, want.features.shaderInt16, kCapInt16);
  enable(storage16.storageBuffer16BitAccess, want16.storageBuffer16BitAccess, kCapStorageBuffer16);
  want.pNext = &want16;
  tail = &want16.pNext;
  if (has8) {
    enable(storage8.storageBuffer8BitAccess, want8.storageBuffer8BitAccess, kCapStorageBuffer8);
    *tail = &want8;
    tail = &want8.pNext;
    if (!core12) extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  }
  if (has_f16i8) {
    enable(f16i8.shaderFloat16, want_f16i8.shaderFloat16, kCapFloat16);
    enable(f16i8.shaderInt8, want_f16i8.shaderInt8, kCapInt8);
    *tail = &want_f16i8;
    if (!core12) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = Info<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueFamilyIndex = s.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo info = Info<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.pNext = &want;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkResult rc = api.vkCreateDevice(s.physical, &info, nullptr, &s.device);
  if (rc != VK_SUCCESS) {
    return absl::UnavailableError(Failed(absl::StrCat("opening Vulkan device ", index, " (", s.properties.deviceName, ")"), rc));
  }
  if (absl::Status st = LoadDeviceFunctions(s.device, s.api); !st.ok()) return st;
  return s;
}

// A memory type among `type_bits` with all of `flags`, or -1.
int FindMemoryType(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits, VkMemoryPropertyFlags flags) {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & flags) == flags) return static_cast<int>(i);
  }
  return -1;
}

constexpr VkMemoryPropertyFlags kHostMapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

}  // namespace

VulkanDevice::VulkanDevice(int index, DeviceSetup setup, const VulkanDeviceOptions& options)
    : index_(index), setup_(std::move(setup)), options_(options) {}

std::string VulkanDevice::name() const { return absl::StrCat("vulkan:", index_); }

std::string VulkanDevice::description() const {
  return absl::StrCat(name(), " (", setup_.properties.deviceName, ")");
}

absl::Status VulkanDevice::Init() {
  const Api& api = setup_.api;
  api.vkGetDeviceQueue(setup_.device, setup_.queue_family, 0, &queue_);
  // The memory type buffers take: probe with a small storage buffer.
  VkBufferCreateInfo probe = Info<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  probe.size = 256;
  probe.usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkResult rc = api.vkCreateBuffer(setup_.device, &probe, nullptr, &buffer);
  if (rc != VK_SUCCESS) return absl::UnavailableError(Failed(absl::StrCat(description(), ": creating a buffer"), rc));
  VkMemoryRequirements req;
  api.vkGetBufferMemoryRequirements(setup_.device, buffer, &req);
  api.vkDestroyBuffer(setup_.device, buffer, nullptr);
  int unified = FindMemoryType(setup_.memory, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHostMapped);
  int local = FindMemoryType(setup_.memory, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  int staging = FindMemoryType(setup_.memory, req.memoryTypeBits, kHostMapped);
  if (staging < 0) {
    return absl::UnavailableError(absl::StrCat(description(), " has no host-visible coherent memory for buffers"));
  }
  mapped_ = unified >= 0 && !options_.force_staging;
  buffer_memory_type_ = static_cast<uint32_t>(mapped_ ? unified : (local >= 0 ? local : staging));
  staging_memory_type_ = static_cast<uint32_t>(staging);

  VkCommandPoolCreateInfo pool = Info<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = setup_.queue_family;
  rc = api.vkCreateCommandPool(setup_.device, &pool, nullptr, &command_pool_);
  if (rc == VK_SUCCESS) {
    VkCommandBufferAllocateInfo alloc = Info<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    alloc.commandPool = command_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    rc = api.vkAllocateCommandBuffers(setup_.device, &alloc, &commands_);
  }
  if (rc == VK_SUCCESS) {
    VkFenceCreateInfo fence = Info<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    rc = api.vkCreateFence(setup_.device, &fence, nullptr, &fence_);
  }
  if (rc == VK_SUCCESS) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kStorageBuffersPerPool};
    VkDescriptorPoolCreateInfo pool_info = Info<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    pool_info.maxSets = kDescriptorSetsPerPool;
    pool_info.poolSizeCount = 1;
    pool_info.pPoolSizes = &size;
    rc = api.vkCreateDescriptorPool(setup_.device, &pool_info, nullptr, &descriptor_pool_);
  }
  if (rc != VK_SUCCESS) return absl::UnavailableError(Failed(absl::StrCat(description(), ": creating its queue's objects"), rc));
  return absl::OkStatus();
}

VulkanDevice::~VulkanDevice() {
  const Api& api = setup_.api;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    (void)Flush("finishing before the device closes");
    for (auto& [start, a] : allocations_) Release(a);
    allocations_.clear();
    Release(staging_);
  }
  api.vkDeviceWaitIdle(setup_.device);
  if (descriptor_pool_) api.vkDestroyDescriptorPool(setup_.device, descriptor_pool_, nullptr);
  if (fence_) api.vkDestroyFence(setup_.device, fence_, nullptr);
  if (command_pool_) api.vkDestroyCommandPool(setup_.device, command_pool_, nullptr);
  api.vkDestroyDevice(setup_.device, nullptr);
}

void VulkanDevice::Release(Allocation& a) {
  const Api& api = setup_.api;
  if (a.reserved_bytes > 0) munmap(a.address, a.reserved_bytes);
  if (a.buffer) api.vkDestroyBuffer(setup_.device, a.buffer, nullptr);
  if (a.memory) api.vkFreeMemory(setup_.device, a.memory, nullptr);  // unmaps it too
  a = Allocation{};
}

VkResult VulkanDevice::CreateBuffer(VkBufferUsageFlags usage, uint32_t memory_type, Allocation& a) {
  const Api& api = setup_.api;
  VkBufferCreateInfo info = Info<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = a.size;
  info.usage = usage;
  VkResult rc = api.vkCreateBuffer(setup_.device, &info, nullptr, &a.buffer);
  if (rc != VK_SUCCESS) return rc;
  VkMemoryRequirements req;
  api.vkGetBufferMemoryRequirements(setup_.device, a.buffer, &req);
  VkMemoryAllocateInfo alloc = Info<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory_type;
  rc = api.vkAllocateMemory(setup_.device, &alloc, nullptr, &a.memory);
  if (rc != VK_SUCCESS) return rc;
  return api.vkBindBufferMemory(setup_.device, a.buffer, a.memory, 0);
}

absl::StatusOr<void*> VulkanDevice::Allocate(size_t bytes, size_t alignment) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (alignment > page) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": alignment ", alignment, " exceeds the supported ", page, " bytes"));
  }
  const Api& api = setup_.api;
  Allocation a;
  // Kernels read whole 32-bit words; an empty tensor still needs a buffer to bind.
  a.size = std::max<uint64_t>((bytes + 3) / 4 * 4, 4);
  VkResult rc = CreateBuffer(
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      buffer_memory_type_, a);
  if (rc == VK_SUCCESS && mapped_) {
    void* p = nullptr;
    rc = api.vkMapMemory(setup_.device, a.memory, 0, VK_WHOLE_SIZE, 0, &p);
    a.address = static_cast<char*>(p);
  }
  if (rc != VK_SUCCESS) {
    Release(a);
    return absl::ResourceExhaustedError(Failed(absl::StrCat(name(), ": allocating ", bytes, " bytes"), rc));
  }
  if (!mapped_) {
    // An address range standing for the buffer: unique, aligned, and faulting if the host
    // ever dereferences it.
    a.reserved_bytes = (a.size + page - 1) / page * page;
    void* p = mmap(nullptr, a.reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      a.reserved_bytes = 0;
      Release(a);
      return absl::ResourceExhaustedError(absl::StrCat(name(), ": reserving addresses for ", bytes, " bytes failed"));
    }
    a.address = static_cast<char*>(p);
  }
  if (reinterpret_cast<uintptr_t>(a.address) % alignment != 0) {
    Release(a);
    return absl::InternalError(
        absl::StrCat(name(), ": the driver mapped memory at an address not aligned to ", alignment, " bytes"));
  }
  void* address = a.address;
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_[reinterpret_cast<uintptr_t>(address)] = a;
  return address;
}

void VulkanDevice::Free(void* ptr, size_t) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == allocations_.end()) return;
  // Queued kernels may use it: run them first.
  (void)Flush("finishing the kernels before freeing memory");
  Release(it->second);
  allocations_.erase(it);
}

absl::StatusOr<BufferSpan> VulkanDevice::Resolve(const void* ptr, uint64_t bytes) const {
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = allocations_.upper_bound(p);
  if (ptr != nullptr && it != allocations_.begin()) {
    --it;
    uint64_t offset = p - it->first;
    if (offset <= it->second.size && bytes <= it->second.size - offset) return BufferSpan{&it->second, offset};
  }
  return absl::InvalidArgumentError(absl::StrCat("address 0x", absl::Hex(p), " (", bytes, " bytes) is not memory of ", name()));
}

absl::StatusOr<VkCommandBuffer> VulkanDevice::Record() {
  const Api& api = setup_.api;
  if (!recording_) {
    VkCommandBufferBeginInfo begin = Info<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult rc = api.vkBeginCommandBuffer(commands_, &begin);
    if (rc != VK_SUCCESS) return absl::InternalError(Failed(absl::StrCat(name(), ": beginning a command buffer"), rc));
    recording_ = true;
  } else if (any_recorded_) {
    // Each command sees what the ones before it wrote (kernels and copies alike).
    VkMemoryBarrier barrier = Info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    api.vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  }
  any_recorded_ = true;
  return commands_;
}

absl::Status VulkanDevice::Flush(const std::string& what) {
  if (!recording_) return absl::OkStatus();
  const Api& api = setup_.api;
  recording_ = false;
  any_recorded_ = false;
  // The host reads what the commands wrote once the fence is signalled.
  VkMemoryBarrier barrier = Info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  VkResult rc = api.vkEndCommandBuffer(commands_);
  if (rc == VK_SUCCESS) {
    VkSubmitInfo submit = Info<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    rc = api.vkQueueSubmit(queue_, 1, &submit, fence_);
    if (rc == VK_SUCCESS) {
      rc = api.vkWaitForFences(setup_.device, 1, &fence_, VK_TRUE, UINT64_MAX);
      api.vkResetFences(setup_.device, 1, &fence_);
    }
  }
  api.vkResetCommandBuffer(commands_, 0);
  api.vkResetDescriptorPool(setup_.device, descriptor_pool_, 0);
  if (rc != VK_SUCCESS) return absl::InternalError(Failed(absl::StrCat(description(), ": ", what), rc));
  return absl::OkStatus();
}

absl::StatusOr<VkDescriptorSet> VulkanDevice::AllocateDescriptorSet(VkDescriptorSetLayout layout) {
  VkDescriptorSetAllocateInfo info = Info<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  info.descriptorPool = descriptor_pool_;
  info.descriptorSetCount = 1;
  info.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult rc = setup_.api.vkAllocateDescriptorSets(setup_.device, &info, &set);
  if (rc == VK_ERROR_OUT_OF_POOL_MEMORY || rc == VK_ERROR_FRAGMENTED_POOL) {
    // The pool serves the commands recorded so far: run them, and it is free again.
    if (absl::Status s = Flush("running the queued kernels"); !s.ok()) return s;
    rc = setup_.api.vkAllocateDescriptorSets(setup_.device, &info, &set);
  }
  if (rc != VK_SUCCESS) return absl::InternalError(Failed(absl::StrCat(name(), ": allocating a descriptor set"), rc));
  return set;
}

absl::Status VulkanDevice::CopyThroughStaging(const BufferSpan& span, void* host, uint64_t bytes, bool to_device) {
  const Api& api = setup_.api;
  if (staging_.size < bytes) {
    Release(staging_);
    Allocation s;
    s.size = std::max<uint64_t>(bytes, 1 << 20);
    VkResult rc = CreateBuffer(VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               staging_memory_type_, s);
    void* p = nullptr;
    if (rc == VK_SUCCESS) rc = api.vkMapMemory(setup_.device, s.memory, 0, VK_WHOLE_SIZE, 0, &p);
    s.address = static_cast<char*>(p);
    if (rc != VK_SUCCESS) {
      Release(s);
      return absl::ResourceExhaustedError(Failed(absl::StrCat(name(), ": a staging buffer of ", bytes, " bytes"), rc));
    }
    staging_ = s;
  }
  if (to_device) std::memcpy(staging_.address, host, bytes);
  absl::StatusOr<VkCommandBuffer> commands = Record();
  if (!commands.ok()) return commands.status();
  VkBufferCopy region{};
  region.size = bytes;
  if (to_device) {
    region.dstOffset = span.offset;
    api.vkCmdCopyBuffer(*commands, staging_.buffer, span.allocation->buffer, 1, &region);
  } else {
    region.srcOffset = span.offset;
    api.vkCmdCopyBuffer(*commands, span.allocation->buffer, staging_.buffer, 1, &region);
  }
  if (absl::Status s = Flush(to_device ? "copy from host" : "copy to host"); !s.ok()) return s;
  if (!to_device) std::memcpy(host, staging_.address, bytes);
  return absl::OkStatus();
}

absl::Status VulkanDevice::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<BufferSpan> span = Resolve(src, bytes);
  if (!span.ok()) return span.status();
  // The kernels writing it run first.
  if (absl::Status s = Flush("running the queued kernels before a copy to host"); !s.ok()) return s;
  if (mapped_) {
    std::memcpy(host_dst, src, bytes);
    return absl::OkStatus();
  }
  return CopyThroughStaging(*span, host_dst, bytes, /*to_device=*/false);
}

absl::Status VulkanDevice::CopyFromHost(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<BufferSpan> span = Resolve(dst, bytes);
  if (!span.ok()) return span.status();
  // Queued kernels may still read what is overwritten.
  if (absl::Status s = Flush("running the queued kernels before a copy from host"); !s.ok()) return s;
  if (mapped_) {
    std::memcpy(dst, host_src, bytes);
    return absl::OkStatus();
  }
  return CopyThroughStaging(*span, const_cast<void*>(host_src), bytes, /*to_device=*/true);
}

absl::Status VulkanDevice::Synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  return Flush("running the queued kernels");
}

}  // namespace vulkan

absl::Status VulkanAvailable() { return vulkan::GetInstance().status(); }

absl::StatusOr<std::unique_ptr<Device>> OpenVulkanDevice(int index, const VulkanDeviceOptions& options) {
  absl::StatusOr<vulkan::DeviceSetup> setup = vulkan::OpenPhysicalDevice(index);
  if (!setup.ok()) return setup.status();
  auto device = std::make_unique<vulkan::VulkanDevice>(index, *std::move(setup), options);
  if (absl::Status s = device->Init(); !s.ok()) return s;
  return std::unique_ptr<Device>(std::move(device));
}

absl::StatusOr<Device*> CreateVulkanDevice(int index) {
  absl::StatusOr<std::unique_ptr<Device>> device = OpenVulkanDevice(index, VulkanDeviceOptions{});
  if (!device.ok()) return device.status();
  // Lives for the process, like the device table that holds it.
  return device->release();
}

}  // namespace kiln::vm
