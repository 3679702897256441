// Operators that compute on bfloat16. Kiln's backends have no bfloat16 arithmetic, so the
// importer holds bfloat16 tensors widened in float32 (narrow_types.h) and every converter
// computes in float32; what makes the result bfloat16 again is this step, run on each
// node's outputs after its converter: an output whose ONNX type is bfloat16 is rounded to
// it (to nearest even, converters/narrowing.h) and tagged, so that the next operator knows.
// ONNX's reference does the same (ml_dtypes computes each operator in float32 and stores
// bfloat16), so results match it to the last bit where the converter's float32 arithmetic
// matches the reference's.
//
// An output's ONNX type is not recorded in node test models' intermediate values, so it is
// inferred as ONNX's type constraints tie it: a float output has the type of the node's
// first float input (OneHot: `values`; DequantizeLinear: `x_scale`; CastLike: `like`; an
// explicit `to` / `dtype` / `output_dtype` attribute wins), and LayerNormalization's
// statistics and BatchNormalization's running statistics follow their own inputs.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "frontends/onnx/node_context.h"
#include "frontends/onnx/value.h"

namespace kiln::frontends::onnx {

// Rounds and tags the outputs of the node `context` converted whose ONNX type is bfloat16.
// Operators that only move or select elements keep bfloat16 values as they are: their
// outputs are tagged without rounding.
absl::Status RoundBFloat16Outputs(NodeContext& context, std::vector<Value>& outputs);

}  // namespace kiln::frontends::onnx
