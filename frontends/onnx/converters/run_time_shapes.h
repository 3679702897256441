// Output shapes given by tensors computed at run time.
//
// Expand's shape, Reshape's shape, ConstantOfShape's input, Tile's repeats and Pad's pads
// usually are constants or shape values (known at import time). When a model computes one
// from run-time data (Split of a graph input, Max(Shape(x), shape)), the converters here
// take it as a tensor: the output dims are computed as an int64 tensor, made a shape by
// tensor_to_shape and named by a match_cast with fresh symbolic variables, which the VM
// defines when the function runs (the mechanism of relax/op/dynamic_shape.cc, as
// RangeAtRunTime and ConvertSliceAtRunTime). What the compiler cannot prove about the fresh
// dims (a broadcast dim, a reshape's element count) it checks at run time
// (relax/op/assumed_relations.h); a negative dim is tensor_to_shape's run-time error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontends/onnx/node_context.h"
#include "frontends/onnx/value.h"

namespace kiln::frontends::onnx {

// Whether input i holds a tensor computed at run time: no constant data, no shape value,
// and not a graph input (whose value binding supplies at import time: docs/onnx.md).
bool ComputedAtRunTime(NodeContext& c, int i);

// The dims held by `values` (a 1-d integer tensor of constant length): the entry of
// `known` where it has one (the match_cast checks it at run time), else a fresh symbolic
// variable named after the node's output and `what`, defined at run time.
using KnownEntries = std::vector<std::optional<PrimExpr>>;
absl::StatusOr<std::vector<PrimExpr>> DimsFromTensor(NodeContext& c, const relax::Expr& values, const std::string& what,
                                                     const KnownEntries& known = {});

// The converters' run-time paths, taken when ComputedAtRunTime says so for the input named.
absl::StatusOr<std::vector<Value>> ExpandAtRunTime(NodeContext& c);           // shape (input 1)
absl::StatusOr<std::vector<Value>> ReshapeAtRunTime(NodeContext& c);          // shape (input 1)
absl::StatusOr<std::vector<Value>> ConstantOfShapeAtRunTime(NodeContext& c,   // input 0
                                                            const relax::ConstantData& fill, int32_t narrow_type);
absl::StatusOr<std::vector<Value>> TileAtRunTime(NodeContext& c);             // repeats (input 1)
// Pad with pads (input 1) computed at run time; `value` the constant mode's fill, `axes`
// the padded axes (normalized; empty: all).
absl::StatusOr<std::vector<Value>> PadAtRunTime(NodeContext& c, const std::string& mode, double value,
                                                const std::vector<int64_t>& axes);

}  // namespace kiln::frontends::onnx
