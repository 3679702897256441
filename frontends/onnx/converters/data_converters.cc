// ONNX data-movement and indexing operators: GatherElements, GatherND, Scatter (opset 9-10),
// ScatterElements, ScatterND, OneHot, Pad, CenterCropPad, Tile, Trilu, CumSum, TopK, Einsum map to Kiln's
// operators of the same meaning (relax/op/indexing.cc, rearrange.cc, sort.cc, einsum.cc);
// DepthToSpace and SpaceToDepth decompose into reshape / permute_dims / reshape, Hardmax
// into argmax + one_hot, EyeLike into arange + one_hot, ReverseSequence into index
// arithmetic + gather_elements.
//
// Opset differences handled here: Pad's pads and constant value are attributes before 11
// and inputs from then on (axes input from 18, "wrap" from 19); TopK's k is an attribute
// before 10 and an input from then on (largest / sorted from 11); ScatterElements' and
// ScatterND's reduction appears in 16 (add / mul) and grows max / min in 18; GatherND's
// batch_dims appears in 12; DepthToSpace's mode in 11. Inputs that Kiln's operators take as
// attributes (Tile's repeats, TopK's k, OneHot's depth and values, Trilu's k, CumSum's
// axis, Pad's pads) must be known at import time (constants, initializers or bound
// inputs: docs/onnx.md).
#include <cctype>
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/converters/run_time_shapes.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// The one element of a scalar (or one-element) input known at import time.
absl::StatusOr<int64_t> ScalarInt(NodeContext& c, int i, const char* what) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.InputInts(i));
  if (v.size() != 1) return c.Error(what, " must hold one element, got ", v.size());
  return v[0];
}

absl::StatusOr<int64_t> Rank(NodeContext& c, int i) {
  KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, c.InputInfo(i));
  return t->ndim;
}

absl::StatusOr<std::vector<Value>> ConvertGatherElements(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("gather_elements", {data, indices}, {{"axis", c.AttrInt("axis", 0)}}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertGatherNd(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("gather_nd", {data, indices}, {{"batch_dims", c.AttrInt("batch_dims", 0)}}));
  return Outputs(out);
}

absl::StatusOr<std::string> Reduction(NodeContext& c) {
  const std::string reduction = c.AttrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    return c.Error("unknown reduction \"", reduction, "\"");
  }
  return reduction;
}

absl::StatusOr<std::vector<Value>> ConvertScatterElements(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr updates, c.Input(2));
  KILN_ASSIGN_OR_RETURN(std::string reduction, Reduction(c));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("scatter_elements", {data, indices, updates},
                                         {{"axis", c.AttrInt("axis", 0)}, {"reduction", reduction}}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertScatterNd(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr updates, c.Input(2));
  KILN_ASSIGN_OR_RETURN(std::string reduction, Reduction(c));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("scatter_nd", {data, indices, updates}, {{"reduction", reduction}}));
  return Outputs(out);
}

// OneHot(indices, depth, values = [off, on]), attribute axis (-1). Indices of a float type
// are truncated to integers (the ONNX reference casts them); the result has values' dtype.
absl::StatusOr<std::vector<Value>> ConvertOneHot(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(0));
  KILN_ASSIGN_OR_RETURN(DataType index_dtype, c.InputDType(0));
  if (!index_dtype.is_integer()) {
    KILN_ASSIGN_OR_RETURN(indices, c.Call("astype", {indices}, {{"dtype", DataType::Int64()}}));
  }
  KILN_ASSIGN_OR_RETURN(relax::ConstantData depth_data, c.InputData(1));
  if (depth_data.shape.size() > 1 || (depth_data.shape.size() == 1 && depth_data.shape[0] != 1)) {
    return c.Error("depth must be a scalar or a one-element tensor");
  }
  const int64_t depth = static_cast<int64_t>(ElementAsDouble(depth_data, 0));
  if (depth <= 0) return c.Error("depth must be positive, got ", depth);
  KILN_ASSIGN_OR_RETURN(relax::ConstantData values, c.InputData(2));
  int64_t count = 1;
  for (int64_t d : values.shape) count *= d;
  if (count != 2) return c.Error("values must hold two elements [off, on], got ", count);
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(2));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("one_hot", {indices},
                                         {{"depth", depth},
                                          {"off_value", ElementAsDouble(values, 0)},
                                          {"on_value", ElementAsDouble(values, 1)},
                                          {"axis", c.AttrInt("axis", -1)},
                                          {"dtype", dtype}}));
  return Outputs(out);
}

// CenterCropPad (18): each listed axis cropped or zero-padded to `shape`, the kept window /
// the input centered (the odd element at the end, as ONNX's reference). Needs the input's
// dims and `shape` at import time.
absl::StatusOr<std::vector<Value>> ConvertCenterCropPad(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  std::vector<int64_t> dims;
  if (!AllConstant(in, &dims)) return c.Unsupported("needs an input of static shape");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.InputInts(1));
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> axes = c.AttrInts("axes");
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(c, axes, rank));
  if (shape.size() != axes.size()) return c.Error("shape has ", shape.size(), " values for ", axes.size(), " axes");
  std::vector<int64_t> crop_axes, crop_begin, crop_end, pads(static_cast<size_t>(2 * rank), 0);
  bool pad = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], dim = dims[a], want = shape[i];
    if (want < 0) return c.Error("shape value ", want, " is negative");
    if (want < dim) {
      crop_axes.push_back(a);
      crop_begin.push_back((dim - want) / 2);
      crop_end.push_back((dim - want) / 2 + want);
    } else if (want > dim) {
      pads[a] = (want - dim) / 2;
      pads[a + rank] = want - dim - pads[a];
      pad = true;
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  if (!crop_axes.empty()) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("strided_slice", {x},
                                    {{"begin", crop_begin},
                                     {"end", crop_end},
                                     {"axes", crop_axes},
                                     {"strides", std::vector<int64_t>(crop_axes.size(), 1)}}));
  }
  if (pad) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("pad", {x}, {{"pads", pads}, {"mode", std::string("constant")}, {"pad_value", 0.0}}));
  }
  return Outputs(x);
}

absl::StatusOr<std::vector<Value>> ConvertPad(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t rank, Rank(c, 0));
  const std::string mode = c.AttrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return c.Error("unknown mode \"", mode, "\"");
  }
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<int64_t> axes;
  if (c.opset() < 11) {
    pads = c.AttrInts(c.opset() < 2 ? "paddings" : "pads");
    value = c.AttrFloat("value", 0.0);
  } else {
    if (c.has_input(2)) {
      KILN_ASSIGN_OR_RETURN(relax::ConstantData v, c.InputData(2));
      int64_t count = 1;
      for (int64_t d : v.shape) count *= d;
      if (count > 1) return c.Error("constant_value must be a scalar");
      if (count == 1) value = ElementAsDouble(v, 0);
    }
    if (c.has_input(3)) {
      KILN_ASSIGN_OR_RETURN(axes, c.InputInts(3));
    }
    if (ComputedAtRunTime(c, 1)) {
      KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(c, axes, rank));
      return PadAtRunTime(c, mode, value, axes);  // run_time_shapes.h
    }
    KILN_ASSIGN_OR_RETURN(pads, c.InputInts(1));
  }
  if (!axes.empty()) {
    // Pads given for some axes only: spread them over every axis.
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(c, axes, rank));
    if (pads.size() != 2 * axes.size()) return c.Error("pads has ", pads.size(), " entries for ", axes.size(), " axes");
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      full[static_cast<size_t>(axes[i])] = pads[i];
      full[static_cast<size_t>(axes[i] + rank)] = pads[i + axes.size()];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    return c.Error("pads has ", pads.size(), " entries for an input of rank ", rank);
  }
  relax::Attrs attrs = {{"pads", pads}, {"mode", mode}};
  if (mode == "constant") attrs["pad_value"] = value;
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("pad", {data}, attrs));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertTile(NodeContext& c) {
  if (ComputedAtRunTime(c, 1)) return TileAtRunTime(c);  // run_time_shapes.h
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, c.InputInts(1));
  KILN_ASSIGN_OR_RETURN(int64_t rank, Rank(c, 0));
  if (static_cast<int64_t>(repeats.size()) != rank) {
    return c.Error("repeats has ", repeats.size(), " entries for an input of rank ", rank);
  }
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("tile", {data}, {{"repeats", repeats}}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertTrilu(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  int64_t k = 0;
  if (c.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(k, ScalarInt(c, 1, "k"));
  }
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("trilu", {data}, {{"upper", c.AttrInt("upper", 1) != 0}, {"k", k}}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertCumSum(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ScalarInt(c, 1, "axis"));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("cumsum", {data},
                                         {{"axis", axis},
                                          {"exclusive", c.AttrInt("exclusive", 0) != 0},
                                          {"reverse", c.AttrInt("reverse", 0) != 0}}));
  return Outputs(out);
}

// CumProd(x, axis), attributes exclusive and reverse (opset 26). Kiln has no scan for
// products, so it is a masked product: with j the axis of x's elements and i the result's,
// T[.., j, i, ..] = x[.., j, ..] where j is in i's prefix (j <= i; j < i exclusive, j >= i /
// j > i reversed), else 1; the product of T over j. O(n^2) work along the axis, as Kiln's
// cumsum legalization.
absl::StatusOr<std::vector<Value>> ConvertCumProd(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (ndim == 0) return c.Error("x must have at least one dimension");
  KILN_ASSIGN_OR_RETURN(int64_t axis, ScalarInt(c, 1, "axis"));
  KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(c, axis, ndim));
  const bool exclusive = c.AttrInt("exclusive", 0) != 0, reverse = c.AttrInt("reverse", 0) != 0;
  const size_t a = static_cast<size_t>(axis);
  const PrimExpr n = shape[a];
  // j along `axis`, i along axis + 1 of the (ndim + 1)-d product tensor.
  std::vector<PrimExpr> j_shape(static_cast<size_t>(ndim + 1), PrimExpr(int64_t{1})), i_shape = j_shape;
  j_shape[a] = n;
  i_shape[a + 1] = n;
  KILN_ASSIGN_OR_RETURN(Expr steps, c.Call("arange", {relax::PrimValue(n)}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr j, Reshape(c, steps, j_shape));
  KILN_ASSIGN_OR_RETURN(Expr i, Reshape(c, steps, i_shape));
  const char* in_prefix = reverse ? (exclusive ? "greater" : "greater_equal") : (exclusive ? "less" : "less_equal");
  KILN_ASSIGN_OR_RETURN(Expr mask, c.Call(in_prefix, {j, i}));
  std::vector<PrimExpr> x_shape = shape;
  x_shape.insert(x_shape.begin() + axis + 1, PrimExpr(int64_t{1}));
  KILN_ASSIGN_OR_RETURN(Expr x, Reshape(c, data, x_shape));
  KILN_ASSIGN_OR_RETURN(Expr terms, c.Call("where", {mask, x, ScalarConstant(1, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("prod", {terms}, {{"axis", std::vector<int64_t>{axis}}, {"keepdims", false}}));
  return Outputs(out);
}

absl::StatusOr<std::vector<Value>> ConvertTopK(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr data, c.Input(0));
  int64_t k = 0;
  if (c.opset() < 10) {
    KILN_ASSIGN_OR_RETURN(k, c.RequiredInt("k"));
  } else {
    KILN_ASSIGN_OR_RETURN(k, ScalarInt(c, 1, "K"));
  }
  KILN_ASSIGN_OR_RETURN(Expr both, c.Call("topk", {data},
                                          {{"k", k},
                                           {"axis", c.AttrInt("axis", -1)},
                                           {"largest", c.AttrInt("largest", 1) != 0},
                                           {"sorted", c.AttrInt("sorted", 1) != 0}}));
  KILN_ASSIGN_OR_RETURN(Expr values, c.Emit(relax::TupleGetItem(both, 0)));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Emit(relax::TupleGetItem(both, 1)));
  return std::vector<Value>{Value::Of(values), Value::Of(indices)};
}

absl::StatusOr<std::vector<Value>> ConvertEinsum(NodeContext& c) {
  std::vector<Expr> operands;
  for (int i = 0; i < c.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, c.Input(i));
    operands.push_back(x);
  }
  if (!c.HasAttr("equation")) return c.Error("attribute 'equation' is required");
  KILN_ASSIGN_OR_RETURN(Expr out,
                        c.Call("einsum", {relax::Tuple(operands)}, {{"subscripts", c.AttrString("equation", "")}}));
  return Outputs(out);
}

// DepthToSpace (N, C, H, W) -> (N, C / b^2, H b, W b): DCR mode reads the channel as
// (b, b, C / b^2), CRD mode as (C / b^2, b, b).
absl::StatusOr<std::vector<Value>> ConvertDepthToSpace(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  if (s.size() != 4) return c.Error("input must have rank 4, got ", s.size());
  KILN_ASSIGN_OR_RETURN(int64_t b, c.RequiredInt("blocksize"));
  if (b <= 0) return c.Error("blocksize must be positive, got ", b);
  const bool crd = c.AttrString("mode", "DCR") == "CRD";
  const PrimExpr channels = Simplify(tir::FloorDiv(s[1], PrimExpr(b * b)));
  std::vector<PrimExpr> split = crd ? std::vector<PrimExpr>{s[0], channels, b, b, s[2], s[3]}
                                    : std::vector<PrimExpr>{s[0], b, b, channels, s[2], s[3]};
  KILN_ASSIGN_OR_RETURN(Expr y, Reshape(c, x, split));
  const std::vector<int64_t> axes = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  KILN_ASSIGN_OR_RETURN(y, c.Call("permute_dims", {y}, {{"axes", axes}}));
  KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, {s[0], channels, Simplify(s[2] * b), Simplify(s[3] * b)}));
  return Outputs(y);
}

// SpaceToDepth (N, C, H, W) -> (N, C b^2, H / b, W / b), the inverse of DCR DepthToSpace.
absl::StatusOr<std::vector<Value>> ConvertSpaceToDepth(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  if (s.size() != 4) return c.Error("input must have rank 4, got ", s.size());
  KILN_ASSIGN_OR_RETURN(int64_t b, c.RequiredInt("blocksize"));
  if (b <= 0) return c.Error("blocksize must be positive, got ", b);
  const PrimExpr h = Simplify(tir::FloorDiv(s[2], PrimExpr(b)));
  const PrimExpr w = Simplify(tir::FloorDiv(s[3], PrimExpr(b)));
  // DCR (the only mode before opset 25) puts the block offsets before the channel; CRD
  // after it, mirroring DepthToSpace's modes.
  const std::string mode = c.AttrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return c.Error("unknown mode '", mode, "' (DCR or CRD)");
  const std::vector<int64_t> axes = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                                                  : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
  KILN_ASSIGN_OR_RETURN(Expr y, Reshape(c, x, {s[0], s[1], h, b, w, b}));
  KILN_ASSIGN_OR_RETURN(y, c.Call("permute_dims", {y}, {{"axes", axes}}));
  KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, {s[0], Simplify(s[1] * (b * b)), h, w}));
  return Outputs(y);
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere = one_hot(argmax). Before
// opset 13 the input is read as 2-D ([prod(dims[:axis]), prod(dims[axis:])], axis 1 by
// default); from 13 the axis (default -1) is one dim. The axis' extent must be a constant.
absl::StatusOr<std::vector<Value>> ConvertHardmax(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  const bool flat = c.opset() < 13;
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", flat ? 1 : -1), static_cast<int64_t>(s.size())));
  Expr rows = x;
  int64_t along = axis;
  PrimExpr extent = s[static_cast<size_t>(axis)];
  if (flat) {
    extent = Simplify(Product(s, static_cast<size_t>(axis), s.size()));
    KILN_ASSIGN_OR_RETURN(rows, Reshape(c, x, {Simplify(Product(s, 0, static_cast<size_t>(axis))), extent}));
    along = 1;
  }
  if (!extent.as_int()) return c.Unsupported("the extent of the hardmax axis (", tir::ToString(extent), ") must be a constant");
  KILN_ASSIGN_OR_RETURN(Expr index, c.Call("argmax", {rows}, {{"axis", along}}));
  KILN_ASSIGN_OR_RETURN(Expr hot, c.Call("one_hot", {index}, {{"depth", *extent.as_int()}, {"axis", along}, {"dtype", dtype}}));
  if (flat) {
    KILN_ASSIGN_OR_RETURN(hot, Reshape(c, hot, s));
  }
  return Outputs(hot);
}

// EyeLike(x), attributes dtype (default x's) and k: ones on diagonal k of a 2-D tensor of
// x's shape = one_hot(arange(rows) + k, depth=cols), whose out-of-range rows are all 0.
absl::StatusOr<std::vector<Value>> ConvertEyeLike(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  if (s.size() != 2) return c.Error("input must be 2-D, got rank ", s.size());
  if (!s[1].as_int()) return c.Unsupported("the column count (", tir::ToString(s[1]), ") must be a constant");
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (c.HasAttr("dtype")) {
    KILN_ASSIGN_OR_RETURN(dtype, DataTypeFromOnnx(static_cast<int32_t>(c.AttrInt("dtype", 1))));
  }
  const int64_t k = c.AttrInt("k", 0);
  KILN_ASSIGN_OR_RETURN(Expr rows, c.Call("arange", {relax::PrimValue(PrimExpr(k)), relax::PrimValue(Simplify(s[0] + k))},
                                          {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr eye, c.Call("one_hot", {rows}, {{"depth", *s[1].as_int()}, {"dtype", dtype}}));
  return Outputs(eye);
}

// ReverseSequence(x, sequence_lens), attributes batch_axis (1) and time_axis (0): batch b
// reverses its first sequence_lens[b] time steps. A gather_elements along the time axis
// with indices where(t < len[b], len[b] - 1 - t, t), broadcast to x's shape.
absl::StatusOr<std::vector<Value>> ConvertReverseSequence(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(Expr lens, c.Input(1));
  KILN_ASSIGN_OR_RETURN(DataType lens_dtype, c.InputDType(1));
  const int64_t batch = c.AttrInt("batch_axis", 1);
  const int64_t time = c.AttrInt("time_axis", 0);
  if (s.size() < 2 || batch == time || batch < 0 || batch > 1 || time < 0 || time > 1) {
    return c.Error("batch_axis and time_axis must be 0 and 1 (in some order) of an input of rank >= 2");
  }
  if (lens_dtype != DataType::Int64()) {
    KILN_ASSIGN_OR_RETURN(lens, c.Call("astype", {lens}, {{"dtype", DataType::Int64()}}));
  }
  std::vector<PrimExpr> t_shape(s.size(), PrimExpr(int64_t{1}));
  t_shape[static_cast<size_t>(time)] = s[static_cast<size_t>(time)];
  std::vector<PrimExpr> l_shape(s.size(), PrimExpr(int64_t{1}));
  l_shape[static_cast<size_t>(batch)] = s[static_cast<size_t>(batch)];
  KILN_ASSIGN_OR_RETURN(Expr t, c.Call("arange", {relax::PrimValue(s[static_cast<size_t>(time)])},
                                       {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(t, Reshape(c, t, t_shape));
  KILN_ASSIGN_OR_RETURN(lens, Reshape(c, lens, l_shape));
  KILN_ASSIGN_OR_RETURN(Expr last, c.Call("subtract", {lens, ScalarConstant(1, DataType::Int64())}));
  KILN_ASSIGN_OR_RETURN(Expr reversed, c.Call("subtract", {last, t}));
  KILN_ASSIGN_OR_RETURN(Expr inside, c.Call("less", {t, lens}));
  KILN_ASSIGN_OR_RETURN(Expr index, c.Call("where", {inside, reversed, t}));
  KILN_ASSIGN_OR_RETURN(index, c.Call("broadcast_to", {index, relax::ShapeExpr(s)}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("gather_elements", {x, index}, {{"axis", time}}));
  return Outputs(out);
}

}  // namespace

absl::StatusOr<std::vector<Value>> ConvertSliceAtRunTime(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr starts, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr ends, c.Input(2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> starts_shape, c.InputShape(1));
  if (starts_shape.size() != 1 || !starts_shape[0].as_int()) {
    return c.Unsupported("starts known only at run time must have a constant length");
  }
  const int64_t count = *starts_shape[0].as_int();
  std::vector<int64_t> axes;
  if (c.has_input(3)) {
    absl::StatusOr<std::vector<int64_t>> known = c.InputInts(3);
    if (!known.ok()) return c.Unsupported("axes must be known at import time when starts or ends are not");
    axes = *known;
  } else {
    for (int64_t i = 0; i < count; ++i) axes.push_back(i);
  }
  KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(c, axes, static_cast<int64_t>(shape.size())));
  Expr steps;
  if (c.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(steps, c.Input(4));
  } else {
    steps = relax::Constant(IntData(std::vector<int64_t>(static_cast<size_t>(count), 1), DataType::Int64(), {count}));
  }
  KILN_ASSIGN_OR_RETURN(Expr sliced, c.Call("dynamic_strided_slice", {x, starts, ends, steps}, {{"axes", axes}}));
  // Fresh variables for the sliced dims; the others keep data's.
  std::vector<PrimExpr> dims = shape;
  const std::string name = c.node().output_size() > 0 ? c.node().output(0) : std::string("slice");
  for (int64_t a : axes) {
    std::string var;
    for (char ch : absl::StrCat(name, "_dim", a)) var += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    dims[static_cast<size_t>(a)] = tir::Var::Shape(var);
  }
  absl::StatusOr<relax::Var> named = c.builder().EmitMatchCast(sliced, relax::TensorSInfo(dims, dtype), name);
  if (!named.ok()) return c.Annotate(named.status());
  return Outputs(*named);
}

// Compress (9; 11 for negative axes): the slices along `axis` (of the flattened input
// without one) whose condition is true; a condition shorter than the axis leaves the rest
// out. The output's length is the number of true entries, so the condition must be known at
// import time (a constant, or a graph input bound like Reshape's shape); then it is a take
// with constant indices.
absl::StatusOr<std::vector<Value>> ConvertCompress(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(relax::ConstantData condition, c.InputData(1));
  if (condition.shape.size() != 1) return c.Error("condition must be 1-D");
  int64_t axis = 0;
  PrimExpr length;
  if (c.HasAttr("axis")) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(c, c.AttrInt("axis", 0), static_cast<int64_t>(shape.size())));
    length = shape[static_cast<size_t>(axis)];
  } else {
    length = Product(shape, 0, shape.size());
    KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {length}));
  }
  std::vector<int64_t> dims;
  if (!AllConstant({length}, &dims)) return c.Unsupported("needs a static length along the axis");
  if (condition.numel() > dims[0]) {
    return c.Error("condition has ", condition.numel(), " entries, the axis only ", dims[0]);
  }
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < condition.numel(); ++i) {
    if (ElementAsDouble(condition, i) != 0) selected.push_back(i);
  }
  if (selected.empty()) return c.Unsupported("an empty selection (every condition false) is not supported");
  const int64_t count = static_cast<int64_t>(selected.size());
  Expr indices = relax::Constant(IntData(selected, DataType::Int64(), {count}));
  KILN_ASSIGN_OR_RETURN(Expr out, c.Call("take", {x, indices}, {{"axis", axis}}));
  return Outputs(out);
}

void RegisterDataConverters(ConverterRegistry& r) {
  r.Register("GatherElements", ConvertGatherElements, 11);
  r.Register("GatherND", ConvertGatherNd, 11);
  r.Register("Scatter", ConvertScatterElements, 9, 10);
  r.Register("ScatterElements", ConvertScatterElements, 11);
  r.Register("ScatterND", ConvertScatterNd, 11);
  r.Register("OneHot", ConvertOneHot, 9);
  r.Register("Pad", ConvertPad);
  r.Register("CenterCropPad", ConvertCenterCropPad, 18);
  r.Register("Tile", ConvertTile, 6);
  r.Register("Trilu", ConvertTrilu, 14);
  r.Register("CumSum", ConvertCumSum, 11);
  r.Register("CumProd", ConvertCumProd, 26);
  r.Register("TopK", ConvertTopK);
  r.Register("Einsum", ConvertEinsum, 12);
  r.Register("DepthToSpace", ConvertDepthToSpace);
  r.Register("SpaceToDepth", ConvertSpaceToDepth);
  r.Register("Hardmax", ConvertHardmax);
  r.Register("EyeLike", ConvertEyeLike, 9);
  r.Register("ReverseSequence", ConvertReverseSequence, 10);
  r.Register("Compress", ConvertCompress, 9);
}

}  // namespace kiln::frontends::onnx
