#include "tests/reference/ref_value.h"

#include "absl/strings/str_cat.h"
#include "support/check.h"

namespace kiln::reference {

RefValue::RefValue(HostTensor tensor) : kind_(Kind::kTensor), tensor_(std::move(tensor)) {}

RefValue RefValue::Prim(PrimScalar value) {
  RefValue v;
  v.kind_ = Kind::kPrim;
  v.prim_ = value;
  return v;
}

RefValue RefValue::Int(int64_t value, DataType dtype) {
  return Prim(PrimScalar{dtype, value, 0.0});
}

RefValue RefValue::Float(double value, DataType dtype) {
  return Prim(PrimScalar{dtype, 0, value});
}

RefValue RefValue::Bool(bool value) { return Prim(PrimScalar{DataType::Bool(), value ? 1 : 0, 0.0}); }

RefValue RefValue::Shape(std::vector<int64_t> dims) {
  RefValue v;
  v.kind_ = Kind::kShape;
  v.shape_ = std::move(dims);
  return v;
}

RefValue RefValue::Tuple(std::vector<RefValue> fields) {
  RefValue v;
  v.kind_ = Kind::kTuple;
  v.fields_ = std::move(fields);
  return v;
}

RefValue RefValue::String(std::string value) {
  RefValue v;
  v.kind_ = Kind::kString;
  v.str_ = std::move(value);
  return v;
}

RefValue RefValue::Function(std::string name) {
  RefValue v;
  v.kind_ = Kind::kFunction;
  v.str_ = std::move(name);
  return v;
}

const HostTensor& RefValue::tensor() const {
  KILN_CHECK(kind_ == Kind::kTensor);
  return tensor_;
}
const PrimScalar& RefValue::prim() const {
  KILN_CHECK(kind_ == Kind::kPrim);
  return prim_;
}
const std::vector<int64_t>& RefValue::shape() const {
  KILN_CHECK(kind_ == Kind::kShape);
  return shape_;
}
const std::vector<RefValue>& RefValue::fields() const {
  KILN_CHECK(kind_ == Kind::kTuple);
  return fields_;
}
const std::string& RefValue::str() const {
  KILN_CHECK(kind_ == Kind::kString || kind_ == Kind::kFunction);
  return str_;
}

std::string RefValue::TypeString() const {
  switch (kind_) {
    case Kind::kTensor:
      return tensor_.TypeString();
    case Kind::kPrim:
      return absl::StrCat("Prim(", prim_.dtype.ToString(), ", ",
                          prim_.dtype.is_floating() ? absl::StrCat(prim_.float_value)
                                                    : absl::StrCat(prim_.int_value),
                          ")");
    case Kind::kShape:
      return absl::StrCat("Shape(", ShapeString(shape_), ")");
    case Kind::kTuple: {
      std::string s = "Tuple(";
      for (size_t i = 0; i < fields_.size(); ++i) {
        absl::StrAppend(&s, i ? ", " : "", fields_[i].TypeString());
      }
      return s + ")";
    }
    case Kind::kString:
      return "String";
    case Kind::kFunction:
      return absl::StrCat("Function(@", str_, ")");
  }
  return "?";
}

}  // namespace kiln::reference
