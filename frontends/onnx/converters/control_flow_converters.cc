// ONNX's control flow, lowered at import time into straight-line Relax (Kiln's functions
// have no branches or loops of their own):
//
// If: a condition known at import time (a constant, or a shape value folded by
// shape_value_folding.h: AffineGrid's body picks its 2-D or 3-D branch on Size(size) == 4)
// converts only the branch taken, and its outputs keep what the importer knows of them
// (shape values, sequences included). Branches that give sequences or optionals need it
// known (a graph input condition is bound). A condition known only at run time converts both branches and
// selects each output with `where`, which needs the two outputs of the same shape and type.
//
// Scan: the body is unrolled, converted once per step of the (static) sequence, with the
// state carried from one step to the next; scan inputs are sliced along their axis
// (reversed for direction 1) and scan outputs stacked along theirs. Scan-8's batch axis is
// one more loop around that. Loop: unrolled the same way when its trip count is known at
// import time and each step's condition is too.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "relax/struct_info.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Unrolling stops here: the converted nodes of all steps together.
constexpr int64_t kMaxUnrolledNodes = 1 << 16;

absl::StatusOr<const relax::TensorStructInfoNode*> TensorInfo(NodeContext& c, const Expr& e, const std::string& what) {
  const auto* t = e.struct_info().as<relax::TensorStructInfoNode>();
  if (t == nullptr || !t->shape || !t->dtype) return c.Unsupported(what, " needs a known shape and element type");
  return t;
}

absl::StatusOr<std::vector<PrimExpr>> ShapeOf(NodeContext& c, const Expr& e, const std::string& what) {
  KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, TensorInfo(c, e, what));
  return *t->shape;
}

bool SameShape(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  tir::Analyzer analyzer;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!analyzer.CanProveEqual(a[i], b[i])) return false;
  }
  return true;
}

// The condition's value when known at import time.
std::optional<bool> KnownCondition(NodeContext& c, int input) {
  if (!c.InputElementsKnown(input)) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> v = c.InputInts(input);
  if (!v.ok() || v->size() != 1) return std::nullopt;
  return (*v)[0] != 0;
}

absl::StatusOr<std::vector<Value>> ConvertIf(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const ::onnx::GraphProto* then_branch, c.AttrGraph("then_branch"));
  KILN_ASSIGN_OR_RETURN(const ::onnx::GraphProto* else_branch, c.AttrGraph("else_branch"));
  if (then_branch->output_size() != else_branch->output_size()) {
    return c.Error("then_branch has ", then_branch->output_size(), " outputs, else_branch ",
                   else_branch->output_size());
  }
  if (std::optional<bool> known = KnownCondition(c, 0)) return c.RunSubgraph(*known ? *then_branch : *else_branch, {});
  // Sequences and optionals are held at import time (sequence_converters.cc), so no `where`
  // selects between them: the condition must be known then (a graph input is bound, as
  // Loop's trip count is).
  bool non_tensor_outputs = false;
  for (const ::onnx::ValueInfoProto& out : then_branch->output()) {
    non_tensor_outputs |= out.type().has_sequence_type() || out.type().has_optional_type();
  }
  if (non_tensor_outputs) {
    absl::StatusOr<std::vector<int64_t>> cond = c.InputInts(0);
    if (!cond.ok() || cond->size() != 1) {
      return c.Unsupported("branches that give sequences or optionals need the condition known at import time");
    }
    return c.RunSubgraph((*cond)[0] != 0 ? *then_branch : *else_branch, {});
  }

  KILN_ASSIGN_OR_RETURN(Expr cond, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> cond_shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType cond_type, c.InputDType(0));
  int64_t cond_count = 1;
  for (const PrimExpr& d : cond_shape) {
    std::vector<int64_t> v;
    cond_count *= AllConstant({d}, &v) ? v[0] : -1;
  }
  if (!cond_type.is_bool() || cond_count != 1) return c.Error("cond must be a bool tensor of one element");
  KILN_ASSIGN_OR_RETURN(cond, Reshape(c, cond, {}));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> then_out, c.RunSubgraph(*then_branch, {}));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> else_out, c.RunSubgraph(*else_branch, {}));
  std::vector<Value> outputs;
  for (size_t k = 0; k < then_out.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(Expr a, c.Materialize(then_out[k]));
    KILN_ASSIGN_OR_RETURN(Expr b, c.Materialize(else_out[k]));
    const std::string what = absl::StrCat("output ", k, " of the branches");
    KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* ta, TensorInfo(c, a, what));
    KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* tb, TensorInfo(c, b, what));
    if (*ta->dtype != *tb->dtype || !SameShape(*ta->shape, *tb->shape) ||
        then_out[k].narrow_type != else_out[k].narrow_type) {
      return c.Unsupported("with a condition known only at run time, both branches' output ", k,
                           " must have the same shape and type (then ", relax::ToString(a.struct_info()), ", else ",
                           relax::ToString(b.struct_info()), ")");
    }
    KILN_ASSIGN_OR_RETURN(Expr selected, c.Call("where", {cond, a, b}));
    Value v = Value::Of(selected);
    v.narrow_type = then_out[k].narrow_type;
    outputs.push_back(std::move(v));
  }
  return outputs;
}

// `parts` (of one shape, non-empty) stacked along a new `axis`; the result keeps their
// narrow type.
absl::StatusOr<Value> Stack(NodeContext& c, std::vector<Value>& parts, int64_t axis, const std::string& what) {
  std::vector<Expr> expanded;
  for (Value& part : parts) {
    KILN_ASSIGN_OR_RETURN(Expr e, c.Materialize(part));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ShapeOf(c, e, what));
    if (axis > static_cast<int64_t>(shape.size())) {
      return c.Error(what, ": axis ", axis, " is out of range for rank ", shape.size());
    }
    shape.insert(shape.begin() + axis, PrimExpr(int64_t{1}));
    KILN_ASSIGN_OR_RETURN(e, Reshape(c, e, shape));
    expanded.push_back(e);
  }
  Expr stacked = expanded[0];
  if (expanded.size() > 1) {
    KILN_ASSIGN_OR_RETURN(stacked, c.Call("concat", {relax::Tuple(expanded)}, {{"axis", axis}}));
  }
  Value v = Value::Of(stacked);
  v.narrow_type = parts[0].narrow_type;
  return v;
}

int64_t StaticLength(const PrimExpr& d) {
  std::vector<int64_t> v;
  return AllConstant({d}, &v) ? v[0] : -1;
}

absl::Status CheckUnrollSize(NodeContext& c, int64_t steps, const ::onnx::GraphProto& body) {
  if (steps * std::max(1, body.node_size()) > kMaxUnrolledNodes) {
    return c.Unsupported(steps, " steps of a ", body.node_size(), "-node body are too many to unroll (at most ",
                         kMaxUnrolledNodes, " nodes)");
  }
  return absl::OkStatus();
}

// One Scan over the sequence: `states` carried, `inputs` (with their shapes) sliced along
// `in_axes`; returns the final states followed by the stacked scan outputs.
absl::StatusOr<std::vector<Value>> ScanSequence(NodeContext& c, const ::onnx::GraphProto& body,
                                                std::vector<Value> states, const std::vector<Expr>& inputs,
                                                const std::vector<std::vector<PrimExpr>>& shapes,
                                                const std::vector<int64_t>& in_axes,
                                                const std::vector<int64_t>& in_directions,
                                                const std::vector<int64_t>& out_axes,
                                                const std::vector<int64_t>& out_directions,
                                                const std::vector<int32_t>& input_narrow_types) {
  const size_t n = states.size(), m = inputs.size();
  int64_t steps = -1;
  for (size_t j = 0; j < m; ++j) {
    const int64_t len = StaticLength(shapes[j][in_axes[j]]);
    if (len < 0) return c.Unsupported("needs a static sequence length (scan input ", j, ")");
    if (steps >= 0 && len != steps) return c.Error("scan inputs have sequence lengths ", steps, " and ", len);
    steps = len;
  }
  if (steps <= 0) return c.Unsupported("needs at least one scan input of a non-empty sequence");
  KILN_RETURN_IF_ERROR(CheckUnrollSize(c, steps, body));
  const size_t k_outputs = static_cast<size_t>(body.output_size()) - n;
  std::vector<std::vector<Value>> scanned(k_outputs);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<std::pair<std::string, Value>> bindings;
    for (size_t i = 0; i < n; ++i) bindings.emplace_back(body.input(static_cast<int>(i)).name(), states[i]);
    for (size_t j = 0; j < m; ++j) {
      const int64_t index = in_directions[j] != 0 ? steps - 1 - t : t;
      KILN_ASSIGN_OR_RETURN(Expr slice, TakeIndex(c, inputs[j], shapes[j], in_axes[j], index));
      Value v = Value::Of(slice);
      v.narrow_type = input_narrow_types[j];
      bindings.emplace_back(body.input(static_cast<int>(n + j)).name(), std::move(v));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Value> out, c.RunSubgraph(body, std::move(bindings)));
    for (size_t i = 0; i < n; ++i) states[i] = out[i];
    for (size_t k = 0; k < k_outputs; ++k) scanned[k].push_back(out[n + k]);
  }
  std::vector<Value> results = std::move(states);
  for (size_t k = 0; k < k_outputs; ++k) {
    if (out_directions[k] != 0) std::reverse(scanned[k].begin(), scanned[k].end());
    KILN_ASSIGN_OR_RETURN(Value stacked, Stack(c, scanned[k], out_axes[k], absl::StrCat("scan output ", k)));
    results.push_back(std::move(stacked));
  }
  return results;
}

// An attribute of `count` ints, defaulting to zeros; negative axes normalized by `ranks`.
absl::StatusOr<std::vector<int64_t>> PerInputInts(NodeContext& c, const std::string& name, size_t count,
                                                  const std::vector<int64_t>* ranks) {
  std::vector<int64_t> v = c.AttrInts(name, std::vector<int64_t>(count, 0));
  if (v.size() != count) return c.Error(name, " has ", v.size(), " entries, expected ", count);
  if (ranks != nullptr) {
    for (size_t i = 0; i < count; ++i) {
      KILN_ASSIGN_OR_RETURN(v[i], NormalizeAxis(c, v[i], (*ranks)[i]));
    }
  }
  return v;
}

absl::StatusOr<std::vector<Value>> ConvertScan(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const ::onnx::GraphProto* body, c.AttrGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t m_attr, c.RequiredInt("num_scan_inputs"));
  // Scan-8: sequence_lens first, and a batch axis in front of every input and output.
  const bool batched = c.opset() < 9;
  const int first = batched ? 1 : 0;
  if (batched && c.has_input(0)) return c.Unsupported("sequence_lens is not supported");
  const int64_t m = m_attr, n = c.num_inputs() - first - m;
  if (m < 1 || n < 0) return c.Error("num_scan_inputs ", m, " does not fit the ", c.num_inputs(), " inputs");
  if (body->input_size() != n + m || body->output_size() < n) {
    return c.Error("the body has ", body->input_size(), " inputs and ", body->output_size(), " outputs for ", n,
                   " states and ", m, " scan inputs");
  }
  const size_t k = static_cast<size_t>(body->output_size() - n);

  std::vector<Value> states;
  for (int64_t i = 0; i < n; ++i) states.push_back(*c.InputValue(first + static_cast<int>(i)));
  std::vector<Expr> inputs;
  std::vector<std::vector<PrimExpr>> shapes;
  std::vector<int64_t> ranks;
  std::vector<int32_t> narrow;
  for (int64_t j = 0; j < m; ++j) {
    const int index = first + static_cast<int>(n + j);
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(index));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(index));
    inputs.push_back(x);
    shapes.push_back(shape);
    ranks.push_back(static_cast<int64_t>(shape.size()) - (batched ? 1 : 0));
    narrow.push_back(c.InputValue(index)->narrow_type);
  }
  if (!batched) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes, PerInputInts(c, "scan_input_axes", m, &ranks));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs, PerInputInts(c, "scan_input_directions", m, nullptr));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs, PerInputInts(c, "scan_output_directions", k, nullptr));
    // Output axes are normalized against the stacked rank, known only after the body ran:
    // negative ones are refused rather than guessed.
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, PerInputInts(c, "scan_output_axes", k, nullptr));
    for (int64_t a : out_axes) {
      if (a < 0) return c.Unsupported("negative scan_output_axes are not supported");
    }
    return ScanSequence(c, *body, std::move(states), inputs, shapes, in_axes, in_dirs, out_axes, out_dirs, narrow);
  }

  // Scan-8: each batch element scanned on its own (axis 1 of the inputs), then stacked.
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dirs, PerInputInts(c, "directions", m, nullptr));
  const int64_t batch = StaticLength(shapes[0][0]);
  if (batch < 1) return c.Unsupported("needs a static batch size");
  std::vector<std::vector<Value>> per_batch(static_cast<size_t>(n) + k);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> batch_states;
    for (int64_t i = 0; i < n; ++i) {
      KILN_ASSIGN_OR_RETURN(Expr s, c.Materialize(states[i]));
      KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ShapeOf(c, s, "a state"));
      KILN_ASSIGN_OR_RETURN(Expr sb, TakeIndex(c, s, shape, 0, b));
      Value v = Value::Of(sb);
      v.narrow_type = states[i].narrow_type;
      batch_states.push_back(std::move(v));
    }
    std::vector<Expr> batch_inputs;
    std::vector<std::vector<PrimExpr>> batch_shapes;
    for (int64_t j = 0; j < m; ++j) {
      KILN_ASSIGN_OR_RETURN(Expr xb, TakeIndex(c, inputs[j], shapes[j], 0, b));
      batch_inputs.push_back(xb);
      batch_shapes.emplace_back(shapes[j].begin() + 1, shapes[j].end());
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Value> out,
                          ScanSequence(c, *body, std::move(batch_states), batch_inputs, batch_shapes,
                                       std::vector<int64_t>(m, 0), dirs, std::vector<int64_t>(k, 0),
                                       std::vector<int64_t>(k, 0), narrow));
    for (size_t r = 0; r < out.size(); ++r) per_batch[r].push_back(out[r]);
  }
  std::vector<Value> results;
  for (size_t r = 0; r < per_batch.size(); ++r) {
    KILN_ASSIGN_OR_RETURN(Value stacked, Stack(c, per_batch[r], 0, absl::StrCat("output ", r)));
    results.push_back(std::move(stacked));
  }
  return results;
}

absl::StatusOr<std::vector<Value>> ConvertLoop(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(const ::onnx::GraphProto* body, c.AttrGraph("body"));
  const int64_t n = c.num_inputs() - 2;  // loop-carried values
  if (n < 0 || body->input_size() != n + 2 || body->output_size() < n + 1) {
    return c.Error("the body has ", body->input_size(), " inputs and ", body->output_size(), " outputs for ",
                   std::max<int64_t>(n, 0), " loop-carried values");
  }
  const size_t k = static_cast<size_t>(body->output_size() - 1 - n);
  // The trip count and the condition bound the unrolling: each must be absent or known.
  int64_t trips = -1;
  if (c.has_input(0)) {
    absl::StatusOr<std::vector<int64_t>> m = c.InputInts(0);
    if (!m.ok() || m->size() != 1) return c.Unsupported("needs a trip count known at import time");
    trips = (*m)[0];
  }
  bool running = true;
  if (c.has_input(1)) {  // a graph input is bound here, as a trip count is
    absl::StatusOr<std::vector<int64_t>> cond = c.InputInts(1);
    if (!cond.ok() || cond->size() != 1) return c.Unsupported("needs its initial condition known at import time");
    running = (*cond)[0] != 0;
  }
  if (trips < 0 && !c.has_input(1)) return c.Unsupported("an endless loop (no trip count, no condition)");
  if (trips >= 0) KILN_RETURN_IF_ERROR(CheckUnrollSize(c, trips, *body));

  std::vector<Value> carried;
  for (int64_t i = 0; i < n; ++i) carried.push_back(*c.InputValue(2 + static_cast<int>(i)));
  std::vector<std::vector<Value>> scanned(k);
  int64_t step = 0;
  for (; running && (trips < 0 || step < trips); ++step) {
    if (trips < 0) KILN_RETURN_IF_ERROR(CheckUnrollSize(c, step + 1, *body));
    std::vector<std::pair<std::string, Value>> bindings;
    bindings.emplace_back(body->input(0).name(), Value::OfElements({PrimExpr(step)}, DataType::Int64(), 0));
    bindings.emplace_back(body->input(1).name(), Value::OfElements({PrimExpr(int64_t{1})}, DataType::Bool(), 0));
    for (int64_t i = 0; i < n; ++i) bindings.emplace_back(body->input(static_cast<int>(2 + i)).name(), carried[i]);
    KILN_ASSIGN_OR_RETURN(std::vector<Value> out, c.RunSubgraph(*body, std::move(bindings)));
    // out[0] is the condition to go on: it must be known to unroll.
    Value& cond = out[0];
    if (cond.data && !cond.elements) cond.elements = ElementsOfData(*cond.data);
    std::vector<int64_t> cond_value;
    if (!cond.elements || !AllConstant(*cond.elements, &cond_value) || cond_value.size() != 1) {
      return c.Unsupported("needs each step's condition known at import time");
    }
    running = cond_value[0] != 0;
    for (int64_t i = 0; i < n; ++i) carried[i] = out[1 + i];
    for (size_t j = 0; j < k; ++j) scanned[j].push_back(out[1 + n + j]);
  }
  std::vector<Value> results = std::move(carried);
  for (size_t j = 0; j < k; ++j) {
    if (scanned[j].empty()) return c.Unsupported("a loop of no steps has scan outputs of unknown shape");
    KILN_ASSIGN_OR_RETURN(Value stacked, Stack(c, scanned[j], 0, absl::StrCat("scan output ", j)));
    results.push_back(std::move(stacked));
  }
  return results;
}

}  // namespace

void RegisterControlFlowConverters(ConverterRegistry& r) {
  r.Register("If", ConvertIf, 1);
  r.Register("Scan", ConvertScan, 8);
  r.Register("Loop", ConvertLoop, 1);
}

}  // namespace kiln::frontends::onnx
