#include "support/file_format.h"

#include <cstdint>

namespace kiln::support {

std::string FileFormatName(std::string_view head) {
  auto starts = [&](std::string_view signature) { return head.substr(0, signature.size()) == signature; };
  // vm/executable.h's kExecutableMagic (support/ cannot include vm/).
  if (starts(std::string_view("KILNEXE\0", 8))) return "a Kiln executable (.kx)";
  if (starts("GGUF")) return "a GGUF model (.gguf)";
  if (starts("\x93NUMPY")) return "a NumPy array (.npy)";
  if (starts("PK\x03\x04")) return "a zip archive (e.g. a PyTorch .pt checkpoint)";
  if (starts("\x7f" "ELF")) return "an ELF binary";
  // safetensors: an 8-byte little-endian header length, then the JSON header.
  if (head.size() >= 10 && head[8] == '{' && head[9] == '"' && head[6] == '\0' && head[7] == '\0') {
    return "a safetensors file";
  }
  return "";
}

}  // namespace kiln::support
