// Serialized ONNX TensorProto files (`.pb`: the backend test data's input_0.pb and
// output_0.pb, `kiln run --input x.pb`, `kiln import --bind NAME=FILE.pb`), read without
// exposing protobuf to the caller.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "relax/expr.h"

namespace kiln::frontends::onnx {

struct NamedTensor {
  std::string name;  // the TensorProto's name (may be empty)
  relax::ConstantData data;
};

// Errors: unreadable file, not a TensorProto, unsupported element type (strings), sizes
// that do not match the dims (tensor_proto.h).
absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path);

// ONNX 1.12's test data (Debian's libonnx-testdata) stores bfloat16 tensors as UINT16 bit
// patterns; `bits` (uint16) as the float32 data Kiln holds bfloat16 in. Other data is
// returned as it is.
relax::ConstantData BFloat16BitsAsFloat32(const relax::ConstantData& bits);

}  // namespace kiln::frontends::onnx
