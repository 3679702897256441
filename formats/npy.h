// NumPy .npy files (format versions 1-3): C-order arrays of little-endian bool, int8-64,
// uint8-64 and float16/32/64 elements, and fixed-width Unicode strings ('<U<n>': n UTF-32
// code units per element, NUL-padded; tools/npy_tensor.cc turns them into string tensors).
// Object arrays ('|O') hold pickled Python objects and are refused with a clear error.
//
// Reading maps the file (support::MappedFile) and returns a view of its data: nothing is
// copied, and the array keeps the mapping alive. Every header field is checked against the
// file before anything else happens: the element count the shape claims times the element
// size must equal the bytes after the header, and the error names the file, the shape and
// both sizes. The runtime wraps the view in a Tensor (tools/npy_tensor.h); this library
// knows nothing of tensors (DESIGN.md: formats depends only on support).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/mapped_file.h"

namespace kiln::formats {

// An element type as .npy spells it: kind 'b' (bool), 'i', 'u', 'f' or 'U' (a string of
// bytes / 4 UTF-32 code units), and its size in bytes.
struct NpyType {
  char kind = 'f';
  int bytes = 4;
};

struct NpyArray {
  NpyType type;
  std::vector<int64_t> shape;
  const char* data = nullptr;  // inside `file`; 64-byte aligned when the writer padded the header
  uint64_t nbytes = 0;
  std::shared_ptr<const support::MappedFile> file;  // keeps `data` alive
};

// Maps and parses the file at `path`.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);
// Parses bytes already held (the file's name() is used in errors).
absl::StatusOr<NpyArray> ParseNpy(std::shared_ptr<const support::MappedFile> file);

// The whole file: a version 1.0 header padded so the data starts at a multiple of 64 bytes,
// then `nbytes` bytes from `data`, which must be the shape's element count times the size.
absl::StatusOr<std::string> EncodeNpy(NpyType type, const std::vector<int64_t>& shape, const void* data, uint64_t nbytes);
absl::Status WriteNpy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data,
                      uint64_t nbytes);

}  // namespace kiln::formats
