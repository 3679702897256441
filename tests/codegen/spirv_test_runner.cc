#include "tests/codegen/spirv_test_runner.h"

// Vulkan's structs are filled as `VkFoo foo{VK_STRUCTURE_TYPE_FOO}`: the rest zero, as the API
// intends.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <vulkan/vulkan.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::codegen::testing {

namespace {

absl::Status Check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, " failed: VkResult ", static_cast<int>(r)));
}

#define RUNNER_CHECK(call, what)                 \
  do {                                           \
    absl::Status s_ = Check((call), what);       \
    if (!s_.ok()) return s_;                     \
  } while (0)

}  // namespace

struct SpirvTestRunner::State {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  std::string name;
};

SpirvTestRunner::SpirvTestRunner(std::unique_ptr<State> state) : state_(std::move(state)) {}

SpirvTestRunner::~SpirvTestRunner() {
  if (state_->pool) vkDestroyCommandPool(state_->device, state_->pool, nullptr);
  if (state_->device) vkDestroyDevice(state_->device, nullptr);
  if (state_->instance) vkDestroyInstance(state_->instance, nullptr);
}

std::string SpirvTestRunner::device_name() const { return state_->name; }

absl::StatusOr<std::unique_ptr<SpirvTestRunner>> SpirvTestRunner::Create() {
  auto state = std::make_unique<State>();
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln-spirv-test";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instance_info.pApplicationInfo = &app;
  if (vkCreateInstance(&instance_info, nullptr, &state->instance) != VK_SUCCESS) {
    return absl::UnavailableError("no Vulkan instance (loader or driver missing)");
  }
  std::unique_ptr<SpirvTestRunner> runner(new SpirvTestRunner(std::move(state)));
  State& s = *runner->state_;
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(s.instance, &count, nullptr);
  if (count == 0) return absl::UnavailableError("no Vulkan device");
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(s.instance, &count, devices.data());
  s.physical = devices[0];
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(s.physical, &props);
  s.name = props.deviceName;
  if (props.apiVersion < VK_API_VERSION_1_2) return absl::UnavailableError(s.name + " is below Vulkan 1.2");

  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(s.physical, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family_props(families);
  vkGetPhysicalDeviceQueueFamilyProperties(s.physical, &families, family_props.data());
  bool found = false;
  for (uint32_t i = 0; i < families && !found; ++i) {
    if (family_props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) s.queue_family = i, found = true;
  }
  if (!found) return absl::UnavailableError(s.name + " has no compute queue");

  // Every feature the device has among those the kernels may declare.
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  v11.pNext = &v12;
  VkPhysicalDeviceFeatures2 available{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  available.pNext = &v11;
  vkGetPhysicalDeviceFeatures2(s.physical, &available);
  VkPhysicalDeviceVulkan12Features want12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  want12.storageBuffer8BitAccess = v12.storageBuffer8BitAccess;
  want12.shaderFloat16 = v12.shaderFloat16;
  want12.shaderInt8 = v12.shaderInt8;
  VkPhysicalDeviceVulkan11Features want11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  want11.storageBuffer16BitAccess = v11.storageBuffer16BitAccess;
  want11.pNext = &want12;
  VkPhysicalDeviceFeatures2 want{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  want.features.shaderInt64 = available.features.shaderInt64;
  want.features.shaderFloat64 = available.features.shaderFloat64;
  want.features.shaderInt16 = available.features.shaderInt16;
  want.pNext = &want11;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = s.queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.pNext = &want;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  RUNNER_CHECK(vkCreateDevice(s.physical, &device_info, nullptr, &s.device), "vkCreateDevice");
  vkGetDeviceQueue(s.device, s.queue_family, 0, &s.queue);
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = s.queue_family;
  RUNNER_CHECK(vkCreateCommandPool(s.device, &pool_info, nullptr, &s.pool), "vkCreateCommandPool");
  return runner;
}

absl::Status SpirvTestRunner::Run(const std::string& module, const std::string& entry,
                                  const std::vector<std::string*>& buffers, const std::vector<uint64_t>& push,
                                  std::array<uint32_t, 3> groups) {
  State& s = *state_;
  VkDevice d = s.device;
  // Everything created below is destroyed on every path out.
  struct Objects {
    VkDevice d;
    std::vector<VkBuffer> buffers;
    std::vector<VkDeviceMemory> memory;
    VkShaderModule shader = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool descriptors = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    ~Objects() {
      if (fence) vkDestroyFence(d, fence, nullptr);
      if (descriptors) vkDestroyDescriptorPool(d, descriptors, nullptr);
      if (pipeline) vkDestroyPipeline(d, pipeline, nullptr);
      if (layout) vkDestroyPipelineLayout(d, layout, nullptr);
      if (set_layout) vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
      if (shader) vkDestroyShaderModule(d, shader, nullptr);
      for (VkBuffer b : buffers) vkDestroyBuffer(d, b, nullptr);
      for (VkDeviceMemory m : memory) vkFreeMemory(d, m, nullptr);
    }
  } o{d};

  VkPhysicalDeviceMemoryProperties mem_props;
  vkGetPhysicalDeviceMemoryProperties(s.physical, &mem_props);
  for (std::string* bytes : buffers) {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = std::max<size_t>(16, (bytes->size() + 15) / 16 * 16);
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer buffer;
    RUNNER_CHECK(vkCreateBuffer(d, &info, nullptr, &buffer), "vkCreateBuffer");
    o.buffers.push_back(buffer);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d, buffer, &req);
    uint32_t type = UINT32_MAX;
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < mem_props.memoryTypeCount && type == UINT32_MAX; ++i) {
      if ((req.memoryTypeBits & (1u << i)) && (mem_props.memoryTypes[i].propertyFlags & want) == want) type = i;
    }
    if (type == UINT32_MAX) return absl::UnavailableError("no host-visible coherent memory");
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = type;
    VkDeviceMemory memory;
    RUNNER_CHECK(vkAllocateMemory(d, &alloc, nullptr, &memory), "vkAllocateMemory");
    o.memory.push_back(memory);
    RUNNER_CHECK(vkBindBufferMemory(d, buffer, memory, 0), "vkBindBufferMemory");
    void* mapped;
    RUNNER_CHECK(vkMapMemory(d, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
    std::memset(mapped, 0, info.size);
    std::memcpy(mapped, bytes->data(), bytes->size());
    vkUnmapMemory(d, memory);
  }

  VkShaderModuleCreateInfo shader_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shader_info.codeSize = module.size();
  shader_info.pCode = reinterpret_cast<const uint32_t*>(module.data());
  RUNNER_CHECK(vkCreateShaderModule(d, &shader_info, nullptr, &o.shader), "vkCreateShaderModule");

  std::vector<VkDescriptorSetLayoutBinding> bindings(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    bindings[i] = {static_cast<uint32_t>(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = static_cast<uint32_t>(bindings.size());
  set_info.pBindings = bindings.data();
  RUNNER_CHECK(vkCreateDescriptorSetLayout(d, &set_info, nullptr, &o.set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(8 * push.size())};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &o.set_layout;
  layout_info.pushConstantRangeCount = push.empty() ? 0 : 1;
  layout_info.pPushConstantRanges = &range;
  RUNNER_CHECK(vkCreatePipelineLayout(d, &layout_info, nullptr, &o.layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = o.shader;
  pipeline_info.stage.pName = entry.c_str();
  pipeline_info.layout = o.layout;
  RUNNER_CHECK(vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &o.pipeline),
               "vkCreateComputePipelines");

  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max<uint32_t>(1, buffers.size())};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  RUNNER_CHECK(vkCreateDescriptorPool(d, &pool_info, nullptr, &o.descriptors), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo set_alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_alloc.descriptorPool = o.descriptors;
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &o.set_layout;
  VkDescriptorSet set;
  RUNNER_CHECK(vkAllocateDescriptorSets(d, &set_alloc, &set), "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {o.buffers[i], 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(d, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

  VkCommandBufferAllocateInfo cmd_alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cmd_alloc.commandPool = s.pool;
  cmd_alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cmd_alloc.commandBufferCount = 1;
  VkCommandBuffer cmd;
  RUNNER_CHECK(vkAllocateCommandBuffers(d, &cmd_alloc, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cmd, &begin);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, o.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, o.layout, 0, 1, &set, 0, nullptr);
  if (!push.empty()) {
    vkCmdPushConstants(cmd, o.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(8 * push.size()),
                       push.data());
  }
  vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
  vkEndCommandBuffer(cmd);
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  RUNNER_CHECK(vkCreateFence(d, &fence_info, nullptr, &o.fence), "vkCreateFence");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  absl::Status done = Check(vkQueueSubmit(s.queue, 1, &submit, o.fence), "vkQueueSubmit");
  if (done.ok()) done = Check(vkWaitForFences(d, 1, &o.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vkFreeCommandBuffers(d, s.pool, 1, &cmd);
  if (!done.ok()) return done;
  for (size_t i = 0; i < buffers.size(); ++i) {
    void* mapped;
    RUNNER_CHECK(vkMapMemory(d, o.memory[i], 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
    std::memcpy(buffers[i]->data(), mapped, buffers[i]->size());
    vkUnmapMemory(d, o.memory[i]);
  }
  return absl::OkStatus();
}

}  // namespace kiln::codegen::testing
