// VulkanTestDevice: a vm::Device of kind vulkan for the code generator's tests, whose memory
// is host memory and whose kernels run on a real Vulkan device (lavapipe here) through
// SpirvTestRunner: each launch copies the buffers its handles point into to the GPU, runs the
// entry point per the kernel contract (docs/codegen.md, "Vulkan"), and copies back the bytes
// the kernel changed. It lets the op harness check generated SPIR-V through the whole VM
// against the reference evaluator independently of the runtime's Vulkan device (vm/).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "tests/codegen/spirv_test_runner.h"
#include "vm/device.h"

namespace kiln::codegen::testing {

// The test device over `runner` (which it keeps); DLDevice {kDLVulkan, 0}.
std::unique_ptr<vm::Device> MakeVulkanTestDevice(std::shared_ptr<SpirvTestRunner> runner);

}  // namespace kiln::codegen::testing
