// NumPy .npy files (format versions 1-3), for feeding inputs to and saving outputs from
// `kiln run`. Little-endian, C order; bool, int8-64, uint8-64, float16/32/64.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "vm/tensor.h"

namespace kiln::vm {

absl::StatusOr<Tensor> ReadNpy(const std::string& path);
absl::Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace kiln::vm
