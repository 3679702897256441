// ONNX's sequence and optional operators, resolved at import time.
//
// Kiln's functions hold tensors and tuples, not growable lists, so a sequence (seq(tensor))
// is held by the importer as the list of its element Values (value.h): its length is always
// known at import time, and every operator on it only rearranges that list. Positions
// (SequenceAt, SequenceInsert, SequenceErase) must therefore be known at import time too (a
// constant, or a loop's step index once Loop is unrolled). The tensors themselves stay
// run-time values: SplitToSequence slices one, ConcatFromSequence concatenates or stacks
// them, SequenceMap converts its body once per element.
//
// An optional holding a value is that value; an empty one is Value::None(). So
// OptionalHasElement is known at import time, and OptionalGetElement of an empty optional is
// an error of the model.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Sequences longer than this are refused: each element is a separate value at import time.
constexpr int64_t kMaxSequenceLength = 1 << 16;

absl::StatusOr<const Value*> SequenceInput(NodeContext& c, int i) {
  const Value* v = c.InputValue(i);
  if (v == nullptr) return c.Error("input ", i, " is required but missing");
  if (!v->is_sequence) return c.Error("input '", c.input_name(i), "' must be a sequence");
  return v;
}

std::vector<Value> One(Value v) {
  std::vector<Value> out;
  out.push_back(std::move(v));
  return out;
}

// The position input `i` (a scalar known at import time), or `fallback` when absent;
// negative positions count from the end. Valid positions are [0, limit].
absl::StatusOr<int64_t> Position(NodeContext& c, int i, int64_t length, int64_t limit, int64_t fallback) {
  if (!c.has_input(i)) return fallback;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.InputInts(i));
  if (v.size() != 1) return c.Error("position must be a scalar");
  int64_t p = v[0];
  if (p < 0) p += length;
  if (p < 0 || p > limit) return c.Error("position ", v[0], " is out of range for a sequence of ", length);
  return p;
}

absl::StatusOr<std::vector<Value>> ConvertSequenceConstruct(NodeContext& c) {
  std::vector<Value> elements;
  for (int i = 0; i < c.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Expr e, c.Input(i));  // checks it is a tensor
    (void)e;
    elements.push_back(*c.InputValue(i));
  }
  if (elements.empty()) return c.Error("needs at least one input");
  return One(Value::OfSequence(std::move(elements)));
}

absl::StatusOr<std::vector<Value>> ConvertSequenceEmpty(NodeContext&) { return One(Value::OfSequence({})); }

absl::StatusOr<std::vector<Value>> ConvertSequenceLength(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(c, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  return One(Value::OfElements({PrimExpr(n)}, DataType::Int64(), 0));
}

absl::StatusOr<std::vector<Value>> ConvertSequenceAt(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(c, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (!c.has_input(1)) return c.Error("position is required");
  KILN_ASSIGN_OR_RETURN(int64_t p, Position(c, 1, n, n - 1, 0));
  return One(seq->sequence[p]);
}

absl::StatusOr<std::vector<Value>> ConvertSequenceInsert(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(c, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (n + 1 > kMaxSequenceLength) return c.Unsupported("sequences longer than ", kMaxSequenceLength);
  KILN_ASSIGN_OR_RETURN(Expr tensor, c.Input(1));
  (void)tensor;
  KILN_ASSIGN_OR_RETURN(int64_t p, Position(c, 2, n, n, n));
  std::vector<Value> elements = seq->sequence;
  elements.insert(elements.begin() + p, *c.InputValue(1));
  return One(Value::OfSequence(std::move(elements)));
}

absl::StatusOr<std::vector<Value>> ConvertSequenceErase(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(c, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (n == 0) return c.Error("cannot erase from an empty sequence");
  KILN_ASSIGN_OR_RETURN(int64_t p, Position(c, 1, n, n - 1, n - 1));
  std::vector<Value> elements = seq->sequence;
  elements.erase(elements.begin() + p);
  return One(Value::OfSequence(std::move(elements)));
}

// SplitToSequence: without `split`, pieces of 1 along the axis (removed unless keepdims);
// a scalar `split`, pieces of that size (the last one smaller); a 1-D `split`, those sizes.
absl::StatusOr<std::vector<Value>> ConvertSplitToSequence(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  const int64_t rank = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", 0), rank));
  const int64_t dim = StaticDim(shape[axis]);
  if (dim < 0) return c.Unsupported("needs a static size along the split axis");
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!c.has_input(1)) {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = c.AttrInt("keepdims", 1) == 0;
  } else {
    KILN_ASSIGN_OR_RETURN(relax::ConstantData split_data, c.InputData(1));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> split, c.InputInts(1));
    if (split_data.shape.empty()) {
      if (split.size() != 1 || split[0] <= 0) return c.Error("a scalar split must be positive");
      for (int64_t at = 0; at < dim; at += split[0]) sizes.push_back(std::min(split[0], dim - at));
    } else {
      int64_t total = 0;
      for (int64_t s : split) {
        if (s < 0) return c.Error("split size ", s, " is negative");
        total += s;
      }
      if (total != dim) return c.Error("split sizes add up to ", total, ", the axis has ", dim);
      sizes = split;
    }
  }
  if (static_cast<int64_t>(sizes.size()) > kMaxSequenceLength) {
    return c.Unsupported("sequences longer than ", kMaxSequenceLength);
  }
  std::vector<Value> elements;
  if (sizes.size() == 1 && !squeeze) {
    elements.push_back(*c.InputValue(0));
    return One(Value::OfSequence(std::move(elements)));
  }
  std::vector<int64_t> points;
  int64_t at = 0;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) points.push_back(at += sizes[i]);
  Expr tuple;
  if (sizes.size() > 1) {
    KILN_ASSIGN_OR_RETURN(tuple, c.Call("split", {x}, {{"indices_or_sections", points}, {"axis", axis}}));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Expr piece = x;
    if (sizes.size() > 1) {
      KILN_ASSIGN_OR_RETURN(piece, c.builder().Emit(relax::TupleGetItem(tuple, static_cast<int>(i)), ""));
    }
    if (squeeze) {
      std::vector<PrimExpr> squeezed = shape;
      squeezed.erase(squeezed.begin() + axis);
      KILN_ASSIGN_OR_RETURN(piece, Reshape(c, piece, squeezed));
    }
    Value v = Value::Of(piece);
    v.narrow_type = c.InputValue(0)->narrow_type;
    elements.push_back(std::move(v));
  }
  return One(Value::OfSequence(std::move(elements)));
}

// ConcatFromSequence: the elements concatenated along `axis`, or stacked along a new one
// (new_axis = 1, where axis may be the rank: the last).
absl::StatusOr<std::vector<Value>> ConvertConcatFromSequence(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(c, 0));
  if (seq->sequence.empty()) return c.Error("cannot concatenate an empty sequence");
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, c.RequiredInt("axis"));
  const bool new_axis = c.AttrInt("new_axis", 0) != 0;
  std::vector<Value> elements = seq->sequence;
  std::vector<Expr> parts;
  int64_t axis = 0;
  for (size_t i = 0; i < elements.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Expr e, c.Materialize(elements[i]));
    const auto* t = e.struct_info().as<relax::TensorStructInfoNode>();
    if (t == nullptr || !t->shape) return c.Unsupported("needs elements of known shape");
    std::vector<PrimExpr> shape = *t->shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(c, axis_attr, new_axis ? rank + 1 : rank));
    if (new_axis) {
      shape.insert(shape.begin() + axis, PrimExpr(int64_t{1}));
      KILN_ASSIGN_OR_RETURN(e, Reshape(c, e, shape));
    }
    parts.push_back(e);
  }
  Expr out = parts[0];
  if (parts.size() > 1) {
    KILN_ASSIGN_OR_RETURN(out, c.Call("concat", {relax::Tuple(parts)}, {{"axis", axis}}));
  }
  Value v = Value::Of(out);
  v.narrow_type = elements[0].narrow_type;
  return One(std::move(v));
}

// SequenceMap: the body converted once per element; sequence inputs give it their i-th
// element, tensor inputs the whole tensor; each body output makes one output sequence.
absl::StatusOr<std::vector<Value>> ConvertSequenceMap(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const ::onnx::GraphProto* body, c.AttrGraph("body"));
  KILN_ASSIGN_OR_RETURN(const Value* first, SequenceInput(c, 0));
  const size_t n = first->sequence.size();
  if (body->input_size() != c.num_inputs()) {
    return c.Error("the body has ", body->input_size(), " inputs for the node's ", c.num_inputs());
  }
  for (int j = 0; j < c.num_inputs(); ++j) {
    const Value* v = c.InputValue(j);
    if (v == nullptr) return c.Error("input ", j, " is missing");
    if (v->is_none) return c.Error("input '", c.input_name(j), "' is an empty optional");
    if (v->is_sequence && v->sequence.size() != n) {
      return c.Error("input '", c.input_name(j), "' has ", v->sequence.size(), " elements, the first sequence ", n);
    }
  }
  std::vector<std::vector<Value>> outputs(static_cast<size_t>(body->output_size()));
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::pair<std::string, Value>> bindings;
    for (int j = 0; j < c.num_inputs(); ++j) {
      const Value* v = c.InputValue(j);
      bindings.emplace_back(body->input(j).name(), v->is_sequence ? v->sequence[i] : *v);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Value> out, c.RunSubgraph(*body, std::move(bindings)));
    for (size_t k = 0; k < out.size(); ++k) {
      if (!out[k].is_tensor()) return c.Unsupported("body output ", k, " is not a tensor");
      outputs[k].push_back(std::move(out[k]));
    }
  }
  std::vector<Value> results;
  for (std::vector<Value>& elements : outputs) results.push_back(Value::OfSequence(std::move(elements)));
  return results;
}

// Optional: with an input, that value; without, an empty optional (of the `type` attribute).
absl::StatusOr<std::vector<Value>> ConvertOptional(NodeContext& c) {
  if (!c.has_input(0)) return One(Value::None());
  return One(*c.InputValue(0));
}

absl::StatusOr<std::vector<Value>> ConvertOptionalHasElement(NodeContext& c) {
  const bool has = c.has_input(0) && !c.InputValue(0)->is_none;
  return One(Value::OfData(IntData({has ? 1 : 0}, DataType::Bool(), {})));
}

absl::StatusOr<std::vector<Value>> ConvertOptionalGetElement(NodeContext& c) {
  if (!c.has_input(0)) return c.Error("input 0 is required but missing");
  if (c.InputValue(0)->is_none) return c.Error("input '", c.input_name(0), "' is an empty optional");
  return One(*c.InputValue(0));
}

}  // namespace

void RegisterSequenceConverters(ConverterRegistry& r) {
  r.Register("SequenceConstruct", ConvertSequenceConstruct, 11);
  r.Register("SequenceEmpty", ConvertSequenceEmpty, 11);
  r.Register("SequenceLength", ConvertSequenceLength, 11);
  r.Register("SequenceAt", ConvertSequenceAt, 11);
  r.Register("SequenceInsert", ConvertSequenceInsert, 11);
  r.Register("SequenceErase", ConvertSequenceErase, 11);
  r.Register("SplitToSequence", ConvertSplitToSequence, 11);
  r.Register("ConcatFromSequence", ConvertConcatFromSequence, 11);
  r.Register("SequenceMap", ConvertSequenceMap, 17);
  r.Register("Optional", ConvertOptional, 15);
  r.Register("OptionalHasElement", ConvertOptionalHasElement, 15);
  r.Register("OptionalGetElement", ConvertOptionalGetElement, 15);
}

}  // namespace kiln::frontends::onnx
