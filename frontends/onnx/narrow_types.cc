#include "frontends/onnx/narrow_types.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::frontends::onnx {
namespace {

using tir::DataType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// name, bits, storage, is_float, is_signed, exponent_bits, mantissa_bits, bias, has_inf,
// fnuz, nan_all_ones, has_nan, max, min (the float formats as in the ONNX spec's table).
const NarrowType kTypes[] = {
    // bfloat16: float32's sign and exponent, 7 mantissa bits; IEEE infinities and NaNs.
    {kOnnxBFloat16, "BFLOAT16", 16, DataType::Float(32), true, true, 8, 7, 127, true, false, false, true,
     std::ldexp(255.0, 120), -std::ldexp(255.0, 120)},
    {kOnnxFloat8E4M3FN, "FLOAT8E4M3FN", 8, DataType::Float(32), true, true, 4, 3, 7, false, false, true, true, 448, -448},
    {kOnnxFloat8E4M3FNUZ, "FLOAT8E4M3FNUZ", 8, DataType::Float(32), true, true, 4, 3, 8, false, true, false, true, 240,
     -240},
    {kOnnxFloat8E5M2, "FLOAT8E5M2", 8, DataType::Float(32), true, true, 5, 2, 15, true, false, false, true, 57344,
     -57344},
    {kOnnxFloat8E5M2FNUZ, "FLOAT8E5M2FNUZ", 8, DataType::Float(32), true, true, 5, 2, 16, false, true, false, true,
     57344, -57344},
    {kOnnxFloat8E8M0, "FLOAT8E8M0", 8, DataType::Float(32), true, false, 8, 0, 127, false, false, false, true,
     std::ldexp(1.0, 127), std::ldexp(1.0, -127)},
    {kOnnxFloat4E2M1, "FLOAT4E2M1", 4, DataType::Float(32), true, true, 2, 1, 1, false, false, false, false, 6, -6},
    // The OCP microscaling FP6 formats: every code finite, no NaN.
    {kOnnxFloat6E2M3, "FLOAT6E2M3", 6, DataType::Float(32), true, true, 2, 3, 1, false, false, false, false, 7.5,
     -7.5},
    {kOnnxFloat6E3M2, "FLOAT6E3M2", 6, DataType::Float(32), true, true, 3, 2, 3, false, false, false, false, 28, -28},
    {kOnnxInt4, "INT4", 4, DataType::Int(8), false, true, 0, 0, 0, false, false, false, false, 7, -8},
    {kOnnxUInt4, "UINT4", 4, DataType::UInt(8), false, false, 0, 0, 0, false, false, false, false, 15, 0},
    {kOnnxInt2, "INT2", 2, DataType::Int(8), false, true, 0, 0, 0, false, false, false, false, 1, -2},
    {kOnnxUInt2, "UINT2", 2, DataType::UInt(8), false, false, 0, 0, 0, false, false, false, false, 3, 0},
};

}  // namespace

const NarrowType* FindNarrowType(int32_t onnx_type) {
  for (const NarrowType& type : kTypes) {
    if (type.onnx_type == onnx_type) return &type;
  }
  return nullptr;
}

double DecodeNarrow(const NarrowType& type, uint32_t code) {
  code &= (1u << type.bits) - 1;
  if (!type.is_float) {
    // Two's complement in `bits` bits.
    const int64_t value = code;
    return type.is_signed && (code >> (type.bits - 1)) != 0 ? static_cast<double>(value - (int64_t{1} << type.bits))
                                                             : static_cast<double>(value);
  }
  if (type.onnx_type == kOnnxFloat8E8M0) return code == 0xff ? kNaN : std::ldexp(1.0, static_cast<int>(code) - 127);
  const int m = type.mantissa_bits, e = type.exponent_bits;
  const uint32_t sign_bit = 1u << (e + m);
  if (type.fnuz && code == sign_bit) return kNaN;
  const bool negative = (code & sign_bit) != 0;
  const uint32_t exponent = (code >> m) & ((1u << e) - 1), mantissa = code & ((1u << m) - 1);
  const uint32_t exponent_ones = (1u << e) - 1, mantissa_ones = (1u << m) - 1;
  double magnitude;
  if (type.has_inf && exponent == exponent_ones) {
    magnitude = mantissa == 0 ? kInf : kNaN;
  } else if (type.nan_all_ones && exponent == exponent_ones && mantissa == mantissa_ones) {
    magnitude = kNaN;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - type.bias - m);  // subnormal
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa + (1u << m)), static_cast<int>(exponent) - type.bias - m);
  }
  return negative ? -magnitude : magnitude;
}

int64_t NarrowPackedBytes(const NarrowType& type, int64_t count) {
  if (type.bits >= 8) return count * (type.bits / 8);
  return (count * type.bits + 7) / 8;
}

void UnpackNarrow(const NarrowType& type, const uint8_t* packed, int64_t count, uint8_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t code;
    if (type.bits == 16) {
      code = packed[2 * i] | (uint32_t{packed[2 * i + 1]} << 8);
    } else if (type.bits == 8) {
      code = packed[i];
    } else {  // bit `first` of the stream on: a 6-bit element may straddle two bytes
      const int64_t first = i * type.bits, byte = first / 8;
      uint32_t window = packed[byte];
      if ((first % 8) + type.bits > 8) window |= uint32_t{packed[byte + 1]} << 8;
      code = (window >> (first % 8)) & ((1u << type.bits) - 1);
    }
    const double value = DecodeNarrow(type, code);
    if (type.storage.is_float()) {
      const float f = static_cast<float>(value);
      std::memcpy(out + i * 4, &f, 4);
    } else if (type.storage.is_int()) {
      const int8_t v = static_cast<int8_t>(value);
      std::memcpy(out + i, &v, 1);
    } else {
      out[i] = static_cast<uint8_t>(value);
    }
  }
}

}  // namespace kiln::frontends::onnx
