#include "tests/reference/host_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"

namespace kiln::reference {
namespace {

// A binary16-like format with `exp_bits` exponent and `mant_bits` mantissa bits.
uint16_t EncodeSmallFloat(double value, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t exp_max = (1u << exp_bits) - 1;
  const uint32_t sign = std::signbit(value) ? 1u << (exp_bits + mant_bits) : 0u;
  double a = std::fabs(value);
  if (std::isnan(value)) return static_cast<uint16_t>(sign | exp_max << mant_bits | 1u << (mant_bits - 1));
  if (std::isinf(value)) return static_cast<uint16_t>(sign | exp_max << mant_bits);
  if (a < std::ldexp(1.0, 1 - bias)) {
    // Subnormal: multiples of 2^(1 - bias - mant_bits). Rounding up to 1 << mant_bits gives
    // exactly the smallest normal's encoding.
    auto q = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, bias - 1 + mant_bits)));
    return static_cast<uint16_t>(sign | q);
  }
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int exponent = e - 1;
  double frac = std::ldexp(a, -exponent);  // in [1, 2)
  auto q = static_cast<uint32_t>(std::nearbyint(std::ldexp(frac - 1.0, mant_bits)));
  if (q == (1u << mant_bits)) {
    q = 0;
    ++exponent;
  }
  if (exponent > bias) return static_cast<uint16_t>(sign | exp_max << mant_bits);
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(exponent + bias) << mant_bits | q);
}

double DecodeSmallFloat(uint16_t bits, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t exp_max = (1u << exp_bits) - 1;
  const bool negative = (bits >> (exp_bits + mant_bits)) & 1u;
  const uint32_t exp = (bits >> mant_bits) & exp_max;
  const uint32_t mant = bits & ((1u << mant_bits) - 1);
  double magnitude;
  if (exp == exp_max) {
    magnitude = mant != 0 ? std::numeric_limits<double>::quiet_NaN()
                          : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    magnitude = std::ldexp(static_cast<double>(mant), 1 - bias - mant_bits);
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -mant_bits),
                           static_cast<int>(exp) - bias);
  }
  return negative ? -magnitude : magnitude;
}

// Wraps an int64 to `bits` bits, sign- or zero-extended back to int64.
int64_t WrapInt(int64_t value, int bits, bool is_signed) {
  if (bits >= 64) return value;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(value) & mask;
  if (is_signed && (u >> (bits - 1)) != 0) u |= ~mask;
  return static_cast<int64_t>(u);
}

}  // namespace

bool IsSupportedDType(DataType t) {
  if (!t.is_scalar()) return false;
  if (t.is_bool()) return true;
  if (t.is_integer()) return t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  if (t.is_float()) return t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  return t.is_bfloat() && t.bits() == 16;
}

uint16_t EncodeHalf(double value) { return EncodeSmallFloat(value, 5, 10); }
double DecodeHalf(uint16_t bits) { return DecodeSmallFloat(bits, 5, 10); }
uint16_t EncodeBFloat16(double value) { return EncodeSmallFloat(value, 8, 7); }
double DecodeBFloat16(uint16_t bits) { return DecodeSmallFloat(bits, 8, 7); }

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  KILN_CHECK(IsSupportedDType(dtype_)) << "HostTensor: unsupported dtype " << dtype_.ToString();
  numel_ = 1;
  for (int64_t d : shape_) {
    KILN_CHECK_GE(d, 0);
    numel_ *= d;
  }
  bytes_.assign(static_cast<size_t>(numel_ * dtype_.bytes()), 0);
}

HostTensor HostTensor::FromDoubles(DataType dtype, std::vector<int64_t> shape,
                                   const std::vector<double>& values) {
  HostTensor t(dtype, std::move(shape));
  KILN_CHECK_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, values[static_cast<size_t>(i)]);
  return t;
}

HostTensor HostTensor::FromInts(DataType dtype, std::vector<int64_t> shape,
                                const std::vector<int64_t>& values) {
  HostTensor t(dtype, std::move(shape));
  KILN_CHECK_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) t.SetInt(i, values[static_cast<size_t>(i)]);
  return t;
}

HostTensor HostTensor::FromBytes(DataType dtype, std::vector<int64_t> shape,
                                 std::vector<uint8_t> bytes) {
  HostTensor t(dtype, std::move(shape));
  KILN_CHECK_EQ(bytes.size(), t.bytes_.size());
  t.bytes_ = std::move(bytes);
  return t;
}

double HostTensor::GetDouble(int64_t i) const {
  if (!dtype_.is_floating()) return static_cast<double>(GetInt(i));
  const uint8_t* p = bytes_.data() + i * dtype_.bytes();
  if (dtype_.is_bfloat() || dtype_.bits() == 16) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return dtype_.is_bfloat() ? DecodeBFloat16(bits) : DecodeHalf(bits);
  }
  if (dtype_.bits() == 32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  double d;
  std::memcpy(&d, p, 8);
  return d;
}

int64_t HostTensor::GetInt(int64_t i) const {
  if (dtype_.is_floating()) {
    double d = GetDouble(i);
    if (std::isnan(d)) return 0;
    if (d >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
    if (d <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(d);
  }
  const uint8_t* p = bytes_.data() + i * dtype_.bytes();
  uint64_t raw = 0;
  std::memcpy(&raw, p, static_cast<size_t>(dtype_.bytes()));  // little-endian host
  return WrapInt(static_cast<int64_t>(raw), dtype_.bits(), dtype_.is_int());
}

void HostTensor::SetDouble(int64_t i, double value) {
  if (!dtype_.is_floating()) {
    if (dtype_.is_bool()) {
      SetInt(i, value != 0.0 ? 1 : 0);
      return;
    }
    int64_t v;
    if (std::isnan(value)) {
      v = 0;
    } else if (value >= 9.2233720368547758e18) {
      v = std::numeric_limits<int64_t>::max();
    } else if (value <= -9.2233720368547758e18) {
      v = std::numeric_limits<int64_t>::min();
    } else {
      v = static_cast<int64_t>(value);  // truncates toward zero
    }
    SetInt(i, v);
    return;
  }
  uint8_t* p = bytes_.data() + i * dtype_.bytes();
  if (dtype_.is_bfloat() || dtype_.bits() == 16) {
    uint16_t bits = dtype_.is_bfloat() ? EncodeBFloat16(value) : EncodeHalf(value);
    std::memcpy(p, &bits, 2);
  } else if (dtype_.bits() == 32) {
    auto f = static_cast<float>(value);
    std::memcpy(p, &f, 4);
  } else {
    std::memcpy(p, &value, 8);
  }
}

void HostTensor::SetInt(int64_t i, int64_t value) {
  if (dtype_.is_floating()) {
    SetDouble(i, static_cast<double>(value));
    return;
  }
  if (dtype_.is_bool()) value = value != 0 ? 1 : 0;
  uint64_t raw = static_cast<uint64_t>(value);
  std::memcpy(bytes_.data() + i * dtype_.bytes(), &raw, static_cast<size_t>(dtype_.bytes()));
}

void HostTensor::CopyElement(int64_t i, const HostTensor& src, int64_t src_index) {
  KILN_CHECK(src.dtype_ == dtype_);
  const int n = dtype_.bytes();
  std::memcpy(bytes_.data() + i * n, src.bytes_.data() + src_index * n, static_cast<size_t>(n));
}

std::vector<double> HostTensor::ToDoubles() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = GetDouble(i);
  return out;
}

std::vector<int64_t> HostTensor::ToInts() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = GetInt(i);
  return out;
}

std::string HostTensor::TypeString() const {
  return absl::StrCat("Tensor(", ShapeString(shape_), ", ", dtype_.ToString(), ")");
}

}  // namespace kiln::reference
