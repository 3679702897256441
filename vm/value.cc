#include "vm/value.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace kiln::vm {
namespace {

// Names by index; a deque so that references handed out stay valid as names are added.
struct TypeTable {
  std::mutex mutex;
  std::map<std::string, uint32_t, std::less<>> index;
  std::deque<std::string> names{""};
};

TypeTable& Types() {
  static TypeTable* table = new TypeTable();
  return *table;
}

}  // namespace

uint32_t ObjectTypeIndex(std::string_view type_name) {
  TypeTable& t = Types();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.index.find(type_name);
  if (it != t.index.end()) return it->second;
  auto index = static_cast<uint32_t>(t.names.size());
  t.names.emplace_back(type_name);
  t.index.emplace(std::string(type_name), index);
  return index;
}

const std::string& ObjectTypeName(uint32_t type_index) {
  TypeTable& t = Types();
  std::lock_guard<std::mutex> lock(t.mutex);
  return type_index < t.names.size() ? t.names[type_index] : t.names[0];
}

Value::Value(Tensor t) : kind_(Kind::kTensor), ref_(std::make_shared<const Tensor>(std::move(t))) {}

Value Value::FromShape(Shape shape) {
  Value v;
  v.kind_ = Kind::kShape;
  v.ref_ = std::make_shared<const Shape>(std::move(shape));
  return v;
}

Value Value::FromTuple(TupleFields fields) {
  Value v;
  v.kind_ = Kind::kTuple;
  v.ref_ = std::make_shared<const TupleFields>(std::move(fields));
  return v;
}

Value Value::FromString(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ref_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::FromClosure(Closure closure) {
  Value v;
  v.kind_ = Kind::kClosure;
  v.ref_ = std::make_shared<const Closure>(std::move(closure));
  return v;
}

Value Value::FromObject(std::shared_ptr<Object> object) {
  Value v;
  if (object == nullptr) return v;  // a null object is none, so every kObject has a payload
  v.kind_ = Kind::kObject;
  v.ref_ = std::move(object);
  return v;
}

void Value::WrongKind(Kind expected, const char* accessor) const {
  std::string message = absl::StrCat("Value::", accessor, ": expected ", KindName(expected), ", got ", Describe());
  std::fprintf(stderr, "kiln: fatal: %s\n", message.c_str());
  std::abort();
}

void Value::WrongObject(const char* expected_type) const {
  std::string message = absl::StrCat("Value::as_object: expected object:", expected_type, ", got ", Describe());
  std::fprintf(stderr, "kiln: fatal: %s\n", message.c_str());
  std::abort();
}

absl::Status Value::WrongKindError(Kind expected) const {
  return absl::InvalidArgumentError(absl::StrCat("expected ", KindName(expected), ", got ", Describe()));
}

absl::Status Value::WrongObjectError(const char* expected_type) const {
  return absl::InvalidArgumentError(absl::StrCat("expected object:", expected_type, ", got ", Describe()));
}

absl::StatusOr<int64_t> Value::GetInt() const {
  if (kind_ != Kind::kInt) return WrongKindError(Kind::kInt);
  return scalar_.i;
}

absl::StatusOr<double> Value::GetDouble() const {
  if (kind_ != Kind::kDouble) return WrongKindError(Kind::kDouble);
  return scalar_.d;
}

absl::StatusOr<bool> Value::GetBool() const {
  if (kind_ != Kind::kBool) return WrongKindError(Kind::kBool);
  return scalar_.b;
}

absl::StatusOr<Shape> Value::GetShape() const {
  if (kind_ != Kind::kShape) return WrongKindError(Kind::kShape);
  return as_shape();
}

absl::StatusOr<Tensor> Value::GetTensor() const {
  if (kind_ != Kind::kTensor) return WrongKindError(Kind::kTensor);
  return as_tensor();
}

absl::StatusOr<TupleFields> Value::GetTuple() const {
  if (kind_ != Kind::kTuple) return WrongKindError(Kind::kTuple);
  return as_tuple();
}

absl::StatusOr<std::string> Value::GetString() const {
  if (kind_ != Kind::kString) return WrongKindError(Kind::kString);
  return as_string();
}

absl::StatusOr<Closure> Value::GetClosure() const {
  if (kind_ != Kind::kClosure) return WrongKindError(Kind::kClosure);
  return as_closure();
}

const char* Value::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kInt: return "int";
    case Kind::kDouble: return "double";
    case Kind::kBool: return "bool";
    case Kind::kShape: return "shape";
    case Kind::kTensor: return "tensor";
    case Kind::kTuple: return "tuple";
    case Kind::kString: return "string";
    case Kind::kClosure: return "closure";
    case Kind::kObject: return "object";
  }
  return "?";
}

std::string Value::Describe() const {
  switch (kind_) {
    case Kind::kInt: return absl::StrCat("int ", scalar_.i);
    case Kind::kDouble: return absl::StrCat("double ", scalar_.d);
    case Kind::kBool: return scalar_.b ? "bool true" : "bool false";
    case Kind::kShape: return absl::StrCat("shape ", ShapeToString(as_shape()));
    case Kind::kTensor: return absl::StrCat("tensor ", as_tensor().Describe());
    case Kind::kTuple: return absl::StrCat("tuple of ", as_tuple().size());
    case Kind::kString: return absl::StrCat("string \"", as_string(), "\"");
    case Kind::kClosure: return absl::StrCat("closure of function ", as_closure().function_index);
    case Kind::kObject: return absl::StrCat("object:", object_ptr()->type_name());
    default: return KindName(kind_);
  }
}

}  // namespace kiln::vm
