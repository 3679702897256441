// ONNX element types narrower than any Kiln dtype: the float8 formats (E4M3FN, E4M3FNUZ,
// E5M2, E5M2FNUZ, E8M0), FLOAT4E2M1, FLOAT6E2M3 / FLOAT6E3M2 (ONNX 1.23's Cast, CastLike and
// (De)QuantizeLinear 28 list them), INT4/UINT4 and INT2/UINT2 (ONNX 1.14 to 1.23; the
// protobuf of Debian's libonnx 1.12 does not name them, hence the numbers here), and
// BFLOAT16, which Kiln names but no backend computes in.
//
// Kiln holds such a tensor *widened*: its values in a storage dtype that represents every
// one of them exactly — float32 for the float formats, int8 / uint8 for the integers. A
// value of a narrow type is therefore always one of the type's values: tensor data is
// decoded when read (packed 4- and 2-bit elements unpacked), and the converters that
// *produce* a narrow type (Cast, CastLike, QuantizeLinear) round, saturate or wrap to it
// (converters/narrowing.h). Operators that only move elements (Reshape, Transpose, ...) keep
// the values as they are; the ONNX checker allows no arithmetic on these types except
// BFLOAT16's: every operator that produces bfloat16 rounds its float32 result to it
// (bfloat16_outputs.h), as ONNX's reference computes each operator in float32 and stores
// bfloat16.
#pragma once

#include <cstdint>
#include <string>

#include "tir/data_type.h"

namespace kiln::frontends::onnx {

enum OnnxNarrowTypeId : int32_t {
  kOnnxBFloat16 = 16,
  kOnnxFloat8E4M3FN = 17,
  kOnnxFloat8E4M3FNUZ = 18,
  kOnnxFloat8E5M2 = 19,
  kOnnxFloat8E5M2FNUZ = 20,
  kOnnxUInt4 = 21,
  kOnnxInt4 = 22,
  kOnnxFloat4E2M1 = 23,
  kOnnxFloat8E8M0 = 24,
  kOnnxUInt2 = 25,
  kOnnxInt2 = 26,
  kOnnxFloat6E2M3 = 27,
  kOnnxFloat6E3M2 = 28,
};

struct NarrowType {
  int32_t onnx_type;
  const char* name;         // ONNX's name, e.g. "FLOAT8E4M3FN"
  int bits;                 // bits per element in ONNX's encoding (packed when < 8, little-endian when 16)
  tir::DataType storage;    // how Kiln holds the values
  // Integers: signed or not. Floats: 1 sign bit (none for E8M0), exponent_bits,
  // mantissa_bits, the exponent bias.
  bool is_float;
  bool is_signed;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  // Float encodings of the special values: `has_inf` (only E5M2: IEEE-like, exponent all
  // ones), `fnuz` (no negative zero, NaN is the bit pattern of -0), `nan_all_ones` (E4M3FN:
  // only S.1111.111 is NaN, no infinities), no NaN at all (FLOAT4E2M1, the FLOAT6s).
  bool has_inf;
  bool fnuz;
  bool nan_all_ones;
  bool has_nan;
  double max;   // the largest finite value (floats), or the largest integer
  double min;   // the smallest integer (integers), -max for signed floats
};

// The narrow type with this ONNX TensorProto.DataType number, or null.
const NarrowType* FindNarrowType(int32_t onnx_type);

// The value of one element's code (its `bits` low bits) as a double (NaN, infinities and
// signed zeros included).
double DecodeNarrow(const NarrowType& type, uint32_t code);

// The bytes `count` elements take in ONNX's packed encoding (sub-byte elements one bit
// stream, low bits first: 2 / 4 bits a byte, 6-bit ones 4 in 3 bytes; the last byte padded).
int64_t NarrowPackedBytes(const NarrowType& type, int64_t count);

// Unpacks `count` elements from `packed` (NarrowPackedBytes(type, count) bytes) into
// `out`, `count` elements of `type.storage`.
void UnpackNarrow(const NarrowType& type, const uint8_t* packed, int64_t count, uint8_t* out);

}  // namespace kiln::frontends::onnx
