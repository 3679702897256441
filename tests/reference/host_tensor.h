// HostTensor: a tiny dense, row-major host array for the reference evaluator.
//
// Deliberately independent of the runtime's vm::Tensor (and of everything the CPU compiler
// produces) so that the reference shares no code with what it checks. Elements are stored in
// their dtype's own width (little-endian); reads widen to double or int64 and writes narrow
// back:
//  - float16 / bfloat16 / float32 writes round to nearest even; float64 is exact;
//  - integer writes wrap to the dtype's width (two's complement); a double written to an
//    integer dtype truncates toward zero (NaN becomes 0, out-of-range values saturate);
//  - bool stores 0 or 1 (any non-zero value written is true).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tir/data_type.h"

namespace kiln::reference {

using tir::DataType;

class HostTensor {
 public:
  HostTensor() = default;
  // Zero-filled. KILN_CHECKs that dtype is a scalar int/uint/float/bfloat/bool type and
  // that no dim is negative.
  HostTensor(DataType dtype, std::vector<int64_t> shape);

  // Convenience constructors for tests; values.size() must equal the element count.
  static HostTensor FromDoubles(DataType dtype, std::vector<int64_t> shape,
                                const std::vector<double>& values);
  static HostTensor FromInts(DataType dtype, std::vector<int64_t> shape,
                             const std::vector<int64_t>& values);
  // Takes raw little-endian element bytes (bytes.size() == numel * dtype bytes).
  static HostTensor FromBytes(DataType dtype, std::vector<int64_t> shape,
                              std::vector<uint8_t> bytes);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  // Element `i` of the flattened array.
  double GetDouble(int64_t i) const;
  int64_t GetInt(int64_t i) const;
  void SetDouble(int64_t i, double value);
  void SetInt(int64_t i, int64_t value);
  // Copies element `src_index` of `src` (same dtype) into element `i`, bit for bit.
  void CopyElement(int64_t i, const HostTensor& src, int64_t src_index);

  // Typed access for kernels written once for double and int64_t.
  template <typename T>
  T Get(int64_t i) const;
  void Set(int64_t i, double value) { SetDouble(i, value); }
  void Set(int64_t i, int64_t value) { SetInt(i, value); }

  std::vector<double> ToDoubles() const;
  std::vector<int64_t> ToInts() const;

  // "Tensor((2, 3), float32)".
  std::string TypeString() const;

 private:
  DataType dtype_ = DataType::Float32();
  std::vector<int64_t> shape_;
  int64_t numel_ = 1;
  std::vector<uint8_t> bytes_;
};

template <>
inline double HostTensor::Get<double>(int64_t i) const {
  return GetDouble(i);
}
template <>
inline int64_t HostTensor::Get<int64_t>(int64_t i) const {
  return GetInt(i);
}

// Whether HostTensor can hold elements of `dtype`: scalar bool, int/uint 8-64, float 16-64,
// bfloat16.
bool IsSupportedDType(DataType dtype);

// "(2, 3)".
std::string ShapeString(const std::vector<int64_t>& shape);

// IEEE-style 16-bit formats, exposed for tests: round to nearest even, overflow to inf.
uint16_t EncodeHalf(double value);
double DecodeHalf(uint16_t bits);
uint16_t EncodeBFloat16(double value);
double DecodeBFloat16(uint16_t bits);

}  // namespace kiln::reference
