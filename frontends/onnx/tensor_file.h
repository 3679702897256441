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

}  // namespace kiln::frontends::onnx
