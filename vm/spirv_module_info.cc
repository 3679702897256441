#include "vm/spirv_module_info.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::vm {
namespace {

// From the SPIR-V specification (section 3): the values this reader needs.
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kExecutionModelGLCompute = 5;
constexpr size_t kHeaderWords = 5;

}  // namespace

absl::StatusOr<SpirvModuleInfo> ReadSpirvModuleInfo(const std::string& bytes) {
  if (bytes.size() % 4 != 0 || bytes.size() < kHeaderWords * 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("a SPIR-V module is a sequence of 32-bit words with a 5-word header; this one has ",
                     bytes.size(), " bytes"));
  }
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  if (words[0] != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat("not a SPIR-V module (magic 0x", absl::Hex(words[0]),
                                                   ", expected 0x07230203 little-endian)"));
  }
  SpirvModuleInfo info;
  for (size_t at = kHeaderWords; at < words.size();) {
    uint32_t count = words[at] >> 16, opcode = words[at] & 0xffff;
    if (count == 0 || at + count > words.size()) {
      return absl::InvalidArgumentError(absl::StrCat("SPIR-V module: instruction at word ", at, " (opcode ", opcode,
                                                     ") has a bad word count ", count));
    }
    if (opcode == kOpCapability && count >= 2) {
      info.capabilities.push_back(words[at + 1]);
    } else if (opcode == kOpEntryPoint && count >= 4 && words[at + 1] == kExecutionModelGLCompute) {
      // The name is a NUL-terminated string packed from word 3 on.
      const char* name = reinterpret_cast<const char*>(&words[at + 3]);
      size_t limit = (count - 3) * 4;
      info.compute_entry_points.emplace_back(name, strnlen(name, limit));
    }
    at += count;
  }
  return info;
}

std::string SpirvCapabilityName(uint32_t capability) {
  switch (capability) {
    case 1: return "Shader";
    case 9: return "Float16";
    case 10: return "Float64";
    case 11: return "Int64";
    case 22: return "Int16";
    case 39: return "Int8";
    case 4433: return "StorageBuffer16BitAccess";
    case 4448: return "StorageBuffer8BitAccess";
    default: return absl::StrCat("capability ", capability);
  }
}

}  // namespace kiln::vm
