#include "support/packed_strings.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::support {

std::vector<uint8_t> PackStrings(const std::vector<std::string>& strings) {
  size_t total = strings.size() * 8;
  for (const std::string& s : strings) total += s.size();
  std::vector<uint8_t> out(total);
  uint8_t* p = out.data();
  for (const std::string& s : strings) {
    const uint64_t n = s.size();
    for (int b = 0; b < 8; ++b) *p++ = static_cast<uint8_t>(n >> (8 * b));
  }
  for (const std::string& s : strings) {
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> UnpackStrings(const uint8_t* bytes, size_t size, int64_t numel) {
  if (numel < 0 || static_cast<uint64_t>(numel) > size / 8) {
    return absl::InvalidArgumentError(absl::StrCat("packed strings: ", size, " bytes cannot hold ", numel, " lengths"));
  }
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(numel));
  size_t offset = static_cast<size_t>(numel) * 8;
  for (int64_t i = 0; i < numel; ++i) {
    uint64_t n = 0;
    for (int b = 0; b < 8; ++b) n |= uint64_t{bytes[i * 8 + b]} << (8 * b);
    if (n > size - offset) {
      return absl::InvalidArgumentError(absl::StrCat("packed strings: string ", i, " of ", n,
                                                     " bytes runs past the data's end"));
    }
    out.emplace_back(reinterpret_cast<const char*>(bytes) + offset, n);
    offset += n;
  }
  if (offset != size) {
    return absl::InvalidArgumentError(absl::StrCat("packed strings: ", size - offset, " bytes left after ", numel,
                                                   " strings"));
  }
  return out;
}

}  // namespace kiln::support
