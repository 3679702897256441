// What the Vulkan device needs to know of a SPIR-V module before handing it to the driver:
// its GLCompute entry points and the capabilities it declares. A driver given a pipeline
// whose entry point is missing, or whose capability the device lacks, may crash instead of
// failing; reading them first turns both into one clear line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::vm {

struct SpirvModuleInfo {
  std::vector<std::string> compute_entry_points;  // names of the GLCompute entry points
  std::vector<uint32_t> capabilities;             // SpvCapability values, as declared
};

// Reads `bytes` (a SPIR-V module, little-endian words); an error says what is malformed.
absl::StatusOr<SpirvModuleInfo> ReadSpirvModuleInfo(const std::string& bytes);

// "Int64", "StorageBuffer16BitAccess", ... or "capability N" for one not known here.
std::string SpirvCapabilityName(uint32_t capability);

}  // namespace kiln::vm
