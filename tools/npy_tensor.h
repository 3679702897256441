// .npy arrays (formats/npy.h) as runtime tensors, for `kiln run`'s inputs and outputs.
// Reading wraps the mapped file's data in a Tensor without copying when it is 64-byte
// aligned (NumPy pads the header so it is), else copies it; the tensor keeps the mapping
// alive and is read-only when it is a view.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "vm/tensor.h"

namespace kiln::tools {

absl::StatusOr<vm::Tensor> ReadNpyTensor(const std::string& path);
// bool, int/uint 8-64 and float16/32/64 (NumPy has no bfloat16: that is an error); a string
// tensor as '<U<n>' (n its longest element; an element that is not UTF-8 is an error).
// Reading gives '<U<n>' arrays as string tensors (UTF-8).
absl::Status WriteNpyTensor(const std::string& path, const vm::Tensor& tensor);

}  // namespace kiln::tools
