// Value: what a VM register holds.
//
// none, int64, double, bool, shape (a list of int64), tensor, tuple (of Values), string,
// closure (a bytecode function plus captured values), or an opaque Object (planned
// storage, a KV cache, ...). Values are immutable and cheap to copy: heap kinds share one
// reference-counted payload.
//
// Reading a Value as the wrong kind never has undefined behaviour:
//  - the plain accessors (as_int(), as_tensor(), as_object<T>(), ...) abort with a message
//    naming the accessor, the expected and the actual kind — for code that has checked the
//    kind already (the VM, builtins after their signature was checked);
//  - the checked accessors (GetInt(), GetTensor(), GetObject<T>(), ...) return an
//    InvalidArgument status saying the same — for embedders reading results.
//
// Objects are typed: each class derived from TypedObject<T> has a type name (T::kTypeName,
// e.g. "kv_cache") and a process-wide type index, so a downcast is one integer compare.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/tensor.h"

namespace kiln::vm {

// The process-wide index of an object type name: the same name always gives the same index
// (thread-safe; names are registered on first use). Index 0 is reserved for "no type".
uint32_t ObjectTypeIndex(std::string_view type_name);
// The name registered for an index ("" for 0 or an unknown index).
const std::string& ObjectTypeName(uint32_t type_index);

// Base of opaque runtime objects a Value can hold. Derive from TypedObject<T>, not from this.
class Object {
 public:
  virtual ~Object() = default;
  uint32_t type_index() const { return type_index_; }
  const std::string& type_name() const { return ObjectTypeName(type_index_); }

 protected:
  explicit Object(uint32_t type_index) : type_index_(type_index) {}

 private:
  const uint32_t type_index_;
};

// CRTP base giving a class its type index:
//
//   class Counter final : public TypedObject<Counter> {
//    public:
//     static constexpr char kTypeName[] = "counter";
//     int64_t count = 0;
//   };
template <typename Derived>
class TypedObject : public Object {
 public:
  static uint32_t TypeIndex() {
    static const uint32_t index = ObjectTypeIndex(Derived::kTypeName);
    return index;
  }

 protected:
  TypedObject() : Object(TypeIndex()) {}
};

class Value;
class Executable;
using Shape = std::vector<int64_t>;
using TupleFields = std::vector<Value>;

// A bytecode function with values bound to its first parameters. Calling it with more
// arguments calls the function with (captured..., arguments...). It belongs to the
// executable that made it; `executable` identifies that one (never dereferenced).
struct Closure {
  int32_t function_index = -1;
  std::vector<Value> captured;
  const Executable* executable = nullptr;
};

class Value {
 public:
  enum class Kind : uint8_t { kNone, kInt, kDouble, kBool, kShape, kTensor, kTuple, kString, kClosure, kObject };

  Value() = default;
  Value(int64_t v) : kind_(Kind::kInt) { scalar_.i = v; }       // NOLINT
  Value(double v) : kind_(Kind::kDouble) { scalar_.d = v; }      // NOLINT
  Value(bool v) : kind_(Kind::kBool) { scalar_.b = v; }          // NOLINT
  Value(Tensor t);                                                // NOLINT
  // Any other integer (int, int32_t, uint32_t, ...) is an int: `Value(3)` and `{x, 3}` were
  // ambiguous between int64, double and bool. A 64-bit unsigned one (size_t) is refused at
  // compile time: cast it to int64_t, as one above INT64_MAX has no int Value.
  template <typename T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, int64_t> &&
             (std::is_signed_v<T> || sizeof(T) < sizeof(int64_t)))
  Value(T v) : Value(static_cast<int64_t>(v)) {}  // NOLINT
  template <typename T>
    requires(std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == sizeof(int64_t))
  Value(T v) = delete;
  // A pointer would silently become the bool `true` (`Value("text")`, `Value(&tensor)`):
  // use Value::FromString for text and Value(tensor) for a tensor.
  template <typename T>
  Value(T* p) = delete;
  Value(std::nullptr_t) = delete;
  static Value FromShape(Shape shape);
  static Value FromTuple(TupleFields fields);
  static Value FromString(std::string s);
  static Value FromClosure(Closure closure);
  static Value FromObject(std::shared_ptr<Object> object);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  // An object of type T (false for other kinds and other object types).
  template <typename T>
  bool is_object() const {
    return kind_ == Kind::kObject && static_cast<const Object*>(ref_.get())->type_index() == T::TypeIndex();
  }

  // Plain accessors: abort with "Value::as_int: expected int, got tensor float32[3]" when
  // the kind differs.
  int64_t as_int() const { return Expect(Kind::kInt, "as_int"), scalar_.i; }
  double as_double() const { return Expect(Kind::kDouble, "as_double"), scalar_.d; }
  bool as_bool() const { return Expect(Kind::kBool, "as_bool"), scalar_.b; }
  const Shape& as_shape() const { return Expect(Kind::kShape, "as_shape"), *static_cast<const Shape*>(ref_.get()); }
  const Tensor& as_tensor() const {
    return Expect(Kind::kTensor, "as_tensor"), *static_cast<const Tensor*>(ref_.get());
  }
  const TupleFields& as_tuple() const {
    return Expect(Kind::kTuple, "as_tuple"), *static_cast<const TupleFields*>(ref_.get());
  }
  const std::string& as_string() const {
    return Expect(Kind::kString, "as_string"), *static_cast<const std::string*>(ref_.get());
  }
  const Closure& as_closure() const {
    return Expect(Kind::kClosure, "as_closure"), *static_cast<const Closure*>(ref_.get());
  }
  std::shared_ptr<Object> as_object() const {
    Expect(Kind::kObject, "as_object");
    return std::const_pointer_cast<Object>(std::static_pointer_cast<const Object>(ref_));
  }
  // The object without taking a reference (valid while this Value lives): for type checks
  // and handles passed to kernels on hot paths.
  Object* object_ptr() const {
    Expect(Kind::kObject, "object_ptr");
    return const_cast<Object*>(static_cast<const Object*>(ref_.get()));
  }
  // The object as a T; aborts naming both types when it is another kind or object type.
  template <typename T>
  T& as_object() const {
    if (!is_object<T>()) WrongObject(T::kTypeName);
    return *const_cast<T*>(static_cast<const T*>(static_cast<const Object*>(ref_.get())));
  }

  // Checked accessors: an InvalidArgument error naming the expected and actual kind (and
  // object type) instead of aborting.
  absl::StatusOr<int64_t> GetInt() const;
  absl::StatusOr<double> GetDouble() const;
  absl::StatusOr<bool> GetBool() const;
  absl::StatusOr<Shape> GetShape() const;
  absl::StatusOr<Tensor> GetTensor() const;
  absl::StatusOr<TupleFields> GetTuple() const;
  absl::StatusOr<std::string> GetString() const;
  absl::StatusOr<Closure> GetClosure() const;
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> GetObject() const {
    if (!is_object<T>()) return WrongObjectError(T::kTypeName);
    return std::static_pointer_cast<T>(as_object());
  }

  // "int", "tensor", ...
  static const char* KindName(Kind kind);
  // A short description for error messages: "tensor float32[7, 784]", "int 3", ...
  std::string Describe() const;

 private:
  void Expect(Kind kind, const char* accessor) const {
    if (kind_ != kind) [[unlikely]] WrongKind(kind, accessor);
  }
  [[noreturn]] void WrongKind(Kind expected, const char* accessor) const;
  [[noreturn]] void WrongObject(const char* expected_type) const;
  absl::Status WrongKindError(Kind expected) const;
  absl::Status WrongObjectError(const char* expected_type) const;

  Kind kind_ = Kind::kNone;
  union {
    int64_t i;
    double d;
    bool b;
  } scalar_{0};
  std::shared_ptr<const void> ref_;
};

}  // namespace kiln::vm
