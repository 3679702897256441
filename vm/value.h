// Value: what a VM register holds.
//
// none, int64, double, bool, shape (a list of int64), tensor, tuple (of Values), string,
// closure (a bytecode function plus captured values), or an opaque Object (planned
// storage, a KV cache, ...). Values are immutable and cheap to copy: heap kinds share one
// reference-counted payload.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vm/tensor.h"

namespace kiln::vm {

// Base of opaque runtime objects a Value can hold.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
};

class Value;
using Shape = std::vector<int64_t>;
using TupleFields = std::vector<Value>;

struct Closure {
  int32_t function_index;
  std::vector<Value> captured;
};

class Value {
 public:
  enum class Kind : uint8_t { kNone, kInt, kDouble, kBool, kShape, kTensor, kTuple, kString, kClosure, kObject };

  Value() = default;
  Value(int64_t v) : kind_(Kind::kInt) { scalar_.i = v; }       // NOLINT
  Value(double v) : kind_(Kind::kDouble) { scalar_.d = v; }      // NOLINT
  Value(bool v) : kind_(Kind::kBool) { scalar_.b = v; }          // NOLINT
  Value(Tensor t);                                                // NOLINT
  static Value FromShape(Shape shape);
  static Value FromTuple(TupleFields fields);
  static Value FromString(std::string s);
  static Value FromClosure(Closure closure);
  static Value FromObject(std::shared_ptr<Object> object);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }

  // Accessors; the kind must match (checked by callers, e.g. the verifier or an explicit test).
  int64_t as_int() const { return scalar_.i; }
  double as_double() const { return scalar_.d; }
  bool as_bool() const { return scalar_.b; }
  const Shape& as_shape() const { return *static_cast<const Shape*>(ref_.get()); }
  const Tensor& as_tensor() const { return *static_cast<const Tensor*>(ref_.get()); }
  const TupleFields& as_tuple() const { return *static_cast<const TupleFields*>(ref_.get()); }
  const std::string& as_string() const { return *static_cast<const std::string*>(ref_.get()); }
  const Closure& as_closure() const { return *static_cast<const Closure*>(ref_.get()); }
  const std::shared_ptr<Object> as_object() const {
    return std::const_pointer_cast<Object>(std::static_pointer_cast<const Object>(ref_));
  }

  // "int", "tensor", ...
  static const char* KindName(Kind kind);
  // A short description for error messages: "tensor float32[7, 784]", "int 3", ...
  std::string Describe() const;

 private:
  Kind kind_ = Kind::kNone;
  union {
    int64_t i;
    double d;
    bool b;
  } scalar_{0};
  std::shared_ptr<const void> ref_;
};

}  // namespace kiln::vm
