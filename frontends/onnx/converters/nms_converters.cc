// NonMaxSuppression (10 / 11): per batch and class, the boxes taken greedily by descending
// score (ties: the lower box index first), each dropped when its IoU with a box already taken
// exceeds iou_threshold, at most max_output_boxes_per_class of them, scores not above
// score_threshold (when given) never taken. The result (num_selected, 3) lists
// [batch, class, box] by batch, class, then selection order, as ONNX's reference.
//
// Kiln has no loops, so this is decomposed into tensor operations:
//   1. IoU > threshold for every pair of boxes of a batch (B, N, N), with ONNX's tests
//      (corners' min/max per axis, or center_point_box's centers and sizes; an empty
//      intersection, area or union never suppresses);
//   2. argsort of each class's scores (stable, descending); the pair matrix gathered into
//      that order (B, C, N, N);
//   3. the greedy pass unrolled over the N sorted positions (N static): position i is kept
//      when valid, not suppressed by an earlier kept box and the class count is below the
//      maximum; its row of the pair matrix then suppresses later boxes;
//   4. the kept rows moved first (a stable argsort of "not kept") and cut to their run-time
//      count with dynamic_strided_slice, whose length becomes a fresh symbolic dim.
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Boxes per batch at most: the greedy pass is unrolled over them (a dozen kernels per box
// to compile).
constexpr int64_t kMaxBoxes = 256;
// Elements of the sorted pair matrix (B, C, N, N) at most.
constexpr int64_t kMaxPairs = int64_t{1} << 26;

// The bounds of each box along the two axes: lo / hi (B, N) per axis.
struct Extents {
  Expr lo[2], hi[2];
};

class Suppression {
 public:
  explicit Suppression(NodeContext& c) : c_(c) {}
  absl::StatusOr<std::vector<Value>> Convert();

 private:
  absl::StatusOr<Expr> Op(const std::string& op, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c_.Call(op, std::move(args), std::move(attrs));
  }
  absl::StatusOr<Extents> BoxExtents(const Expr& boxes);
  // Whether box i suppresses box j (or j i), for every pair of a batch: (B, N, N) bool.
  absl::StatusOr<Expr> PairSuppression(const Extents& e, const Expr& iou_threshold);
  // A scalar input (shape () or (1,)) as a (1,) tensor, or `fallback` when absent.
  absl::StatusOr<Expr> ScalarInput(int i, double fallback, DataType dtype);
  // (B, N) as (B, N, 1) (axis 2) or (B, 1, N) (axis 1), to pair every box with every box.
  absl::StatusOr<Expr> Along(const Expr& x, int64_t axis) {
    return Reshape(c_, x, axis == 2 ? std::vector<PrimExpr>{b_, n_, one_} : std::vector<PrimExpr>{b_, one_, n_});
  }

  NodeContext& c_;
  DataType dtype_;
  int64_t batches_ = 0, classes_ = 0, boxes_ = 0;
  PrimExpr b_, c_dim_, n_, one_{int64_t{1}};
};

absl::StatusOr<Extents> Suppression::BoxExtents(const Expr& boxes) {
  const std::vector<PrimExpr> shape = {b_, n_, PrimExpr(int64_t{4})};
  Expr coord[4];
  for (int64_t k = 0; k < 4; ++k) {
    KILN_ASSIGN_OR_RETURN(coord[k], TakeIndex(c_, boxes, shape, 2, k));
  }
  Extents e;
  if (c_.AttrInt("center_point_box", 0) != 0) {  // [x_center, y_center, width, height]
    for (int axis = 0; axis < 2; ++axis) {
      KILN_ASSIGN_OR_RETURN(Expr half, Op("divide", {coord[axis + 2], ScalarConstant(2, dtype_)}));
      KILN_ASSIGN_OR_RETURN(e.lo[axis], Op("subtract", {coord[axis], half}));
      KILN_ASSIGN_OR_RETURN(e.hi[axis], Op("add", {coord[axis], half}));
    }
  } else {  // [y1, x1, y2, x2], either corner first
    for (int axis = 0; axis < 2; ++axis) {
      KILN_ASSIGN_OR_RETURN(e.lo[axis], Op("minimum", {coord[axis], coord[axis + 2]}));
      KILN_ASSIGN_OR_RETURN(e.hi[axis], Op("maximum", {coord[axis], coord[axis + 2]}));
    }
  }
  return e;
}

absl::StatusOr<Expr> Suppression::PairSuppression(const Extents& e, const Expr& iou_threshold) {
  const Expr zero = ScalarConstant(0, dtype_);
  Expr overlap, inter, area_i, area_j;
  for (int axis = 0; axis < 2; ++axis) {
    KILN_ASSIGN_OR_RETURN(Expr lo_i, Along(e.lo[axis], 2));
    KILN_ASSIGN_OR_RETURN(Expr lo_j, Along(e.lo[axis], 1));
    KILN_ASSIGN_OR_RETURN(Expr hi_i, Along(e.hi[axis], 2));
    KILN_ASSIGN_OR_RETURN(Expr hi_j, Along(e.hi[axis], 1));
    KILN_ASSIGN_OR_RETURN(Expr lo, Op("maximum", {lo_i, lo_j}));
    KILN_ASSIGN_OR_RETURN(Expr hi, Op("minimum", {hi_i, hi_j}));
    KILN_ASSIGN_OR_RETURN(Expr positive, Op("greater", {hi, lo}));
    KILN_ASSIGN_OR_RETURN(Expr width, Op("subtract", {hi, lo}));
    KILN_ASSIGN_OR_RETURN(Expr side_i, Op("subtract", {hi_i, lo_i}));  // (B, N, 1)
    KILN_ASSIGN_OR_RETURN(Expr side_j, Op("subtract", {hi_j, lo_j}));  // (B, 1, N)
    if (axis == 0) {
      overlap = positive;
      inter = width;
      area_i = side_i;
      area_j = side_j;
    } else {
      KILN_ASSIGN_OR_RETURN(overlap, Op("logical_and", {overlap, positive}));
      KILN_ASSIGN_OR_RETURN(inter, Op("multiply", {inter, width}));
      KILN_ASSIGN_OR_RETURN(area_i, Op("multiply", {area_i, side_i}));
      KILN_ASSIGN_OR_RETURN(area_j, Op("multiply", {area_j, side_j}));
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr areas, Op("add", {area_i, area_j}));
  KILN_ASSIGN_OR_RETURN(Expr union_area, Op("subtract", {areas, inter}));
  std::vector<Expr> tests = {overlap};
  for (const Expr& positive : {inter, area_i, area_j, union_area}) {
    KILN_ASSIGN_OR_RETURN(Expr t, Op("greater", {positive, zero}));
    tests.push_back(t);
  }
  KILN_ASSIGN_OR_RETURN(Expr iou, Op("divide", {inter, union_area}));
  KILN_ASSIGN_OR_RETURN(Expr above, Op("greater", {iou, iou_threshold}));
  tests.push_back(above);
  Expr all = tests[0];
  for (size_t k = 1; k < tests.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(all, Op("logical_and", {all, tests[k]}));
  }
  // Broadcast (B, N, 1) and (B, 1, N) terms give (B, N, N).
  return Op("broadcast_to", {all, relax::ShapeExpr({b_, n_, n_})});
}

absl::StatusOr<Expr> Suppression::ScalarInput(int i, double fallback, DataType dtype) {
  if (!c_.has_input(i)) return relax::Constant(DataFromDoubles({fallback}, dtype, {1}));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c_.InputShape(i));
  if (s.size() > 1 || (s.size() == 1 && StaticDim(s[0]) != 1)) return c_.Error("input ", i, " must be a scalar");
  KILN_ASSIGN_OR_RETURN(Expr x, c_.Input(i));
  KILN_ASSIGN_OR_RETURN(DataType t, c_.InputDType(i));
  if (t != dtype) {
    KILN_ASSIGN_OR_RETURN(x, Op("astype", {x}, {{"dtype", dtype}}));
  }
  return Reshape(c_, x, {one_});
}

absl::StatusOr<std::vector<Value>> Suppression::Convert() {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bs, c_.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ss, c_.InputShape(1));
  if (bs.size() != 3 || ss.size() != 3) return c_.Error("boxes and scores must be 3-D");
  batches_ = StaticDim(bs[0]);
  boxes_ = StaticDim(bs[1]);
  classes_ = StaticDim(ss[1]);
  if (batches_ < 0 || boxes_ < 0 || classes_ < 0 || StaticDim(bs[2]) < 0 || StaticDim(ss[0]) < 0 ||
      StaticDim(ss[2]) < 0) {
    return c_.Unsupported("needs static shapes of boxes and scores");
  }
  if (StaticDim(bs[2]) != 4) return c_.Error("boxes must have 4 coordinates per box");
  if (StaticDim(ss[0]) != batches_ || StaticDim(ss[2]) != boxes_) {
    return c_.Error("scores must have shape (", batches_, ", classes, ", boxes_, ")");
  }
  if (boxes_ > kMaxBoxes) return c_.Unsupported(boxes_, " boxes are too many (at most ", kMaxBoxes, ")");
  if (batches_ * classes_ * boxes_ * boxes_ > kMaxPairs) {
    return c_.Unsupported("batches * classes * boxes^2 is too large (at most ", kMaxPairs, ")");
  }
  KILN_ASSIGN_OR_RETURN(dtype_, c_.InputDType(0));
  b_ = PrimExpr(batches_);
  c_dim_ = PrimExpr(classes_);
  n_ = PrimExpr(boxes_);
  const int64_t rows = batches_ * classes_ * boxes_;
  // Without max_output_boxes_per_class (0 by default) nothing is selected.
  if (!c_.has_input(2) || rows == 0) {
    return Outputs(relax::Constant(DataFromDoubles({}, DataType::Int64(), {0, 3})));
  }

  // 1. Pairs of boxes that suppress each other.
  KILN_ASSIGN_OR_RETURN(Expr boxes, c_.Input(0));
  KILN_ASSIGN_OR_RETURN(Extents extents, BoxExtents(boxes));
  KILN_ASSIGN_OR_RETURN(Expr iou_threshold, ScalarInput(3, 0.0, dtype_));
  KILN_ASSIGN_OR_RETURN(Expr pairs, PairSuppression(extents, iou_threshold));

  // 2. Each class's boxes by descending score; the pair matrix in that order (int32 for
  // gather_elements), (B, C, N, N).
  KILN_ASSIGN_OR_RETURN(Expr scores, c_.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr order, Op("argsort", {scores}, {{"axis", int64_t{2}}, {"descending", true}}));
  const std::vector<PrimExpr> square = {b_, c_dim_, n_, n_};
  KILN_ASSIGN_OR_RETURN(Expr sorted_pairs, Op("astype", {pairs}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(sorted_pairs, Reshape(c_, sorted_pairs, {b_, one_, n_, n_}));
  KILN_ASSIGN_OR_RETURN(sorted_pairs, Op("broadcast_to", {sorted_pairs, relax::ShapeExpr(square)}));
  KILN_ASSIGN_OR_RETURN(Expr row_index, Reshape(c_, order, {b_, c_dim_, n_, one_}));
  KILN_ASSIGN_OR_RETURN(row_index, Op("broadcast_to", {row_index, relax::ShapeExpr(square)}));
  KILN_ASSIGN_OR_RETURN(sorted_pairs, Op("gather_elements", {sorted_pairs, row_index}, {{"axis", int64_t{2}}}));
  KILN_ASSIGN_OR_RETURN(Expr column_index, Reshape(c_, order, {b_, c_dim_, one_, n_}));
  KILN_ASSIGN_OR_RETURN(column_index, Op("broadcast_to", {column_index, relax::ShapeExpr(square)}));
  KILN_ASSIGN_OR_RETURN(sorted_pairs, Op("gather_elements", {sorted_pairs, column_index}, {{"axis", int64_t{3}}}));
  KILN_ASSIGN_OR_RETURN(sorted_pairs, Op("not_equal", {sorted_pairs, ScalarConstant(0, DataType::Int32())}));
  Expr valid;  // (B, C, N) in sorted order; undefined: every box is a candidate
  if (c_.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(Expr score_threshold, ScalarInput(4, 0.0, dtype_));
    KILN_ASSIGN_OR_RETURN(Expr sorted_scores, Op("gather_elements", {scores, order}, {{"axis", int64_t{2}}}));
    KILN_ASSIGN_OR_RETURN(valid, Op("greater", {sorted_scores, score_threshold}));
  }
  KILN_ASSIGN_OR_RETURN(Expr max_count, ScalarInput(2, 0.0, DataType::Int64()));

  // 3. The greedy pass over the sorted positions.
  const std::vector<PrimExpr> per_class = {b_, c_dim_, n_};
  Expr suppressed;  // (B, C, N) bool, undefined before the first kept box
  Expr count = relax::Constant(DataFromDoubles(std::vector<double>(batches_ * classes_, 0.0), DataType::Int64(),
                                               {batches_, classes_}));
  std::vector<Expr> kept;
  for (int64_t i = 0; i < boxes_; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr keep, Op("less", {count, max_count}));  // (B, C)
    if (valid.defined()) {
      KILN_ASSIGN_OR_RETURN(Expr valid_i, TakeIndex(c_, valid, per_class, 2, i));
      KILN_ASSIGN_OR_RETURN(keep, Op("logical_and", {keep, valid_i}));
    }
    if (suppressed.defined()) {
      KILN_ASSIGN_OR_RETURN(Expr suppressed_i, TakeIndex(c_, suppressed, per_class, 2, i));
      KILN_ASSIGN_OR_RETURN(Expr free_i, Op("logical_not", {suppressed_i}));
      KILN_ASSIGN_OR_RETURN(keep, Op("logical_and", {keep, free_i}));
    }
    KILN_ASSIGN_OR_RETURN(Expr keep_column, Reshape(c_, keep, {b_, c_dim_, one_}));
    kept.push_back(keep_column);
    if (i + 1 == boxes_) break;
    KILN_ASSIGN_OR_RETURN(Expr row, TakeIndex(c_, sorted_pairs, square, 2, i));  // (B, C, N)
    KILN_ASSIGN_OR_RETURN(Expr now_suppressed, Op("logical_and", {keep_column, row}));
    if (suppressed.defined()) {
      KILN_ASSIGN_OR_RETURN(suppressed, Op("logical_or", {suppressed, now_suppressed}));
    } else {
      suppressed = now_suppressed;
    }
    KILN_ASSIGN_OR_RETURN(Expr one_more, Op("astype", {keep}, {{"dtype", DataType::Int64()}}));
    KILN_ASSIGN_OR_RETURN(count, Op("add", {count, one_more}));
  }
  Expr keep = kept[0];
  if (kept.size() > 1) {
    KILN_ASSIGN_OR_RETURN(keep, Op("concat", {relax::Tuple(kept)}, {{"axis", int64_t{2}}}));
  }

  // 4. Rows [batch, class, box] of the kept positions, in order, cut to their count.
  std::vector<double> batch_class(static_cast<size_t>(rows * 2));
  for (int64_t r = 0; r < rows; ++r) {
    batch_class[2 * r] = static_cast<double>(r / (classes_ * boxes_));
    batch_class[2 * r + 1] = static_cast<double>(r / boxes_ % classes_);
  }
  const Expr batch_class_columns =
      relax::Constant(DataFromDoubles(batch_class, DataType::Int64(), {batches_, classes_, boxes_, 2}));
  KILN_ASSIGN_OR_RETURN(Expr box_column, Reshape(c_, order, {b_, c_dim_, n_, one_}));
  KILN_ASSIGN_OR_RETURN(box_column, Op("astype", {box_column}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr table, Op("concat", {relax::Tuple({batch_class_columns, box_column})},
                                       {{"axis", int64_t{3}}}));
  KILN_ASSIGN_OR_RETURN(table, Reshape(c_, table, {PrimExpr(rows), PrimExpr(int64_t{3})}));
  KILN_ASSIGN_OR_RETURN(Expr flat_keep, Reshape(c_, keep, {PrimExpr(rows)}));
  KILN_ASSIGN_OR_RETURN(Expr dropped, Op("logical_not", {flat_keep}));
  KILN_ASSIGN_OR_RETURN(dropped, Op("astype", {dropped}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr kept_first, Op("argsort", {dropped}, {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(table, Op("take", {table, kept_first}, {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(Expr selected, Op("astype", {flat_keep}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(selected, Op("sum", {selected}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}}));
  const Expr zero = relax::Constant(DataFromDoubles({0}, DataType::Int64(), {1}));
  const Expr step = relax::Constant(DataFromDoubles({1}, DataType::Int64(), {1}));
  KILN_ASSIGN_OR_RETURN(Expr cut, Op("dynamic_strided_slice", {table, zero, selected, step},
                                     {{"axes", std::vector<int64_t>{0}}}));
  // The count becomes a fresh symbolic dim (named after the output).
  const std::string name = c_.node().output_size() > 0 ? c_.node().output(0) : std::string("selected");
  std::string var;
  for (char ch : absl::StrCat(name, "_count")) var += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  absl::StatusOr<relax::Var> named = c_.builder().EmitMatchCast(
      cut, relax::TensorSInfo({tir::Var::Shape(var), PrimExpr(int64_t{3})}, DataType::Int64()), name);
  if (!named.ok()) return c_.Annotate(named.status());
  return Outputs(*named);
}

absl::StatusOr<std::vector<Value>> ConvertNonMaxSuppression(NodeContext& c) { return Suppression(c).Convert(); }

}  // namespace

void RegisterNmsConverters(ConverterRegistry& r) { r.Register("NonMaxSuppression", ConvertNonMaxSuppression, 10); }

}  // namespace kiln::frontends::onnx
