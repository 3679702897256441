// A whole file mapped read-only into memory (mmap, MAP_PRIVATE, PROT_READ). The bytes are
// never copied: readers of large files (GGUF weights) hand out pointers into the mapping,
// and the page cache is shared between processes that map the same file. The mapping lives
// as long as the MappedFile; callers that hand out pointers keep a shared_ptr to it.
//
// Writing to the file while it is mapped changes what the mapping shows (and truncating it
// makes access past the new end fault): like every mmap-based loader, Kiln assumes model
// files are not modified in place while in use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::formats {

class MappedFile {
 public:
  // Maps `path`. Errors name the path and the OS reason (missing file, a directory, ...).
  // An empty file maps to an empty byte range.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(std::string path, void* data, uint64_t size) : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  void* data_;  // nullptr for an empty file
  uint64_t size_;
};

}  // namespace kiln::formats
