#include "vm/value.h"

#include "absl/strings/str_cat.h"

namespace kiln::vm {

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
  v.kind_ = Kind::kObject;
  v.ref_ = std::move(object);
  return v;
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
    case Kind::kObject: return absl::StrCat("object ", as_object()->type_name());
    default: return KindName(kind_);
  }
}

}  // namespace kiln::vm
