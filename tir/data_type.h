// DataType: the element type of a scalar, vector or tensor.
//
// A type is (code, bits, lanes). Codes use DLPack's numbering, so a DataType converts to and
// from DLDataType without a table: int 0, uint 1, float 2, handle 3, bfloat 4, bool 6 (the
// value later DLPack versions give kDLBool). Bool is stored in 8 bits. lanes > 1 is a SIMD
// vector of that many elements (TIR only; tensors always have lanes == 1).
//
// Sub-byte integers: int1/2/4 and uint1/2/4 (bits dividing 8, so no element straddles a
// byte). Buffers and tensors of them are packed: element i of the flat, row-major element
// sequence lives in byte (i * bits) / 8 at bit (i * bits) % 8, low bits first -- for int4,
// element 2k is the low nibble of byte k and element 2k + 1 the high nibble, as GGML packs
// its 4-bit quants. n elements take StorageBytes(n) = ceil(n * bits / 8) bytes. Writing one
// element rewrites its whole byte (read-modify-write), so two threads must never write
// elements of the same byte at the same time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::tir {

class DataType {
 public:
  enum class Code : uint8_t {
    kInt = 0,
    kUInt = 1,
    kFloat = 2,
    kHandle = 3,
    kBFloat = 4,
    kBool = 6,
  };

  constexpr DataType() : DataType(Code::kInt, 64, 1) {}
  constexpr DataType(Code code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {Code::kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {Code::kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {Code::kFloat, bits, lanes}; }
  static constexpr DataType BFloat(int bits, int lanes = 1) { return {Code::kBFloat, bits, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {Code::kBool, 8, lanes}; }
  static constexpr DataType Handle() { return {Code::kHandle, 64, 1}; }
  static constexpr DataType Int64() { return Int(64); }
  static constexpr DataType Int32() { return Int(32); }
  static constexpr DataType Float32() { return Float(32); }

  constexpr Code code() const { return code_; }
  constexpr int bits() const { return bits_; }
  constexpr int lanes() const { return lanes_; }
  // Bytes one value of this type occupies on its own, vectors included (a lone int4 takes a
  // byte); arrays of sub-byte types are packed, see StorageBytes.
  constexpr int bytes() const { return (bits_ * lanes_ + 7) / 8; }
  // Bytes `count` values take in a packed array: ceil(count * bits * lanes / 8); for types
  // of whole bytes that is count * bytes(). No overflow for any count >= 0 whose result
  // fits in int64.
  constexpr int64_t StorageBytes(int64_t count) const {
    const int64_t bits = int64_t{bits_} * lanes_;
    return count / 8 * bits + (count % 8 * bits + 7) / 8;
  }
  // A sub-byte integer type (int4, uint2, ...): packed several to a byte.
  constexpr bool is_sub_byte() const { return (is_int() || is_uint()) && bits_ < 8; }

  constexpr bool is_int() const { return code_ == Code::kInt; }
  constexpr bool is_uint() const { return code_ == Code::kUInt; }
  constexpr bool is_float() const { return code_ == Code::kFloat; }
  constexpr bool is_bfloat() const { return code_ == Code::kBFloat; }
  constexpr bool is_bool() const { return code_ == Code::kBool; }
  constexpr bool is_handle() const { return code_ == Code::kHandle; }
  // Integer-valued: int or uint (bool is not).
  constexpr bool is_integer() const { return is_int() || is_uint(); }
  // Floating point of any width, bfloat included.
  constexpr bool is_floating() const { return is_float() || is_bfloat(); }
  constexpr bool is_scalar() const { return lanes_ == 1; }
  constexpr bool is_vector() const { return lanes_ > 1; }

  constexpr DataType with_lanes(int lanes) const { return {code_, bits_, lanes}; }
  constexpr DataType element_of() const { return with_lanes(1); }

  // "int64", "float32", "bool", "float32x8", "handle".
  std::string ToString() const;
  // Parses what ToString prints; the error says what was wrong.
  static absl::StatusOr<DataType> Parse(std::string_view text);
  // What Parse reads for a data type spelt as NumPy, PyTorch and `kiln run --input` spell it
  // ("f32", "fp16", "i64", "u8", "bf16", "float", "double", "half"): "float32", ...; empty
  // for any other text. The text parsers name it when such a spelling is not a data type.
  static std::string LongName(std::string_view shorthand);

  constexpr bool operator==(const DataType& other) const = default;

  template <typename H>
  friend H AbslHashValue(H h, const DataType& t) {
    return H::combine(std::move(h), static_cast<int>(t.code_), t.bits_, t.lanes_);
  }

 private:
  Code code_;
  uint8_t bits_;
  uint16_t lanes_;
};

}  // namespace kiln::tir
