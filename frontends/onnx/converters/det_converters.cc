// Det (opset 11): the determinant of each square matrix in the innermost two dims of X
// (shape (*, n, n) -> (*)), by Gaussian elimination with partial pivoting, unrolled over the
// static n at import time; the batch is one leading dim B (symbolic allowed).
//
// Step k on A (B, n, n): the pivot row p is the row >= k with the largest |A[., k]|
// (argmax); rows k and p swap (a gather of rows, which flips the sign when p != k); the
// rows below k subtract their multiple of row k. det = sign * product of the pivots. A zero
// pivot means column k is zero from row k down: the determinant is 0, and the step divides
// by 1 instead so that no NaN appears. As numpy.linalg.det (ONNX's reference), float32 is
// computed in float64 and rounded once; float16 / bfloat16 (held in float32) too.
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// The elimination is unrolled: about 20 operators per column.
constexpr int64_t kMaxOrder = 256;

absl::StatusOr<std::vector<Value>> ConvertDet(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  if (shape.size() < 2) return c.Error("input must have at least 2 dims (got ", shape.size(), ")");
  const int64_t n = StaticDim(shape[shape.size() - 1]);
  if (n < 0 || StaticDim(shape[shape.size() - 2]) < 0) return c.Unsupported("needs static matrix dims");
  if (StaticDim(shape[shape.size() - 2]) != n) {
    return c.Error("the matrices must be square (got ", StaticDim(shape[shape.size() - 2]), " x ", n, ")");
  }
  if (n == 0) return c.Unsupported("0 x 0 matrices are not supported");
  if (n > kMaxOrder) return c.Unsupported("matrices of order ", n, " are too large (at most ", kMaxOrder, ")");
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_floating()) return c.Error("input must be a floating-point tensor (got ", dtype.ToString(), ")");
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  auto op = [&](const std::string& name, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c.Call(name, std::move(args), std::move(attrs));
  };

  const DataType f64 = DataType::Float(64);
  const std::vector<PrimExpr> batch_dims(shape.begin(), shape.end() - 2);
  const PrimExpr b = Simplify(Product(shape, 0, shape.size() - 2));
  const PrimExpr nd(n), one(int64_t{1});
  KILN_ASSIGN_OR_RETURN(Expr a, op("astype", {x}, {{"dtype", f64}}));
  KILN_ASSIGN_OR_RETURN(a, Reshape(c, a, {b, nd, nd}));

  std::vector<double> row_numbers(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) row_numbers[i] = static_cast<double>(i);
  const Expr row = relax::Constant(DataFromDoubles(row_numbers, DataType::Int64(), {n}));  // (n)
  auto rows_where = [&](const std::string& compare, int64_t k) {
    return op(compare, {row, ScalarConstant(static_cast<double>(k), DataType::Int64())});
  };

  Expr det;  // (B), the product of the pivots times the sign of the row swaps
  for (int64_t k = 0; k < n; ++k) {
    if (k + 1 < n) {
      // The pivot: the largest |A[r, k]| over rows r >= k (the rows above are -1).
      KILN_ASSIGN_OR_RETURN(Expr column, TakeIndex(c, a, {b, nd, nd}, 2, k));  // (B, n)
      KILN_ASSIGN_OR_RETURN(Expr magnitude, op("abs", {column}));
      KILN_ASSIGN_OR_RETURN(Expr eligible, rows_where("greater_equal", k));
      KILN_ASSIGN_OR_RETURN(magnitude, op("where", {eligible, magnitude, ScalarConstant(-1, f64)}));
      KILN_ASSIGN_OR_RETURN(Expr p, op("argmax", {magnitude}, {{"axis", int64_t{1}}, {"keepdims", true}}));  // (B, 1)
      KILN_ASSIGN_OR_RETURN(p, op("astype", {p}, {{"dtype", DataType::Int64()}}));
      // Swap rows k and p: row r of the result is row perm[r] of A.
      const Expr k_value = ScalarConstant(static_cast<double>(k), DataType::Int64());
      KILN_ASSIGN_OR_RETURN(Expr is_k, rows_where("equal", k));
      KILN_ASSIGN_OR_RETURN(Expr is_p, op("equal", {row, p}));
      KILN_ASSIGN_OR_RETURN(Expr others, op("where", {is_p, k_value, row}));
      KILN_ASSIGN_OR_RETURN(Expr perm, op("where", {is_k, p, others}));  // (B, n)
      KILN_ASSIGN_OR_RETURN(perm, Reshape(c, perm, {b, nd, one}));
      KILN_ASSIGN_OR_RETURN(perm, op("broadcast_to", {perm, relax::ShapeExpr({b, nd, nd})}));
      KILN_ASSIGN_OR_RETURN(a, op("gather_elements", {a, perm}, {{"axis", int64_t{1}}}));
      KILN_ASSIGN_OR_RETURN(Expr swapped, op("not_equal", {p, k_value}));
      KILN_ASSIGN_OR_RETURN(Expr sign, op("where", {swapped, ScalarConstant(-1, f64), ScalarConstant(1, f64)}));
      KILN_ASSIGN_OR_RETURN(sign, Reshape(c, sign, {b}));
      if (det.defined()) {
        KILN_ASSIGN_OR_RETURN(det, op("multiply", {det, sign}));
      } else {
        det = sign;
      }
    }
    KILN_ASSIGN_OR_RETURN(Expr pivot_row, TakeIndex(c, a, {b, nd, nd}, 1, k));  // (B, n)
    KILN_ASSIGN_OR_RETURN(Expr pivot, TakeIndex(c, pivot_row, {b, nd}, 1, k));  // (B)
    if (det.defined()) {
      KILN_ASSIGN_OR_RETURN(det, op("multiply", {det, pivot}));
    } else {
      det = pivot;
    }
    if (k + 1 == n) break;
    // Eliminate column k below row k.
    KILN_ASSIGN_OR_RETURN(Expr zero_pivot, op("equal", {pivot, ScalarConstant(0, f64)}));
    KILN_ASSIGN_OR_RETURN(Expr divisor, op("where", {zero_pivot, ScalarConstant(1, f64), pivot}));
    KILN_ASSIGN_OR_RETURN(divisor, Reshape(c, divisor, {b, one}));
    KILN_ASSIGN_OR_RETURN(Expr column, TakeIndex(c, a, {b, nd, nd}, 2, k));  // (B, n)
    KILN_ASSIGN_OR_RETURN(Expr factor, op("divide", {column, divisor}));
    KILN_ASSIGN_OR_RETURN(Expr below, rows_where("greater", k));
    KILN_ASSIGN_OR_RETURN(factor, op("where", {below, factor, ScalarConstant(0, f64)}));
    KILN_ASSIGN_OR_RETURN(factor, Reshape(c, factor, {b, nd, one}));
    KILN_ASSIGN_OR_RETURN(pivot_row, Reshape(c, pivot_row, {b, one, nd}));
    KILN_ASSIGN_OR_RETURN(Expr update, op("multiply", {factor, pivot_row}));
    KILN_ASSIGN_OR_RETURN(a, op("subtract", {a, update}));
  }
  KILN_ASSIGN_OR_RETURN(det, Reshape(c, det, batch_dims));
  KILN_ASSIGN_OR_RETURN(det, op("astype", {det}, {{"dtype", dtype}}));
  return Outputs(det);
}

}  // namespace

void RegisterDetConverters(ConverterRegistry& r) { r.Register("Det", ConvertDet, 11); }

}  // namespace kiln::frontends::onnx
