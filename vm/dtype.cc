#include "vm/dtype.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "support/dtype_short_names.h"
#include "support/float16.h"

namespace kiln::vm {

double LoadElementAsDouble(const void* data, DLDataType t, int64_t i) {
  if (t.lanes != 1) return std::nan("");
  auto at = [&](auto type_tag) {
    using T = decltype(type_tag);
    return static_cast<const T*>(data)[i];
  };
  switch (t.code) {
    case kDTypeBool: return t.bits == 8 ? (at(uint8_t{}) != 0 ? 1.0 : 0.0) : std::nan("");
    case kDLInt:
      switch (t.bits) {
        case 8: return at(int8_t{});
        case 16: return at(int16_t{});
        case 32: return at(int32_t{});
        case 64: return static_cast<double>(at(int64_t{}));
      }
      break;
    case kDLUInt:
      switch (t.bits) {
        case 8: return at(uint8_t{});
        case 16: return at(uint16_t{});
        case 32: return at(uint32_t{});
        case 64: return static_cast<double>(at(uint64_t{}));
      }
      break;
    case kDLFloat:
      switch (t.bits) {
        case 16: return support::HalfToFloat(at(uint16_t{}));
        case 32: return at(float{});
        case 64: return at(double{});
      }
      break;
    case kDLBfloat:
      if (t.bits == 16) return support::BFloat16ToFloat(at(uint16_t{}));
      break;
  }
  return std::nan("");
}

bool StoreElementFromDouble(void* data, DLDataType t, int64_t i, double value) {
  if (t.lanes != 1) return false;
  auto put = [&](auto v) {
    static_cast<decltype(v)*>(data)[i] = v;
    return true;
  };
  switch (t.code) {
    case kDTypeBool: return t.bits == 8 && put(static_cast<uint8_t>(value != 0));
    case kDLInt:
      switch (t.bits) {
        case 8: return put(static_cast<int8_t>(value));
        case 16: return put(static_cast<int16_t>(value));
        case 32: return put(static_cast<int32_t>(value));
        case 64: return put(static_cast<int64_t>(value));
      }
      break;
    case kDLUInt:
      switch (t.bits) {
        case 8: return put(static_cast<uint8_t>(value));
        case 16: return put(static_cast<uint16_t>(value));
        case 32: return put(static_cast<uint32_t>(value));
        case 64: return put(static_cast<uint64_t>(value));
      }
      break;
    case kDLFloat:
      switch (t.bits) {
        case 16: return put(support::DoubleToHalf(value));
        case 32: return put(static_cast<float>(value));
        case 64: return put(value);
      }
      break;
    case kDLBfloat:
      if (t.bits == 16) return put(support::FloatToBFloat16(static_cast<float>(value)));
      break;
  }
  return false;
}

std::string DTypeToString(DLDataType t) {
  std::string base;
  switch (t.code) {
    case kDLInt: base = absl::StrCat("int", t.bits); break;
    case kDLUInt: base = absl::StrCat("uint", t.bits); break;
    case kDLFloat: base = absl::StrCat("float", t.bits); break;
    case kDLBfloat: base = absl::StrCat("bfloat", t.bits); break;
    case kDTypeBool: base = "bool"; break;
    case kDLOpaqueHandle: base = t.bits == 128 ? "string" : absl::StrCat("handle", t.bits); break;  // vm/string_tensor.h
    default: base = absl::StrCat("code", int{t.code}, "_", t.bits); break;
  }
  if (t.lanes > 1) absl::StrAppend(&base, "x", t.lanes);
  return base;
}

absl::StatusOr<DLDataType> ParseDType(const std::string& text) {
  if (text == "bool") return DLDataType{kDTypeBool, 8, 1};
  if (text == "string") return DLDataType{kDLOpaqueHandle, 128, 1};  // vm/string_tensor.h
  const std::string expanded = support::ExpandShortDTypeName(text);  // "f32" -> "float32"
  const std::string& name = expanded.empty() ? text : expanded;
  struct Prefix {
    const char* name;
    uint8_t code;
  };
  // No name starts with another of these, so their order does not matter.
  constexpr Prefix kPrefixes[] = {{"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}};
  for (const Prefix& prefix : kPrefixes) {
    const std::string_view long_prefix = prefix.name;
    if (name.compare(0, long_prefix.size(), long_prefix) != 0) continue;
    int bits = 0;
    if (!absl::SimpleAtoi(name.substr(long_prefix.size()), &bits)) break;
    bool ok = (bits == 8 || bits == 16 || bits == 32 || bits == 64);
    if (prefix.code == kDLFloat) ok = bits == 16 || bits == 32 || bits == 64;
    if (prefix.code == kDLBfloat) ok = bits == 16;
    if (!ok) break;
    return DLDataType{prefix.code, static_cast<uint8_t>(bits), 1};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown data type '", text, "' (expected e.g. float32, f32, int64, i64, uint8, bool)"));
}

}  // namespace kiln::vm
