// SpirvTestRunner: runs one entry point of a SPIR-V module on a Vulkan device (Mesa's
// lavapipe on the CI machines) with host-visible buffers, for the emitter's tests: they check
// what generated kernels compute without the VM's Vulkan device (vm/), so a failure points at
// the code generator. Not a runtime: one synchronous dispatch per call, no caching.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::codegen::testing {

class SpirvTestRunner {
 public:
  // The first Vulkan device, with every feature the kernel contract may use that it has
  // (int64, float64, int16, int8, float16, 8- and 16-bit storage) enabled. Unavailable: no
  // loader, no device.
  static absl::StatusOr<std::unique_ptr<SpirvTestRunner>> Create();
  ~SpirvTestRunner();

  std::string device_name() const;

  // Runs `entry` of `module` over `groups` workgroups. buffers[b] is bound at set 0,
  // binding b (its bytes copied in, and back out after the dispatch); `push` holds the
  // push-constant block's 8-byte slots.
  absl::Status Run(const std::string& module, const std::string& entry, const std::vector<std::string*>& buffers,
                   const std::vector<uint64_t>& push, std::array<uint32_t, 3> groups);

 private:
  struct State;
  explicit SpirvTestRunner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kiln::codegen::testing
