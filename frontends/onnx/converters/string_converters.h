// String cases of converters that live elsewhere: Equal on strings (elementwise_converters.cc)
// and Cast / CastLike to or from STRING (tensor_converters.cc), handed over when an input or
// the target is a string tensor.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/node_context.h"

namespace kiln::frontends::onnx {

// A string constant or bound input (packed data) as a Relax expression: a kiln.string.make
// call, since the executable's constant pool holds no string tensors.
absl::StatusOr<relax::Expr> StringConstant(NodeContext& context, const relax::ConstantData& data);
// Whether input i is a tensor of dtype string.
bool InputIsString(NodeContext& context, int input);
// Equal(A, B) of two string tensors (broadcasting) -> bool.
absl::StatusOr<std::vector<Value>> ConvertStringEqual(NodeContext& context);
// Cast of input 0 to `to` where one side is STRING: numbers written as ONNX's reference
// writes them (float32 / float64 shortest round-trip, integers, bools) or parsed
// (builtins/string_builtins.cc kiln.string.from_number / to_number).
absl::StatusOr<std::vector<Value>> CastWithStrings(NodeContext& context, tir::DataType to);

}  // namespace kiln::frontends::onnx
