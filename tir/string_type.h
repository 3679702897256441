// The `string` element type (ONNX's STRING): tir::DataType(kHandle, 128 bits), spelled
// "string" in the text format. An element is an opaque (pointer, byte length) pair into bytes
// the tensor's memory owner keeps (vm/string_tensor.h), so only host builtins create or read
// string tensors; no kernel does (LegalizeOps refuses operators over them).
#pragma once

#include "tir/data_type.h"

namespace kiln::tir {

inline constexpr DataType StringType() { return DataType(DataType::Code::kHandle, 128, 1); }
inline constexpr bool IsStringType(DataType t) { return t == StringType(); }

}  // namespace kiln::tir
