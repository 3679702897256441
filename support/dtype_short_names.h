// The short spellings of data types that NumPy, PyTorch and `kiln run --input` use (f32,
// fp16, i64, u8, bf16) against the long names Kiln writes (float32, float16, int64, uint8,
// bfloat16). One table for the runtime, which accepts both (vm::ParseDType), and the IR text
// parsers, which accept only the long names and name them when a short one is written
// (tir::DataType::LongName); neither library can depend on the other.
#pragma once

#include <string>
#include <string_view>

namespace kiln::support {

// `text` with its short prefix spelt out: "f32" -> "float32", "fp16" -> "float16",
// "bf16" -> "bfloat16", "i64" -> "int64", "u8" -> "uint8". Empty when `text` does not start
// with a short prefix followed by a digit ("i", "index", "float32"). Whether the result is a
// data type ("f7" gives "float7") is the caller's to check.
std::string ExpandShortDTypeName(std::string_view text);

}  // namespace kiln::support
