// A tiny GGUF writer for tests: builds files by hand, byte by byte, from the layout the
// format documents (formats/gguf_file.h), sharing no code with the reader. Values are
// encoded payloads tagged with their type id, so tests can write every value type, nested
// arrays, and deliberately wrong files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::formats::testing {

struct RawValue {
  uint32_t type;
  std::string payload;  // the value's bytes after its type id
};

template <typename T>
std::string LittleEndian(T value) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

inline std::string GgufString(std::string_view text) { return LittleEndian<uint64_t>(text.size()) + std::string(text); }

inline RawValue U8(uint8_t v) { return {0, LittleEndian(v)}; }
inline RawValue I8(int8_t v) { return {1, LittleEndian(v)}; }
inline RawValue U16(uint16_t v) { return {2, LittleEndian(v)}; }
inline RawValue I16(int16_t v) { return {3, LittleEndian(v)}; }
inline RawValue U32(uint32_t v) { return {4, LittleEndian(v)}; }
inline RawValue I32(int32_t v) { return {5, LittleEndian(v)}; }
inline RawValue F32(float v) { return {6, LittleEndian(v)}; }
inline RawValue Bool(bool v) { return {7, std::string(1, v ? '\1' : '\0')}; }
inline RawValue Str(std::string_view v) { return {8, GgufString(v)}; }
inline RawValue U64(uint64_t v) { return {10, LittleEndian(v)}; }
inline RawValue I64(int64_t v) { return {11, LittleEndian(v)}; }
inline RawValue F64(double v) { return {12, LittleEndian(v)}; }

// An array of `element_type`; each element's payload is written back to back (a nested
// array element carries its own element type and count, as its payload does).
inline RawValue Array(uint32_t element_type, const std::vector<RawValue>& elements) {
  std::string payload = LittleEndian(element_type) + LittleEndian<uint64_t>(elements.size());
  for (const RawValue& e : elements) payload += e.payload;
  return {9, payload};
}

inline RawValue StrArray(const std::vector<std::string>& strings) {
  std::vector<RawValue> elements;
  for (const std::string& s : strings) elements.push_back(Str(s));
  return Array(8, elements);
}

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3, uint64_t alignment = 32) : version_(version), alignment_(alignment) {}

  GgufWriter& Add(std::string_view key, const RawValue& value) {
    metadata_ += GgufString(key) + LittleEndian(value.type) + value.payload;
    ++metadata_count_;
    return *this;
  }

  // `dims` in the file's order (innermost first); `data` is placed at the next aligned
  // offset of the data section.
  GgufWriter& AddTensor(std::string_view name, uint32_t type, const std::vector<uint64_t>& dims, std::string_view data) {
    while (data_.size() % alignment_ != 0) data_.push_back('\0');
    infos_ += GgufString(name) + LittleEndian<uint32_t>(dims.size());
    for (uint64_t d : dims) infos_ += LittleEndian(d);
    infos_ += LittleEndian(type) + LittleEndian<uint64_t>(data_.size());
    data_ += data;
    ++tensor_count_;
    return *this;
  }

  std::string Build() const {
    std::string file = "GGUF" + LittleEndian(version_) + LittleEndian(tensor_count_) + LittleEndian(metadata_count_);
    file += metadata_ + infos_;
    while (file.size() % alignment_ != 0) file.push_back('\0');
    return file + data_;
  }

 private:
  uint32_t version_;
  uint64_t alignment_;
  uint64_t metadata_count_ = 0;
  uint64_t tensor_count_ = 0;
  std::string metadata_, infos_, data_;
};

}  // namespace kiln::formats::testing
