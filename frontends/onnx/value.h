// What the importer knows about one ONNX value (a graph input, an initializer or a node
// output) while it walks the graph.
//
// Three kinds of knowledge, any of which may be present:
//  - `expr`: the Relax expression that holds it at run time (a Var, or a Constant);
//  - `data`: its contents, when known at import time (initializers, Constant nodes, bound
//    graph inputs, folded shape computations);
//  - `elements`: for an integer (or bool) tensor of rank 0 or 1, its elements as symbolic
//    tir expressions — the *shape values* ONNX models compute with Shape -> Gather ->
//    Concat -> Reshape. `Shape(x)` of a tensor of shape (b, n, 768) has elements [b, n, 768]
//    without any data; a Reshape to them becomes a reshape to a symbolic shape.
// A value with only `data` or `elements` gets its `expr` when a converter first needs it as a
// tensor (NodeContext::Input materializes it).
//
// ONNX's non-tensor types are held at import time: a sequence (seq(tensor)) as the list of its
// element Values, its length always known (sequence_converters.cc); an optional holding a value
// as that value, an empty one as `is_none`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "relax/expr.h"
#include "tir/expr.h"

namespace kiln::frontends::onnx {

using tir::PrimExpr;

struct Value {
  relax::Expr expr;
  std::optional<relax::ConstantData> data;
  std::optional<std::vector<PrimExpr>> elements;
  int elements_rank = 1;                         // 0 (a scalar) or 1, when `elements` is set
  tir::DataType elements_dtype = tir::DataType::Int64();
  // The ONNX element type when it is a narrow one held widened (narrow_types.h: float8
  // values in float32, int4 in int8), else 0. Set for graph inputs, initializers and the
  // outputs of Cast / CastLike / QuantizeLinear; CastLike reads it from `like`.
  int32_t narrow_type = 0;
  // A run-time 1-d integer tensor whose entries are partly known at import time (a Concat
  // of shape values and run-time pieces): one per element, nullopt where known only at run
  // time; empty when not tracked. An operator reading a shape from a run-time tensor keeps
  // the known entries as they are (converters/run_time_shapes.h).
  std::vector<std::optional<PrimExpr>> known_entries;
  // A sequence: `sequence` holds its elements (tensors), in order.
  bool is_sequence = false;
  std::vector<Value> sequence;
  // An empty optional.
  bool is_none = false;

  bool is_tensor() const { return !is_sequence && !is_none; }

  static Value Of(relax::Expr expr) {
    Value v;
    v.expr = std::move(expr);
    return v;
  }
  static Value OfData(relax::ConstantData data) {
    Value v;
    v.data = std::move(data);
    return v;
  }
  static Value OfSequence(std::vector<Value> elements) {
    Value v;
    v.is_sequence = true;
    v.sequence = std::move(elements);
    return v;
  }
  static Value None() {
    Value v;
    v.is_none = true;
    return v;
  }
  // A rank-0 (one element) or rank-1 integer tensor of known elements.
  static Value OfElements(std::vector<PrimExpr> elements, tir::DataType dtype = tir::DataType::Int64(), int rank = 1) {
    Value v;
    v.elements = std::move(elements);
    v.elements_dtype = dtype;
    v.elements_rank = rank;
    return v;
  }
};

// The element values of small integer data of rank 0 or 1 (at most kMaxShapeValueElements),
// else nullopt: what shape-value propagation works on.
inline constexpr int64_t kMaxShapeValueElements = 64;
std::optional<std::vector<PrimExpr>> ElementsOfData(const relax::ConstantData& data);
// Whether every element is a constant; then `out` (may be null) receives them.
bool AllConstant(const std::vector<PrimExpr>& elements, std::vector<int64_t>* out);
// Host data holding integer `values` as `dtype` (an integer or bool type) and `shape`.
relax::ConstantData IntData(const std::vector<int64_t>& values, tir::DataType dtype, std::vector<int64_t> shape);
// Reads element i of integer/bool/float data as a double / as an int64 (floats truncated).
double ElementAsDouble(const relax::ConstantData& data, int64_t i);
int64_t ElementAsInt(const relax::ConstantData& data, int64_t i);

}  // namespace kiln::frontends::onnx
