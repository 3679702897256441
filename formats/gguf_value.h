// A GGUF metadata value: one of the thirteen GGUF value types (integers of 8 to 64 bits,
// float32/float64, bool, string, array). Strings and array elements are views into the
// bytes the value was read from (a mapped file): a GgufValue is valid while the GgufFile
// that produced it is alive. Copying a value is cheap (arrays are shared).
//
// Arrays hold elements of one type; an array of arrays (nested) holds arrays whose element
// types may differ from one another. Accessors for a type the value does not have are
// internal errors (KILN_CHECK): callers check type() first, or use GgufFile's typed getters,
// which turn a mismatch into an error naming the key and both types.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::formats {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint8", ..., "float64", "bool", "string", "array"; "type N" for an id outside the enum.
std::string_view GgufValueTypeName(GgufValueType type);
// Whether `id` is one of the thirteen value types.
bool IsGgufValueType(uint32_t id);
// Bytes a scalar of `type` occupies in the file (0 for string and array).
uint64_t GgufScalarBytes(GgufValueType type);
bool IsGgufInteger(GgufValueType type);
bool IsGgufFloat(GgufValueType type);

class GgufValue {
 public:
  GgufValue() = default;
  // A scalar whose little-endian bytes are at `raw` (GgufScalarBytes(type) of them).
  static GgufValue Scalar(GgufValueType type, const char* raw);
  static GgufValue String(std::string_view text);
  // An array of scalars stored back to back at `raw`.
  static GgufValue ScalarArray(GgufValueType element_type, uint64_t count, const char* raw);
  static GgufValue StringArray(std::vector<std::string_view> strings);
  static GgufValue NestedArray(std::vector<GgufValue> arrays);

  GgufValueType type() const { return type_; }

  // Integer types: the value, or nullopt for a uint64 above INT64_MAX.
  std::optional<int64_t> AsInt64() const;
  // Integer types: the value as unsigned; nullopt for a negative signed value.
  std::optional<uint64_t> AsUint64() const;
  // float32 / float64.
  double AsDouble() const;
  bool AsBool() const;
  std::string_view AsString() const;

  // Arrays.
  GgufValueType element_type() const;
  uint64_t size() const;
  // Element `i` (< size()) as a value of element_type().
  GgufValue Element(uint64_t i) const;
  // The strings of an array of strings, without copying them.
  const std::vector<std::string_view>& Strings() const;

  // A short readable rendering: scalars and strings as written, arrays as
  // "[3 x uint32: 1, 2, 3]" with at most `max_elements` elements shown.
  std::string DebugString(uint64_t max_elements = 8) const;

 private:
  struct Array {
    GgufValueType element_type = GgufValueType::kUint8;
    uint64_t count = 0;
    const char* raw = nullptr;               // scalar elements
    std::vector<std::string_view> strings;   // string elements
    std::vector<GgufValue> arrays;           // nested arrays
  };

  static GgufValue FromArray(Array array);

  GgufValueType type_ = GgufValueType::kUint8;
  uint64_t bits_ = 0;  // a scalar's bytes, zero-extended
  std::string_view string_;
  std::shared_ptr<const Array> array_;
};

}  // namespace kiln::formats
