// The Vulkan device: buffers, host<->device copies and compute dispatches of SPIR-V kernels
// through the Vulkan API, whose loader (libvulkan.so.1) is opened with dlopen on first use
// and never linked, so the runtime starts on machines without Vulkan.
//
// The device table (vm/device.h) knows the kind "vulkan" from the start; the first
// GetDevice("vulkan:N") creates one Vulkan instance for the process, takes the N-th physical
// device that can compute (Vulkan 1.1 or later), and creates a logical device with one
// compute queue and the features the kernel contract (docs/vm.md, "Vulkan") lets a module
// use, where the device has them. Without a loader or such a device, that is one line:
//     no Vulkan loader found (libvulkan.so.1): libvulkan.so.1: cannot open shared object ...
//     Vulkan device 1 not found: this machine has 1 Vulkan device(s) that can compute
//
// Memory: every allocation is a VkBuffer with its own VkDeviceMemory. Where the device has
// memory that is both device-local and host-visible (lavapipe, integrated GPUs), it is
// mapped and its host address is the tensor's data pointer, so copies are memcpy. Otherwise
// the memory is device-local, the data pointer is an address reserved for it (never
// readable: PROT_NONE) and copies go through a host-visible staging buffer. Either way a
// pointer is resolved to (buffer, offset) by the allocation that contains it, so pointers
// into a storage (tensors placed at offsets) work as on the CPU.
//
// Kernels: a DeviceCode of kind "vulkan" holds one SPIR-V module with a GLCompute entry point
// per kernel; its entry points and capabilities are checked when it is loaded, and each
// kernel's pipeline (descriptor set layout from its handle parameters, push constants from
// the others) is built on first launch and kept for the module's life. Launches are recorded
// into one command buffer and submitted together, with a barrier between dispatches, when
// the host next needs the results (a copy, Free, Synchronize); errors then name the VkResult.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "vm/device.h"

namespace kiln::vm {

struct VulkanDeviceOptions {
  // Uses device-local memory and staging copies even where host-visible device memory
  // exists (to exercise the path discrete GPUs take).
  bool force_staging = false;
};

// The factory RegisterDeviceKind holds for kDLVulkan: device `index`, created on first use
// and kept for the life of the process.
absl::StatusOr<Device*> CreateVulkanDevice(int index);

// A device owned by the caller, with `options`; it must outlive the modules it loads and
// the memory it allocates.
absl::StatusOr<std::unique_ptr<Device>> OpenVulkanDevice(int index, const VulkanDeviceOptions& options);

// Whether a Vulkan loader and at least one device that can compute are present; the error
// is the one-line reason.
absl::Status VulkanAvailable();

}  // namespace kiln::vm
