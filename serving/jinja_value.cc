#include "serving/jinja_value.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace kiln::serving {

JinjaValue JinjaValue::None() {
  JinjaValue v;
  v.kind_ = Kind::kNone;
  return v;
}

JinjaValue JinjaValue::Bool(bool value) {
  JinjaValue v;
  v.kind_ = Kind::kBool;
  v.int_ = value ? 1 : 0;
  return v;
}

JinjaValue JinjaValue::Int(int64_t value) {
  JinjaValue v;
  v.kind_ = Kind::kInt;
  v.int_ = value;
  return v;
}

JinjaValue JinjaValue::Float(double value) {
  JinjaValue v;
  v.kind_ = Kind::kFloat;
  v.float_ = value;
  return v;
}

JinjaValue JinjaValue::String(std::string value) {
  JinjaValue v;
  v.kind_ = Kind::kString;
  v.string_ = std::make_shared<const std::string>(std::move(value));
  return v;
}

JinjaValue JinjaValue::MakeList(List items) {
  JinjaValue v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

JinjaValue JinjaValue::MakeDict(Dict items) {
  JinjaValue v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(items));
  return v;
}

JinjaValue JinjaValue::MakeNamespace(Dict items) {
  JinjaValue v = MakeDict(std::move(items));
  v.namespace_ = true;
  return v;
}

const JinjaValue* JinjaValue::Find(std::string_view key) const {
  if (kind_ != Kind::kDict) return nullptr;
  for (const auto& [k, value] : *dict_) {
    if (k == key) return &value;
  }
  return nullptr;
}

void JinjaValue::SetAttribute(const std::string& key, JinjaValue value) const {
  for (auto& [k, v] : *dict_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  dict_->emplace_back(key, std::move(value));
}

bool JinjaValue::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0;
    case Kind::kString: return !string_->empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->empty();
  }
  return false;
}

namespace {

// Python's float repr for the values templates print: shortest round-trip digits, with
// ".0" for integral values.
std::string FloatText(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The fewest significant digits that read back as the same double.
  char buffer[64];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  const int exponent = value == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::fabs(value))));
  // Python writes positional notation for exponents from -4 to 15.
  if (exponent < -4 || exponent >= 16) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, value);
    return buffer;
  }
  std::snprintf(buffer, sizeof(buffer), "%.*f", std::max(0, digits - 1 - exponent), value);
  std::string text = buffer;
  if (text.find('.') == std::string::npos) text += ".0";
  return text;
}

void AppendQuoted(std::string_view text, char quote, std::string* out) {
  out->push_back(quote);
  for (char c : text) {
    if (c == quote || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), quote == '"' ? "\\u%04x" : "\\x%02x", c);
      *out += buffer;
    } else {
      out->push_back(c);
    }
  }
  out->push_back(quote);
}

}  // namespace

std::string JinjaValue::ToString() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return *string_;
    default: return Repr();
  }
}

std::string JinjaValue::Repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return int_ ? "True" : "False";
    case Kind::kInt: return absl::StrCat(int_);
    case Kind::kFloat: return FloatText(float_);
    case Kind::kString: {
      // Python prefers single quotes unless the text holds one and no double quote.
      const bool double_quotes = string_->find('\'') != std::string::npos && string_->find('"') == std::string::npos;
      std::string out;
      AppendQuoted(*string_, double_quotes ? '"' : '\'', &out);
      return out;
    }
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) absl::StrAppend(&out, i ? ", " : "", (*list_)[i].Repr());
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = namespace_ ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        std::string key;
        AppendQuoted((*dict_)[i].first, '\'', &key);
        absl::StrAppend(&out, i ? ", " : "", key, ": ", (*dict_)[i].second.Repr());
      }
      return out + (namespace_ ? "}>" : "}");
    }
  }
  return "";
}

std::string JinjaValue::ToJson() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return "null";
    case Kind::kBool: return int_ ? "true" : "false";
    case Kind::kInt:
    case Kind::kFloat: return Repr();
    case Kind::kString: {
      std::string out;
      AppendQuoted(*string_, '"', &out);
      return out;
    }
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) absl::StrAppend(&out, i ? ", " : "", (*list_)[i].ToJson());
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        std::string key;
        AppendQuoted((*dict_)[i].first, '"', &key);
        absl::StrAppend(&out, i ? ", " : "", key, ": ", (*dict_)[i].second.ToJson());
      }
      return out + "}";
    }
  }
  return "null";
}

bool JinjaValue::Equals(const JinjaValue& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) return AsFloat() == other.AsFloat();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return *string_ == *other.string_;
    case Kind::kList: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].Equals((*other.list_)[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_->size() != other.dict_->size()) return false;
      for (const auto& [key, value] : *dict_) {
        const JinjaValue* match = other.Find(key);
        if (match == nullptr || !value.Equals(*match)) return false;
      }
      return true;
    }
    default: return false;
  }
}

std::string_view JinjaValue::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kList: return "list";
    case Kind::kDict: return namespace_ ? "namespace" : "dict";
  }
  return "value";
}

}  // namespace kiln::serving
