// Elementwise operators on shape values (value.h) folded at import time.
//
// The function bodies of ONNX's newer operators (Attention's, CenterCropPad's) compute their
// shapes with comparisons, Where, Mod and logic over Shape outputs: `Where(Equal(Hq, Hkv), 1,
// Hq / Hkv)` decides Expand's shape. Folding those on the (possibly symbolic) elements keeps
// the result a shape value, so Expand / Reshape / ConstantOfShape / Range get shapes they
// can use instead of run-time data.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "frontends/onnx/node_context.h"
#include "frontends/onnx/value.h"
#include "tir/expr.h"

namespace kiln::frontends::onnx {

// One result element from one element of each input; nullopt gives up (e.g. a comparison
// whose outcome cannot be proved at import time).
using ElementFold = std::function<std::optional<PrimExpr>(const std::vector<PrimExpr>& elements)>;

// Folds inputs [0, num_inputs) when every one is a shape value of integer or bool type and
// their lengths broadcast (equal, or 1). The result has dtype `result_dtype` (nullopt:
// input 0's) and the largest input rank. nullopt when anything does not fold; the caller
// then emits the operator on tensors.
std::optional<Value> FoldShapeValues(NodeContext& context, int num_inputs, std::optional<tir::DataType> result_dtype,
                                     const ElementFold& fold);

// A condition's truth as a bool element (1 or 0) when the analyzer proves it either way.
std::optional<PrimExpr> ProvenTruth(const PrimExpr& condition);

}  // namespace kiln::frontends::onnx
