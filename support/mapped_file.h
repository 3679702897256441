// MappedFile: the read-only bytes of a file, mapped into memory rather than read, or bytes
// already in memory held the same way. Readers of large files (executables with weights,
// .npy, GGUF) hand out pointers into it instead of copying. The one mapping type of the
// project: formats/ (GGUF, .npy), vm/ (executables) and tools/ all use it.
//
// Promises:
// - Open() maps the whole file read-only and shared (mmap PROT_READ, MAP_SHARED): pages are
//   read from disk on first touch and the page cache is shared by every process mapping the
//   same file. Writing through a pointer into the mapping is a bug and faults. Every caller
//   (executables, .npy inputs, GGUF models) only reads, so MAP_PRIVATE would buy nothing: its
//   copy-on-write never happens under PROT_READ, and MAP_SHARED says plainly that the bytes
//   are the file's own pages.
// - FromBytes() keeps a string's bytes; when the string's buffer is not 64-byte aligned
//   (glibc's malloc guarantees 16) they are copied once into a 64-byte-aligned buffer, so an
//   offset that is a multiple of 64 in the file is a 64-byte-aligned address in both cases.
// - data() is 64-byte aligned (a mapping is page aligned) and stays valid, unchanged, as long
//   as any shared_ptr to the MappedFile lives; hand the shared_ptr (or an aliasing copy of
//   it) to whatever views the bytes.
// - Replacing the file on disk by writing a new one and renaming it over the old (what
//   support::WriteFile does) leaves existing mappings intact; truncating a mapped file in
//   place would not (the OS raises SIGBUS on access), which is why WriteFile never does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::support {

class MappedFile {
 public:
  // Maps the file at `path`; the error names the path and the OS reason.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  // Holds `bytes` (see above for alignment). `name` is what errors call it.
  static std::shared_ptr<const MappedFile> FromBytes(std::string bytes, std::string name = "<memory>");

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  // The path given to Open, or the name given to FromBytes.
  const std::string& name() const { return name_; }
  // True when the bytes are a file mapping (Open), false when they are held in memory.
  bool is_mapped() const { return mapped_; }
  // True when [p, p + n) lies inside these bytes.
  bool Contains(const void* p, size_t n = 1) const {
    auto a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(data_);
    return a >= base && a - base <= size_ && n <= size_ - (a - base);
  }

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string name_;
  std::string owned_;              // FromBytes: the string when it was already aligned
  std::unique_ptr<char[]> buffer_;  // FromBytes: the aligned copy otherwise (over-allocated)
};

}  // namespace kiln::support
