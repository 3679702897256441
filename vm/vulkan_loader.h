// The Vulkan API as the runtime uses it: function pointers taken from the loader
// (libvulkan.so.1) opened with dlopen, never linked, so a runtime built anywhere starts on a
// machine without Vulkan and says so in one line.
//
// Only the loader's entry vkGetInstanceProcAddr is looked up with dlsym; instance-level
// functions come from it once an instance exists, device-level ones from
// vkGetDeviceProcAddr (which skips the loader's dispatch trampoline).
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan_core.h>

#include <string>

#include "absl/status/statusor.h"

namespace kiln::vm::vulkan {

// Global functions (no instance needed).
#define KILN_VULKAN_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance)                   \
  X(vkEnumerateInstanceVersion)

// Functions of an instance and its physical devices.
#define KILN_VULKAN_INSTANCE_FUNCTIONS(X)   \
  X(vkDestroyInstance)                      \
  X(vkEnumeratePhysicalDevices)             \
  X(vkGetPhysicalDeviceProperties)          \
  X(vkGetPhysicalDeviceFeatures2)           \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)    \
  X(vkEnumerateDeviceExtensionProperties)   \
  X(vkCreateDevice)                         \
  X(vkGetDeviceProcAddr)

// Functions of a logical device.
#define KILN_VULKAN_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                    \
  X(vkGetDeviceQueue)                   \
  X(vkDeviceWaitIdle)                   \
  X(vkCreateBuffer)                     \
  X(vkDestroyBuffer)                    \
  X(vkGetBufferMemoryRequirements)      \
  X(vkAllocateMemory)                   \
  X(vkFreeMemory)                       \
  X(vkBindBufferMemory)                 \
  X(vkMapMemory)                        \
  X(vkUnmapMemory)                      \
  X(vkCreateShaderModule)               \
  X(vkDestroyShaderModule)              \
  X(vkCreateDescriptorSetLayout)        \
  X(vkDestroyDescriptorSetLayout)       \
  X(vkCreatePipelineLayout)             \
  X(vkDestroyPipelineLayout)            \
  X(vkCreateComputePipelines)           \
  X(vkDestroyPipeline)                  \
  X(vkCreateDescriptorPool)             \
  X(vkDestroyDescriptorPool)            \
  X(vkResetDescriptorPool)              \
  X(vkAllocateDescriptorSets)           \
  X(vkUpdateDescriptorSets)             \
  X(vkCreateCommandPool)                \
  X(vkDestroyCommandPool)               \
  X(vkAllocateCommandBuffers)           \
  X(vkBeginCommandBuffer)               \
  X(vkEndCommandBuffer)                 \
  X(vkResetCommandBuffer)               \
  X(vkCmdBindPipeline)                  \
  X(vkCmdBindDescriptorSets)            \
  X(vkCmdPushConstants)                 \
  X(vkCmdDispatch)                      \
  X(vkCmdCopyBuffer)                    \
  X(vkCmdPipelineBarrier)               \
  X(vkQueueSubmit)                      \
  X(vkCreateFence)                      \
  X(vkDestroyFence)                     \
  X(vkWaitForFences)                    \
  X(vkResetFences)

struct Api {
#define KILN_VULKAN_DECLARE(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  KILN_VULKAN_GLOBAL_FUNCTIONS(KILN_VULKAN_DECLARE)
  KILN_VULKAN_INSTANCE_FUNCTIONS(KILN_VULKAN_DECLARE)
  KILN_VULKAN_DEVICE_FUNCTIONS(KILN_VULKAN_DECLARE)
#undef KILN_VULKAN_DECLARE
};

// The loader opened once per process and its global functions, or the one-line reason it
// could not be (no libvulkan.so.1, or a loader without Vulkan 1.1).
const absl::StatusOr<Api>& Loader();

// Fills `api`'s instance-level functions from `instance`; an error names a missing one.
absl::Status LoadInstanceFunctions(VkInstance instance, Api& api);
// Fills `api`'s device-level functions from `device`; an error names a missing one.
absl::Status LoadDeviceFunctions(VkDevice device, Api& api);

// A Vulkan structure of type `type`, every other member zero (spelled out once here so the
// code reads `Info<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO)`).
template <typename T>
T Info(VkStructureType type) {
  T info{};
  info.sType = type;
  return info;
}

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", ... or "VkResult N".
std::string ResultName(VkResult result);

}  // namespace kiln::vm::vulkan
