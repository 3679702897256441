#include "vm/vulkan_loader.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace kiln::vm::vulkan {

const absl::StatusOr<Api>& Loader() {
  static const absl::StatusOr<Api>* api = []() -> absl::StatusOr<Api>* {
    void* handle = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      return new absl::StatusOr<Api>(absl::UnavailableError(
          absl::StrCat("no Vulkan loader found (libvulkan.so.1): ", e ? e : "dlopen failed")));
    }
    Api a;
    a.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
    if (a.vkGetInstanceProcAddr == nullptr) {
      return new absl::StatusOr<Api>(
          absl::UnavailableError("the Vulkan loader (libvulkan.so.1) lacks vkGetInstanceProcAddr"));
    }
    a.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(a.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
    // vkEnumerateInstanceVersion is absent from Vulkan 1.0 loaders, which cannot run the
    // SPIR-V 1.3 the compiler writes.
    a.vkEnumerateInstanceVersion =
        reinterpret_cast<PFN_vkEnumerateInstanceVersion>(a.vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
    if (a.vkCreateInstance == nullptr || a.vkEnumerateInstanceVersion == nullptr) {
      return new absl::StatusOr<Api>(
          absl::UnavailableError("the Vulkan loader (libvulkan.so.1) is older than Vulkan 1.1"));
    }
    return new absl::StatusOr<Api>(a);
  }();
  return *api;
}

absl::Status LoadInstanceFunctions(VkInstance instance, Api& api) {
  std::string missing;
#define KILN_VULKAN_LOAD(name)                                                                 \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name));        \
  if (api.name == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", #name);
  KILN_VULKAN_INSTANCE_FUNCTIONS(KILN_VULKAN_LOAD)
#undef KILN_VULKAN_LOAD
  if (!missing.empty()) return absl::UnavailableError(absl::StrCat("the Vulkan instance lacks ", missing));
  return absl::OkStatus();
}

absl::Status LoadDeviceFunctions(VkDevice device, Api& api) {
  std::string missing;
#define KILN_VULKAN_LOAD(name)                                                            \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetDeviceProcAddr(device, #name));       \
  if (api.name == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", #name);
  KILN_VULKAN_DEVICE_FUNCTIONS(KILN_VULKAN_LOAD)
#undef KILN_VULKAN_LOAD
  if (!missing.empty()) return absl::UnavailableError(absl::StrCat("the Vulkan device lacks ", missing));
  return absl::OkStatus();
}

std::string ResultName(VkResult result) {
  switch (result) {
#define KILN_VULKAN_RESULT(name) \
  case name: return #name;
    KILN_VULKAN_RESULT(VK_SUCCESS)
    KILN_VULKAN_RESULT(VK_NOT_READY)
    KILN_VULKAN_RESULT(VK_TIMEOUT)
    KILN_VULKAN_RESULT(VK_INCOMPLETE)
    KILN_VULKAN_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VULKAN_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KILN_VULKAN_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VULKAN_RESULT(VK_ERROR_DEVICE_LOST)
    KILN_VULKAN_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VULKAN_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    KILN_VULKAN_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VULKAN_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    KILN_VULKAN_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VULKAN_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    KILN_VULKAN_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VULKAN_RESULT(VK_ERROR_FRAGMENTED_POOL)
    KILN_VULKAN_RESULT(VK_ERROR_UNKNOWN)
    KILN_VULKAN_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VULKAN_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    KILN_VULKAN_RESULT(VK_ERROR_FRAGMENTATION)
    KILN_VULKAN_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef KILN_VULKAN_RESULT
    default: return absl::StrCat("VkResult ", static_cast<int>(result));
  }
}

}  // namespace kiln::vm::vulkan
