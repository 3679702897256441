// Values of the Jinja subset that chat templates use (serving/jinja_template.h), with
// Python's semantics where Jinja inherits them: truthiness, printing ("True", "None", 1.0,
// "['a', 'b']"), equality across int and float, and dictionaries that keep insertion order.
//
// Lists and dictionaries are shared and immutable once built, except a namespace (made by
// namespace(...) in a template), whose attributes `{% set ns.x = ... %}` may change.
// Undefined is a value of its own: it prints as "" and is false, as Jinja's default
// Undefined does; reading an attribute of it is an error (Jinja raises too).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::serving {

class JinjaValue {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict };
  using List = std::vector<JinjaValue>;
  using Dict = std::vector<std::pair<std::string, JinjaValue>>;

  JinjaValue() = default;  // undefined
  static JinjaValue None();
  static JinjaValue Bool(bool value);
  static JinjaValue Int(int64_t value);
  static JinjaValue Float(double value);
  static JinjaValue String(std::string value);
  static JinjaValue MakeList(List items);
  static JinjaValue MakeDict(Dict items);
  static JinjaValue MakeNamespace(Dict items);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_namespace() const { return namespace_; }
  bool AsBool() const { return int_ != 0; }
  // A float truncates toward zero and saturates at int64's range (NaN is 0): a template's
  // 1e300 must not be an undefined conversion.
  int64_t AsInt() const {
    if (kind_ != Kind::kFloat) return int_;
    if (!(float_ == float_)) return 0;
    if (float_ >= 9223372036854775808.0) return INT64_MAX;
    if (float_ <= -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(float_);
  }
  double AsFloat() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }
  const std::string& AsString() const { return *string_; }
  const List& AsList() const { return *list_; }
  const Dict& AsDict() const { return *dict_; }

  // A dictionary's entry, or nullptr.
  const JinjaValue* Find(std::string_view key) const;
  // Sets a namespace's attribute (the caller checks is_namespace()).
  void SetAttribute(const std::string& key, JinjaValue value) const;

  bool Truthy() const;
  // As {{ value }} prints it.
  std::string ToString() const;
  // As Python's repr() inside a printed list or dict ('a' quoted, None, True).
  std::string Repr() const;
  // JSON, for the tojson filter.
  std::string ToJson() const;
  bool Equals(const JinjaValue& other) const;
  // "string", "int", "list", ... for error messages.
  std::string_view TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool namespace_ = false;
  int64_t int_ = 0;  // int and bool
  double float_ = 0;
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;  // mutable only through SetAttribute, for namespaces
};

}  // namespace kiln::serving
