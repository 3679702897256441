// Serialized ONNX TensorProto files (`.pb`: the backend test data's input_0.pb and
// output_0.pb, `kiln run --input x.pb`, `kiln import --bind NAME=FILE.pb`), read without
// exposing protobuf to the caller.
#pragma once

#include <string>
#include <vector>

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

// ONNX's non-tensor values, as the backend test data stores them: a SequenceProto of tensors,
// an OptionalProto (empty, or holding a tensor or such a sequence). Nothing in the file says
// which message it is, so the reader is told what the model declares.
enum class OnnxValueKind { kTensor, kSequence, kOptional };

struct OnnxValue {
  std::string name;
  bool present = true;       // false: an empty optional
  bool is_sequence = false;  // a sequence (else a tensor, or nothing when absent)
  std::vector<relax::ConstantData> tensors;  // the tensor, or the sequence's elements
};

// Errors: unreadable file, not a message of `kind`, maps, sparse tensors and nested
// sequences (not supported), and the tensor errors of ReadTensorFile.
absl::StatusOr<OnnxValue> ReadValueFile(const std::string& path, OnnxValueKind kind);

// ONNX 1.12's test data (Debian's libonnx-testdata) stores bfloat16 tensors as UINT16 bit
// patterns; `bits` (uint16) as the float32 data Kiln holds bfloat16 in. Other data is
// returned as it is.
relax::ConstantData BFloat16BitsAsFloat32(const relax::ConstantData& bits);

}  // namespace kiln::frontends::onnx
