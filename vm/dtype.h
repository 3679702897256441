// Element types at run time, as DLPack's DLDataType (the runtime does not use the
// compiler's tir::DataType; the numbering is the same: int 0, uint 1, float 2, bfloat 4,
// bool 6 stored in 8 bits).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include <dlpack/dlpack.h>

namespace kiln::vm {

inline constexpr uint8_t kDTypeBool = 6;

inline constexpr DLDataType DTypeFloat32() { return {kDLFloat, 32, 1}; }
inline constexpr DLDataType DTypeInt64() { return {kDLInt, 64, 1}; }

inline bool operator==(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(const DLDataType& a, const DLDataType& b) { return !(a == b); }

// Bytes per element (lanes included); a lone sub-byte element (int4) takes a byte.
inline int64_t DTypeBytes(DLDataType t) { return (int64_t{t.bits} * t.lanes + 7) / 8; }

// Bytes `numel` elements take in a tensor: sub-byte integers (int4, uint2, ...) are packed,
// low bits first (element 2k of an int4 tensor is the low nibble of byte k), so n int4
// elements take ceil(n / 2) bytes; other types take numel * DTypeBytes. The compiler's
// tir::DataType::StorageBytes agrees.
inline int64_t DTypeStorageBytes(DLDataType t, int64_t numel) {
  const int64_t bits = int64_t{t.bits} * t.lanes;
  return numel / 8 * bits + (numel % 8 * bits + 7) / 8;
}

// A dtype packed into one int64 (code | bits << 8 | lanes << 16), as bytecode immediates
// and builtin arguments carry it.
inline constexpr int64_t PackDType(DLDataType t) {
  return int64_t{t.code} | (int64_t{t.bits} << 8) | (int64_t{t.lanes} << 16);
}
inline constexpr DLDataType UnpackDType(int64_t packed) {
  return DLDataType{static_cast<uint8_t>(packed & 0xff), static_cast<uint8_t>((packed >> 8) & 0xff),
                    static_cast<uint16_t>((packed >> 16) & 0xffff)};
}

// Element `i` of compact data of scalar type `dtype` (bool, int/uint 8-64, float16/32/64,
// bfloat16) as a double: signed types read as signed, 64-bit integers beyond 2^53 rounded.
// NaN for any other type (vectors, sub-byte types).
double LoadElementAsDouble(const void* data, DLDataType dtype, int64_t i);
// Stores `value` as element `i`; integer types need a value they can represent (as a C++
// cast would), 16-bit floats round to nearest even, bool is value != 0. False, storing nothing, for types LoadElementAsDouble rejects.
bool StoreElementFromDouble(void* data, DLDataType dtype, int64_t i, double value);

// "float32", "int64", "bool", ...
std::string DTypeToString(DLDataType t);

// Accepts the long names ("float32") and the short ones of support/dtype_short_names.h
// ("f32", "fp16", "i64", "u8", "bf16"), and "bool".
absl::StatusOr<DLDataType> ParseDType(const std::string& text);

}  // namespace kiln::vm
