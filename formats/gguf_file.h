// The GGUF reader (GGUF versions 2 and 3, little-endian): the header, every metadata
// key/value, the tensor infos, and views of the tensor data inside the file's mapping.
//
// Layout (all little-endian): magic "GGUF", uint32 version, uint64 tensor count, uint64
// metadata count; the metadata (string key, uint32 value type, value); the tensor infos
// (string name, uint32 dimension count, uint64 dimensions innermost first, uint32 ggml type,
// uint64 data offset); padding to the alignment (`general.alignment`, uint32, a power of
// two, default 32); the tensor data. A string is a uint64 byte length and the bytes.
//
// Promises:
//  - Nothing is copied: Open maps the file read-only, and strings, arrays and tensor data
//    are views into the mapping, valid as long as the GgufFile (held by shared_ptr) lives.
//  - Every count, length, offset and size is checked against the file before it is used;
//    counts are bounded by what the remaining bytes could hold, so a malicious file cannot
//    cause a huge allocation; nested arrays are at most kMaxArrayDepth deep. A bad file is
//    refused with absl::Status naming the file, the item (header, metadata N ('key'),
//    tensor N ('name')) and the field, never a crash.
//  - Also refused: duplicate keys or tensor names, unknown value or tensor types, a row
//    length that is not a multiple of the type's block size, a data offset that is not a
//    multiple of the alignment, tensors whose data overlap or run past the end of the file.
//  - Tensor shapes are given outermost first (row-major, as Kiln's tensors are): the file's
//    ggml dimensions reversed. A Q4_1 matrix stored as ne = [576, 1536] has shape
//    {1536, 576}: 1536 rows of 576 elements, each row 18 blocks of 32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "formats/ggml_type.h"
#include "formats/gguf_value.h"

namespace kiln::formats {

struct GgufMetadata {
  std::string_view key;
  GgufValue value;
};

struct GgufTensor {
  std::string_view name;
  GgmlType type;
  std::vector<int64_t> shape;  // outermost first
  int64_t num_elements = 0;
  uint64_t offset = 0;         // from the start of the file
  uint64_t nbytes = 0;
  const char* data = nullptr;  // inside the mapping; aligned to the file's alignment
};

class GgufFile {
 public:
  static constexpr int kMaxArrayDepth = 8;
  static constexpr uint32_t kDefaultAlignment = 32;

  // Maps and reads the file at `path`.
  static absl::StatusOr<std::shared_ptr<const GgufFile>> Open(const std::string& path);
  // Reads `bytes`, which `owner` keeps alive (tests and fuzzing read from memory); `name`
  // stands for the file in errors.
  static absl::StatusOr<std::shared_ptr<const GgufFile>> Parse(std::string_view bytes, std::string name,
                                                                 std::shared_ptr<const void> owner = nullptr);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return bytes_.size(); }
  // Where the tensor data section starts (tensor offsets in the file are relative to it).
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<GgufMetadata>& metadata() const { return metadata_; }
  // nullptr when the key is absent.
  const GgufValue* Find(std::string_view key) const;

  // Typed getters. Errors: "<file>: key 'k' is missing", "<file>: key 'k' has type string,
  // expected uint32".
  absl::StatusOr<uint32_t> GetUint32(std::string_view key) const;
  absl::StatusOr<uint64_t> GetUint64(std::string_view key) const;
  absl::StatusOr<int32_t> GetInt32(std::string_view key) const;
  absl::StatusOr<float> GetFloat32(std::string_view key) const;
  absl::StatusOr<bool> GetBool(std::string_view key) const;
  absl::StatusOr<std::string_view> GetString(std::string_view key) const;
  // Any integer type whose value fits int64 (token ids are uint32 in some files, int32 in
  // others).
  absl::StatusOr<int64_t> GetInteger(std::string_view key) const;
  // float32 or float64.
  absl::StatusOr<double> GetFloat(std::string_view key) const;
  // An array whose elements have type `element_type`.
  absl::StatusOr<GgufValue> GetArray(std::string_view key, GgufValueType element_type) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  // nullptr when absent.
  const GgufTensor* FindTensor(std::string_view name) const;
  // "<file>: tensor 'name' is missing" when absent.
  absl::StatusOr<const GgufTensor*> GetTensor(std::string_view name) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  absl::StatusOr<const GgufValue*> Get(std::string_view key, GgufValueType type) const;

  std::string name_;
  std::shared_ptr<const void> owner_;
  std::string_view bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufMetadata> metadata_;
  absl::flat_hash_map<std::string_view, size_t> metadata_index_;
  std::vector<GgufTensor> tensors_;
  absl::flat_hash_map<std::string_view, size_t> tensor_index_;
};

}  // namespace kiln::formats
