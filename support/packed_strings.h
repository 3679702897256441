// The packed host form of a tensor of strings (ONNX's STRING element type) that the compiler
// and the runtime exchange as plain bytes (relax::ConstantData of dtype `string`, test data,
// `.npy` files): numel little-endian uint64 byte lengths, then the strings' bytes back to
// back. At run time such a tensor is a vm string tensor (vm/string_tensor.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::support {

std::vector<uint8_t> PackStrings(const std::vector<std::string>& strings);
// `numel` strings from `size` bytes; an InvalidArgument error when the lengths do not add up
// to the bytes exactly.
absl::StatusOr<std::vector<std::string>> UnpackStrings(const uint8_t* bytes, size_t size, int64_t numel);

}  // namespace kiln::support
