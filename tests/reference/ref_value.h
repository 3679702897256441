// RefValue: a run-time Relax value as the reference evaluator sees it.
//
// A tensor (HostTensor), a Prim scalar (int/uint/bool held as int64, float as double, with
// its dtype), a shape (int64 dims), a tuple of values, a string, or a function of the module
// (by name, for `f = @square; f(x)`).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/reference/host_tensor.h"

namespace kiln::reference {

struct PrimScalar {
  DataType dtype = DataType::Int64();
  int64_t int_value = 0;   // int, uint and bool
  double float_value = 0;  // floating point

  double AsDouble() const { return dtype.is_floating() ? float_value : static_cast<double>(int_value); }
  // Floats truncate toward zero; NaN is 0 and out-of-range values saturate.
  int64_t AsInt() const {
    if (!dtype.is_floating()) return int_value;
    if (std::isnan(float_value)) return 0;
    if (float_value >= 9.2233720368547758e18) return INT64_MAX;
    if (float_value <= -9.2233720368547758e18) return INT64_MIN;
    return static_cast<int64_t>(float_value);
  }
  bool AsBool() const { return dtype.is_floating() ? float_value != 0 : int_value != 0; }
};

class RefValue {
 public:
  enum class Kind { kTensor, kPrim, kShape, kTuple, kString, kFunction };

  RefValue() = default;
  RefValue(HostTensor tensor);  // NOLINT(google-explicit-constructor): tensors are common
  static RefValue Prim(PrimScalar value);
  static RefValue Int(int64_t value, DataType dtype = DataType::Int64());
  static RefValue Float(double value, DataType dtype = DataType::Float(64));
  static RefValue Bool(bool value);
  static RefValue Shape(std::vector<int64_t> dims);
  static RefValue Tuple(std::vector<RefValue> fields);
  static RefValue String(std::string value);
  static RefValue Function(std::string name);

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  // Accessors KILN_CHECK the kind.
  const HostTensor& tensor() const;
  const PrimScalar& prim() const;
  const std::vector<int64_t>& shape() const;  // a Shape value's dims
  const std::vector<RefValue>& fields() const;
  const std::string& str() const;            // a String's text or a Function's name

  // "Tensor((2, 3), float32)", "Prim(int64, 5)", "Shape((2, 3))", "Tuple(...)".
  std::string TypeString() const;

 private:
  Kind kind_ = Kind::kTuple;
  HostTensor tensor_;
  PrimScalar prim_;
  std::vector<int64_t> shape_;
  std::vector<RefValue> fields_;
  std::string str_;
};

}  // namespace kiln::reference
