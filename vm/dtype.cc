#include "vm/dtype.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::vm {

std::string DTypeToString(DLDataType t) {
  std::string base;
  switch (t.code) {
    case kDLInt: base = absl::StrCat("int", t.bits); break;
    case kDLUInt: base = absl::StrCat("uint", t.bits); break;
    case kDLFloat: base = absl::StrCat("float", t.bits); break;
    case kDLBfloat: base = absl::StrCat("bfloat", t.bits); break;
    case kDTypeBool: base = "bool"; break;
    default: base = absl::StrCat("code", int{t.code}, "_", t.bits); break;
  }
  if (t.lanes > 1) absl::StrAppend(&base, "x", t.lanes);
  return base;
}

absl::StatusOr<DLDataType> ParseDType(const std::string& text) {
  if (text == "bool") return DLDataType{kDTypeBool, 8, 1};
  struct Prefix {
    const char* name;
    uint8_t code;
  };
  // Longest prefixes first so "uint" is not read as "int" nor "bf" as "b...".
  constexpr Prefix kPrefixes[] = {{"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt},
                                  {"int", kDLInt},       {"bf", kDLBfloat},   {"f", kDLFloat},
                                  {"u", kDLUInt},        {"i", kDLInt}};
  for (const Prefix& prefix : kPrefixes) {
    std::string name = prefix.name;
    if (text.compare(0, name.size(), name) != 0) continue;
    int bits = 0;
    if (!absl::SimpleAtoi(text.substr(name.size()), &bits)) break;
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
