// How Kiln sees a GGUF tensor: the dtype and shape of the tensor that holds its bytes.
//
// The compiler declares a GGUF tensor as an external constant of exactly this dtype and
// shape (relax/models/), and the runtime hands the mapped bytes over as a tensor of the
// same dtype and shape (serving/gguf_weight_provider.h); keeping the rule in one place is
// what makes the loader's check of one against the other meaningful.
//
//  - f32, f16, bf16, f64 and the integer types: that element type, the tensor's shape;
//  - block-quantized types (q4_0, q4_1, q8_0, the k-quants, ...): uint8, the tensor's shape
//    with the last dim replaced by its bytes per row (last dim / block size * block bytes):
//    each row is a whole number of blocks, which the GGUF reader has checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf_file.h"

namespace kiln::formats {

struct GgufTensorView {
  std::string dtype;           // "float32", "float16", "bfloat16", "uint8", "int8", ...
  std::vector<int64_t> shape;  // outermost first
  bool quantized = false;      // uint8 rows of blocks
};

GgufTensorView ViewOf(const GgufTensor& tensor);

}  // namespace kiln::formats
