// The element types of GGML tensors as GGUF files store them, and their block layout.
//
// A quantized type packs `block_size` consecutive elements of a row into `block_bytes`
// bytes (e.g. Q4_1: 32 elements in 20 bytes: a float16 scale, a float16 minimum and 32
// 4-bit values); plain types have block_size 1. A row's element count must be a multiple of
// the block size, so a tensor's byte size is (elements / block_size) * block_bytes.
// Type ids are those of ggml (GGUF tensor infos store them); ids that ggml retired or that
// Kiln does not know are refused by the reader with the id in the message.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::formats {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // as ggml prints it: "f32", "q4_1", "q6_K", ...
  int64_t block_size;     // elements per block
  int64_t block_bytes;    // bytes per block
};

// The layout of type id `id`, or nullopt when the id is not one of the types above.
std::optional<GgmlTypeInfo> FindGgmlType(uint32_t id);

// ggml's name of a type id that FindGgmlType does not know ("iq3_s" for 21, "tq1_0" for 34),
// for errors that name what a file holds; "" for an id ggml never had.
std::string_view UnknownGgmlTypeName(uint32_t id);

// The layout of a known type.
GgmlTypeInfo GgmlTypeLayout(GgmlType type);

}  // namespace kiln::formats
