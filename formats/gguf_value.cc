#include "formats/gguf_value.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/escaping.h"
#include "support/check.h"

namespace kiln::formats {

// GGUF files here are little-endian and values are read with memcpy.
static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

std::string_view GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return "unknown type";
}

bool IsGgufValueType(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::kFloat64); }

uint64_t GgufScalarBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray: return 0;
  }
  return 0;
}

bool IsGgufInteger(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64: return true;
    default: return false;
  }
}

bool IsGgufFloat(GgufValueType type) { return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64; }

GgufValue GgufValue::Scalar(GgufValueType type, const char* raw) {
  uint64_t bytes = GgufScalarBytes(type);
  KILN_CHECK(bytes > 0) << GgufValueTypeName(type) << " is not a scalar type";
  GgufValue value;
  value.type_ = type;
  std::memcpy(&value.bits_, raw, bytes);
  return value;
}

GgufValue GgufValue::String(std::string_view text) {
  GgufValue value;
  value.type_ = GgufValueType::kString;
  value.string_ = text;
  return value;
}

GgufValue GgufValue::FromArray(Array array) {
  GgufValue value;
  value.type_ = GgufValueType::kArray;
  value.array_ = std::make_shared<const Array>(std::move(array));
  return value;
}

GgufValue GgufValue::ScalarArray(GgufValueType element_type, uint64_t count, const char* raw) {
  KILN_CHECK(GgufScalarBytes(element_type) > 0);
  return FromArray({element_type, count, raw, {}, {}});
}

GgufValue GgufValue::StringArray(std::vector<std::string_view> strings) {
  const uint64_t count = strings.size();
  return FromArray({GgufValueType::kString, count, nullptr, std::move(strings), {}});
}

GgufValue GgufValue::NestedArray(std::vector<GgufValue> arrays) {
  const uint64_t count = arrays.size();
  return FromArray({GgufValueType::kArray, count, nullptr, {}, std::move(arrays)});
}

std::optional<int64_t> GgufValue::AsInt64() const {
  KILN_CHECK(IsGgufInteger(type_)) << GgufValueTypeName(type_) << " is not an integer";
  switch (type_) {
    case GgufValueType::kUint8: return static_cast<int64_t>(static_cast<uint8_t>(bits_));
    case GgufValueType::kInt8: return static_cast<int64_t>(static_cast<int8_t>(bits_));
    case GgufValueType::kUint16: return static_cast<int64_t>(static_cast<uint16_t>(bits_));
    case GgufValueType::kInt16: return static_cast<int64_t>(static_cast<int16_t>(bits_));
    case GgufValueType::kUint32: return static_cast<int64_t>(static_cast<uint32_t>(bits_));
    case GgufValueType::kInt32: return static_cast<int64_t>(static_cast<int32_t>(bits_));
    case GgufValueType::kInt64: return static_cast<int64_t>(bits_);
    default:  // uint64
      if (bits_ > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(bits_);
  }
}

std::optional<uint64_t> GgufValue::AsUint64() const {
  if (type_ == GgufValueType::kUint64) return bits_;
  std::optional<int64_t> value = AsInt64();
  if (!value.has_value() || *value < 0) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

double GgufValue::AsDouble() const {
  KILN_CHECK(IsGgufFloat(type_)) << GgufValueTypeName(type_) << " is not a float";
  if (type_ == GgufValueType::kFloat32) {
    float f;
    uint32_t low = static_cast<uint32_t>(bits_);
    std::memcpy(&f, &low, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits_, 8);
  return d;
}

bool GgufValue::AsBool() const {
  KILN_CHECK(type_ == GgufValueType::kBool) << GgufValueTypeName(type_) << " is not bool";
  return bits_ != 0;
}

std::string_view GgufValue::AsString() const {
  KILN_CHECK(type_ == GgufValueType::kString) << GgufValueTypeName(type_) << " is not string";
  return string_;
}

GgufValueType GgufValue::element_type() const {
  KILN_CHECK(type_ == GgufValueType::kArray) << GgufValueTypeName(type_) << " is not an array";
  return array_->element_type;
}

uint64_t GgufValue::size() const {
  KILN_CHECK(type_ == GgufValueType::kArray) << GgufValueTypeName(type_) << " is not an array";
  return array_->count;
}

GgufValue GgufValue::Element(uint64_t i) const {
  KILN_CHECK_LT(i, size());
  switch (array_->element_type) {
    case GgufValueType::kString: return String(array_->strings[i]);
    case GgufValueType::kArray: return array_->arrays[i];
    default: {
      uint64_t bytes = GgufScalarBytes(array_->element_type);
      return Scalar(array_->element_type, array_->raw + i * bytes);
    }
  }
}

const std::vector<std::string_view>& GgufValue::Strings() const {
  KILN_CHECK(type_ == GgufValueType::kArray && array_->element_type == GgufValueType::kString)
      << "not an array of strings";
  return array_->strings;
}

std::string GgufValue::DebugString(uint64_t max_elements) const {
  switch (type_) {
    case GgufValueType::kString: return absl::StrCat("\"", absl::CHexEscape(absl::string_view(string_.data(), string_.size())), "\"");
    case GgufValueType::kBool: return AsBool() ? "true" : "false";
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64: return absl::StrCat(AsDouble());
    case GgufValueType::kArray: {
      std::string text = absl::StrCat("[", size(), " x ", std::string(GgufValueTypeName(element_type())));
      for (uint64_t i = 0; i < size() && i < max_elements; ++i) {
        absl::StrAppend(&text, i == 0 ? ": " : ", ", Element(i).DebugString(max_elements));
      }
      if (size() > max_elements) absl::StrAppend(&text, ", ...");
      return text + "]";
    }
    case GgufValueType::kUint64: return absl::StrCat(bits_);
    default: return absl::StrCat(*AsInt64());
  }
}

}  // namespace kiln::formats
