#include "tir/data_type.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "support/dtype_short_names.h"

namespace kiln::tir {

std::string DataType::ToString() const {
  std::string base;
  switch (code_) {
    case Code::kInt: base = absl::StrCat("int", bits_); break;
    case Code::kUInt: base = absl::StrCat("uint", bits_); break;
    case Code::kFloat: base = absl::StrCat("float", bits_); break;
    case Code::kBFloat: base = absl::StrCat("bfloat", bits_); break;
    case Code::kBool: base = "bool"; break;
    case Code::kHandle: base = bits_ == 128 ? "string" : "handle"; break;  // tir/string_type.h
  }
  if (lanes_ > 1) absl::StrAppend(&base, "x", lanes_);
  return base;
}

absl::StatusOr<DataType> DataType::Parse(std::string_view std_text) {
  // Debian's Abseil has its own string_view type; work in it throughout.
  absl::string_view text(std_text.data(), std_text.size());
  auto invalid = [&]() {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid data type '", text,
        "': expected int1/2/4/8/16/32/64, uint1/2/4/8/16/32/64, float16/32/64, bfloat16 or bool, "
        "optionally followed by xLANES; handle; string"));
  };
  absl::string_view rest = text;
  int lanes = 1;
  if (size_t x = rest.rfind('x'); x != absl::string_view::npos && x > 0) {
    if (!absl::SimpleAtoi(rest.substr(x + 1), &lanes) || lanes < 1 || lanes > 65535) {
      return invalid();
    }
    rest = rest.substr(0, x);
  }
  if (rest == "bool") return Bool(lanes);
  if (rest == "handle" && lanes == 1) return Handle();
  if (text == "string") return DataType(Code::kHandle, 128, 1);  // tir/string_type.h
  struct Prefix {
    absl::string_view name;
    Code code;
  };
  // Longest prefixes first so "uint" is not read as "int".
  constexpr Prefix kPrefixes[] = {{"uint", Code::kUInt},
                                  {"int", Code::kInt},
                                  {"bfloat", Code::kBFloat},
                                  {"float", Code::kFloat}};
  for (const Prefix& prefix : kPrefixes) {
    if (rest.substr(0, prefix.name.size()) != prefix.name) continue;
    int bits = 0;
    if (!absl::SimpleAtoi(rest.substr(prefix.name.size()), &bits)) return invalid();
    bool ok = false;
    switch (prefix.code) {
      case Code::kInt:
      case Code::kUInt: ok = bits == 1 || bits == 2 || bits == 4 || bits == 8 || bits == 16 || bits == 32 || bits == 64; break;
      case Code::kFloat: ok = bits == 16 || bits == 32 || bits == 64; break;
      case Code::kBFloat: ok = bits == 16; break;
      default: break;
    }
    if (!ok) return invalid();
    return DataType(prefix.code, bits, lanes);
  }
  return invalid();
}

std::string DataType::LongName(std::string_view text) {
  // C's words first: the short prefixes (support/dtype_short_names.h) need a digit.
  if (text == "float") return "float32";
  if (text == "double") return "float64";
  if (text == "half") return "float16";
  if (text == "long") return "int64";
  std::string name = support::ExpandShortDTypeName(text);
  return !name.empty() && Parse(name).ok() ? name : "";
}

}  // namespace kiln::tir
