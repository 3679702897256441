// Output shapes given by tensors computed at run time: run_time_shapes.h.
#include "frontends/onnx/converters/run_time_shapes.h"

#include <cctype>

#include "frontends/onnx/converters/common.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {

using relax::Expr;
using tir::DataType;

namespace {

Expr Int64(int64_t v) { return ScalarConstant(static_cast<double>(v), DataType::Int64()); }

// Input i as a 1-d int64 tensor of constant length (stored in *length).
absl::StatusOr<Expr> IntVectorInput(NodeContext& c, int i, const std::string& what, int64_t* length) {
  KILN_ASSIGN_OR_RETURN(Expr t, c.Input(i));
  const auto* info = t.struct_info().as<relax::TensorStructInfoNode>();
  if (info == nullptr || info->ndim != 1 || !info->shape || !(*info->shape)[0].as_int()) {
    return c.Error(what, " must be a 1-d tensor of a length known at import time");
  }
  if (!info->dtype || !info->dtype->is_integer()) return c.Error(what, " must be an integer tensor");
  *length = *(*info->shape)[0].as_int();
  if (*info->dtype != DataType::Int64()) {
    KILN_ASSIGN_OR_RETURN(t, c.Call("astype", {t}, {{"dtype", DataType::Int64()}}));
  }
  return t;
}

// Input i's entries known at import time (Value::known_entries), `length` of them, all
// unknown when none are tracked.
KnownEntries KnownInputEntries(NodeContext& c, int i, int64_t length) {
  const Value* v = c.InputValue(i);
  if (v == nullptr || static_cast<int64_t>(v->known_entries.size()) != length) {
    return KnownEntries(static_cast<size_t>(length));
  }
  return v->known_entries;
}

// A known entry's constant value, if it is one.
std::optional<int64_t> ConstantEntry(const std::optional<PrimExpr>& e) {
  if (!e) return std::nullopt;
  return e->as_int();
}

// Symbolic (or constant) dims as a 1-d int64 tensor.
absl::StatusOr<Expr> DimsAsTensor(NodeContext& c, const std::vector<PrimExpr>& dims) {
  Value v = Value::OfElements(dims, DataType::Int64(), 1);
  return c.Materialize(v);
}

// Entries [begin, end) of a 1-d tensor.
absl::StatusOr<Expr> Entries(NodeContext& c, const Expr& t, int64_t begin, int64_t end) {
  return c.Call("strided_slice", {t},
                {{"begin", std::vector<int64_t>{begin}},
                 {"end", std::vector<int64_t>{end}},
                 {"axes", std::vector<int64_t>{0}},
                 {"strides", std::vector<int64_t>{1}}});
}

// Input i's known entries (KnownInputEntries) that are dims as they stand: a negative
// entry becomes unknown, so that tensor_to_shape reports it when the function runs.
KnownEntries KnownNonNegativeEntries(NodeContext& c, int i, int64_t length) {
  KnownEntries known = KnownInputEntries(c, i, length);
  for (std::optional<PrimExpr>& e : known) {
    if (e && !(ConstantEntry(e) >= 0)) e = std::nullopt;
  }
  return known;
}

}  // namespace

bool ComputedAtRunTime(NodeContext& c, int i) {
  const Value* v = c.InputValue(i);
  return v != nullptr && !v->data && !v->elements && !v->is_sequence && !v->is_none && !c.InputIsGraphInput(i);
}

absl::StatusOr<std::vector<PrimExpr>> DimsFromTensor(NodeContext& c, const Expr& values, const std::string& what,
                                                     const KnownEntries& known) {
  const auto* info = values.struct_info().as<relax::TensorStructInfoNode>();
  if (info == nullptr || info->ndim != 1 || !info->shape || !(*info->shape)[0].as_int()) {
    return c.Error(what, " must be a 1-d tensor of a length known at import time");
  }
  const int64_t n = *(*info->shape)[0].as_int();
  KILN_ASSIGN_OR_RETURN(Expr shape, c.Call("tensor_to_shape", {values}));
  std::string base;
  for (char ch : absl::StrCat(c.has_output(0) ? c.node().output(0) : std::string("out"), "_", what)) {
    base += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  std::vector<PrimExpr> dims;
  for (int64_t k = 0; k < n; ++k) {
    // A constant, or a variable defined before, which the match_cast compares; a compound
    // expression (2 * b) gets a fresh variable instead.
    const std::optional<PrimExpr>& e = static_cast<int64_t>(known.size()) == n ? known[static_cast<size_t>(k)]
                                                                               : std::nullopt;
    const bool has = e && (e->as_int() || e->as<tir::VarNode>() != nullptr);
    dims.push_back(has ? *known[static_cast<size_t>(k)] : PrimExpr(tir::Var::Shape(absl::StrCat(base, k))));
  }
  absl::StatusOr<relax::Var> named = c.builder().EmitMatchCast(shape, relax::ShapeSInfo(dims), base);
  if (!named.ok()) return c.Annotate(named.status());
  return dims;
}

// ONNX Expand's rule: a target entry of 1 keeps the input's dim, any other is the output's
// dim, which the input's dim must equal unless it is 1 (broadcast_to checks that at run time).
absl::StatusOr<std::vector<Value>> ExpandAtRunTime(NodeContext& c) {
  int64_t r = 0;
  KILN_ASSIGN_OR_RETURN(Expr target, IntVectorInput(c, 1, "shape", &r));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  const int64_t in_rank = static_cast<int64_t>(in.size()), ndim = std::max(r, in_rank);
  if (r < ndim) {
    Expr ones = relax::Constant(IntData(std::vector<int64_t>(static_cast<size_t>(ndim - r), 1), DataType::Int64(),
                                        {ndim - r}));
    KILN_ASSIGN_OR_RETURN(target, c.Call("concat", {relax::Tuple({ones, target})}, {{"axis", int64_t{0}}}));
  }
  std::vector<PrimExpr> padded(static_cast<size_t>(ndim - in_rank), PrimExpr(int64_t{1}));
  padded.insert(padded.end(), in.begin(), in.end());
  KILN_ASSIGN_OR_RETURN(Expr in_dims, DimsAsTensor(c, padded));
  KILN_ASSIGN_OR_RETURN(Expr is_one, c.Call("equal", {target, Int64(1)}));
  KILN_ASSIGN_OR_RETURN(Expr out_dims, c.Call("where", {is_one, in_dims, target}));
  KnownEntries known(static_cast<size_t>(ndim - r), std::nullopt);
  for (const std::optional<PrimExpr>& e : KnownInputEntries(c, 1, r)) known.push_back(e);
  for (int64_t k = 0; k < ndim; ++k) {
    std::optional<PrimExpr>& e = known[static_cast<size_t>(k)];
    if (k < ndim - r) e = padded[static_cast<size_t>(k)];  // a dim the target does not reach
    else if (ConstantEntry(e) == 1) e = padded[static_cast<size_t>(k)];
    else if (!(ConstantEntry(e) >= 0)) e = std::nullopt;  // symbolic (1 when it runs?) or negative
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, DimsFromTensor(c, out_dims, "expand", known));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("broadcast_to", {x, relax::ShapeExpr(out)}));
  return Outputs(y);
}

// ONNX Reshape's rules at run time: an entry 0 copies the input's dim at that position
// (unless allowzero), one entry -1 is inferred from the element count. An entry 0 past the
// input's rank, a second -1 or any other negative entry becomes a negative dim, which
// tensor_to_shape refuses when it runs; reshape checks the element count at run time.
absl::StatusOr<std::vector<Value>> ReshapeAtRunTime(NodeContext& c) {
  int64_t r = 0;
  KILN_ASSIGN_OR_RETURN(Expr target, IntVectorInput(c, 1, "shape", &r));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  const int64_t kInvalid = -2;  // a dim tensor_to_shape refuses
  const bool allowzero = c.AttrInt("allowzero", 0) != 0;
  Expr dims = target;
  if (!allowzero) {
    std::vector<PrimExpr> copied;
    for (int64_t k = 0; k < r; ++k) {
      copied.push_back(k < static_cast<int64_t>(in.size()) ? in[static_cast<size_t>(k)] : PrimExpr(kInvalid));
    }
    KILN_ASSIGN_OR_RETURN(Expr in_dims, DimsAsTensor(c, copied));
    KILN_ASSIGN_OR_RETURN(Expr is_zero, c.Call("equal", {target, Int64(0)}));
    KILN_ASSIGN_OR_RETURN(dims, c.Call("where", {is_zero, in_dims, target}));
  }
  // The -1 entry: the input's element count over the product of the other entries (at
  // least 1, so that an empty product never divides by 0; reshape's count check then fails).
  KILN_ASSIGN_OR_RETURN(Expr is_infer, c.Call("equal", {dims, Int64(-1)}));
  KILN_ASSIGN_OR_RETURN(Expr others, c.Call("where", {is_infer, Int64(1), dims}));
  KILN_ASSIGN_OR_RETURN(Expr known_count, c.Call("prod", {others}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(known_count, c.Call("maximum", {known_count, Int64(1)}));
  KILN_ASSIGN_OR_RETURN(Expr in_count, DimsAsTensor(c, {Product(in, 0, in.size())}));
  KILN_ASSIGN_OR_RETURN(Expr inferred, c.Call("floor_divide", {in_count, known_count}));
  KILN_ASSIGN_OR_RETURN(Expr infer_flags, c.Call("astype", {is_infer}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr infer_count, c.Call("sum", {infer_flags}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}}));
  KILN_ASSIGN_OR_RETURN(Expr one_infer, c.Call("less_equal", {infer_count, Int64(1)}));
  KILN_ASSIGN_OR_RETURN(inferred, c.Call("where", {one_infer, inferred, Int64(kInvalid)}));
  KILN_ASSIGN_OR_RETURN(dims, c.Call("where", {is_infer, inferred, dims}));
  // Known positive entries stay (and 0 with allowzero); 0 copies a known input dim.
  KnownEntries known = KnownInputEntries(c, 1, r);
  for (int64_t k = 0; k < r; ++k) {
    std::optional<PrimExpr>& e = known[static_cast<size_t>(k)];
    const std::optional<int64_t> v = ConstantEntry(e);
    if (v && *v == 0 && !allowzero && k < static_cast<int64_t>(in.size())) e = in[static_cast<size_t>(k)];
    else if (!v || *v < 0 || (*v == 0 && !allowzero)) e = std::nullopt;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, DimsFromTensor(c, dims, "reshape", known));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, Reshape(c, x, out));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConstantOfShapeAtRunTime(NodeContext& c, const relax::ConstantData& fill,
                                                            int32_t narrow_type) {
  int64_t r = 0;
  KILN_ASSIGN_OR_RETURN(Expr shape, IntVectorInput(c, 0, "input", &r));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims,
                        DimsFromTensor(c, shape, "shape", KnownNonNegativeEntries(c, 0, r)));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("full", {relax::ShapeExpr(dims), relax::Constant(fill)}, {{"dtype", fill.dtype}}));
  Value value = Value::Of(out);
  value.narrow_type = narrow_type;
  return std::vector<Value>{std::move(value)};
}

// Tile with run-time repeats r: x of dims (d0, d1, ..) reshaped to (1, d0, 1, d1, ..),
// broadcast to (r0, d0, r1, d1, ..) and reshaped to (r0 * d0, r1 * d1, ..): the copies of
// x laid side by side along each axis, as ONNX's Tile.
absl::StatusOr<std::vector<Value>> TileAtRunTime(NodeContext& c) {
  int64_t r = 0;
  KILN_ASSIGN_OR_RETURN(Expr repeats, IntVectorInput(c, 1, "repeats", &r));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  if (r != static_cast<int64_t>(in.size())) {
    return c.Error("repeats has ", r, " entries for an input of rank ", in.size());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> reps,
                        DimsFromTensor(c, repeats, "repeats", KnownNonNegativeEntries(c, 1, r)));
  std::vector<PrimExpr> interleaved, spread, out;
  for (size_t k = 0; k < in.size(); ++k) {
    interleaved.insert(interleaved.end(), {PrimExpr(int64_t{1}), in[k]});
    spread.insert(spread.end(), {reps[k], in[k]});
    out.push_back(Simplify(reps[k] * in[k]));
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, interleaved));
  KILN_ASSIGN_OR_RETURN(x, c.Call("broadcast_to", {x, relax::ShapeExpr(spread)}));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, out));
  return Outputs(x);
}

// Pad with run-time pads, one axis at a time: output position i of an axis of input dim d
// reads input position i - begin, mapped into [0, d) by the mode (edge: clamped; reflect:
// mirrored without repeating the border; wrap: modulo d) and taken with `take`. Constant
// mode appends one slab of the value along the axis and reads it (position d) for the
// positions outside [0, d), which also pads an empty axis. Negative pads crop, as ONNX
// allows; an output dim below 0 is tensor_to_shape's run-time error.
absl::StatusOr<std::vector<Value>> PadAtRunTime(NodeContext& c, const std::string& mode, double value,
                                                const std::vector<int64_t>& axes) {
  int64_t r = 0;
  KILN_ASSIGN_OR_RETURN(Expr pads, IntVectorInput(c, 1, "pads", &r));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> padded_axes = axes;
  if (padded_axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) padded_axes.push_back(a);
  }
  const int64_t n = static_cast<int64_t>(padded_axes.size());
  if (r != 2 * n) return c.Error("pads has ", r, " entries for ", n, " padded axes");
  if (n == 0) {
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
    return Outputs(x);
  }
  // Output dims of the padded axes: d + begin + end.
  std::vector<PrimExpr> padded_in;
  for (int64_t a : padded_axes) padded_in.push_back(in[static_cast<size_t>(a)]);
  KILN_ASSIGN_OR_RETURN(Expr in_dims, DimsAsTensor(c, padded_in));
  KILN_ASSIGN_OR_RETURN(Expr begins, Entries(c, pads, 0, n));
  KILN_ASSIGN_OR_RETURN(Expr ends, Entries(c, pads, n, 2 * n));
  KILN_ASSIGN_OR_RETURN(Expr out_dims, c.Call("add", {in_dims, begins}));
  KILN_ASSIGN_OR_RETURN(out_dims, c.Call("add", {out_dims, ends}));
  const KnownEntries known_pads = KnownInputEntries(c, 1, r);
  KnownEntries known(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const std::optional<int64_t> b = ConstantEntry(known_pads[static_cast<size_t>(k)]);
    const std::optional<int64_t> e = ConstantEntry(known_pads[static_cast<size_t>(k + n)]);
    if (b && e) {
      const PrimExpr dim = Simplify(padded_in[static_cast<size_t>(k)] + PrimExpr(*b + *e));
      if (const std::optional<int64_t> v = dim.as_int(); !v || *v >= 0) known[static_cast<size_t>(k)] = dim;
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, DimsFromTensor(c, out_dims, "pad", known));

  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  std::vector<PrimExpr> current = in;  // x's dims as the axes are padded
  for (int64_t k = 0; k < n; ++k) {
    const int64_t axis = padded_axes[static_cast<size_t>(k)];
    const PrimExpr& d = in[static_cast<size_t>(axis)];
    KILN_ASSIGN_OR_RETURN(Expr begin, Entries(c, begins, k, k + 1));
    KILN_ASSIGN_OR_RETURN(Expr dim, DimsAsTensor(c, {d}));
    KILN_ASSIGN_OR_RETURN(Expr last, c.Call("subtract", {dim, Int64(1)}));
    KILN_ASSIGN_OR_RETURN(Expr positions, c.Call("arange", {relax::PrimValue(out[static_cast<size_t>(k)])},
                                                 {{"dtype", DataType::Int64()}}));
    KILN_ASSIGN_OR_RETURN(Expr source, c.Call("subtract", {positions, begin}));
    Expr index;
    if (mode == "constant") {
      std::vector<PrimExpr> slab_shape = current;
      slab_shape[static_cast<size_t>(axis)] = PrimExpr(int64_t{1});
      KILN_ASSIGN_OR_RETURN(Expr slab, c.Call("full", {relax::ShapeExpr(slab_shape), ScalarConstant(value, dtype)},
                                              {{"dtype", dtype}}));
      KILN_ASSIGN_OR_RETURN(x, c.Call("concat", {relax::Tuple({x, slab})}, {{"axis", axis}}));
      KILN_ASSIGN_OR_RETURN(Expr above, c.Call("greater_equal", {source, Int64(0)}));
      KILN_ASSIGN_OR_RETURN(Expr below, c.Call("less", {source, dim}));
      KILN_ASSIGN_OR_RETURN(Expr inside, c.Call("logical_and", {above, below}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("where", {inside, source, dim}));
    } else if (mode == "edge") {
      KILN_ASSIGN_OR_RETURN(index, c.Call("maximum", {source, Int64(0)}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("minimum", {index, last}));
    } else if (mode == "wrap") {
      KILN_ASSIGN_OR_RETURN(Expr period, c.Call("maximum", {dim, Int64(1)}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("floor_mod", {source, period}));
    } else {  // reflect: period 2 (d - 1), the second half mirrored
      KILN_ASSIGN_OR_RETURN(Expr period, c.Call("multiply", {last, Int64(2)}));
      KILN_ASSIGN_OR_RETURN(period, c.Call("maximum", {period, Int64(1)}));
      KILN_ASSIGN_OR_RETURN(Expr folded, c.Call("floor_mod", {source, period}));
      KILN_ASSIGN_OR_RETURN(Expr mirrored, c.Call("subtract", {period, folded}));
      KILN_ASSIGN_OR_RETURN(Expr in_first_half, c.Call("less", {folded, dim}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("where", {in_first_half, folded, mirrored}));
      KILN_ASSIGN_OR_RETURN(index, c.Call("minimum", {index, last}));  // d == 1: period 1 -> 0
    }
    KILN_ASSIGN_OR_RETURN(x, c.Call("take", {x, index}, {{"axis", axis}}));
    current[static_cast<size_t>(axis)] = out[static_cast<size_t>(k)];
  }
  return Outputs(x);
}

}  // namespace kiln::frontends::onnx
