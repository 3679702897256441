// NonZero (opset 9): the indices of X's non-zero elements, one row per axis of X, one
// column per element in row-major order: shape (rank, nnz), nnz known only at run time.
//
// As tensor operations over X's N elements (static shape):
//   1. a stable argsort of "is zero" puts the flat positions of the non-zero elements first,
//      in order; their count nnz is the sum of the mask;
//   2. each flat position is split into one index per axis (floor_divide by the axis'
//      stride, floor_mod by its dim), the rows stacked (rank, N);
//   3. the first nnz columns are cut with dynamic_strided_slice and named by a fresh
//      symbolic dim (what Unique does for its run-time count), so later nodes see a shape.
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

Expr Int64Data(const std::vector<double>& values, std::vector<int64_t> shape) {
  return relax::Constant(DataFromDoubles(values, DataType::Int64(), std::move(shape)));
}

absl::StatusOr<std::vector<Value>> ConvertNonZero(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  if (shape.empty()) return c.Unsupported("a scalar input is not supported (NonZero of a 0-d tensor)");
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (const PrimExpr& d : shape) {
    dims.push_back(StaticDim(d));
    if (dims.back() < 0) return c.Unsupported("needs a static input shape");
    count *= dims.back();
  }
  if (count == 0) return c.Unsupported("an empty input is not supported");
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  auto op = [&](const std::string& name, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c.Call(name, std::move(args), std::move(attrs));
  };
  const PrimExpr n_dim(count);
  KILN_ASSIGN_OR_RETURN(Expr flat, Reshape(c, x, {n_dim}));

  // 1. The flat positions of the non-zero elements first (a stable sort keeps their order).
  KILN_ASSIGN_OR_RETURN(Expr is_zero, op("equal", {flat, ScalarConstant(0, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr zero_key, op("astype", {is_zero}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr position, op("argsort", {zero_key}, {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(position, op("astype", {position}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr non_zero, op("logical_not", {is_zero}));
  KILN_ASSIGN_OR_RETURN(non_zero, op("astype", {non_zero}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr nnz, op("sum", {non_zero}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}}));

  // 2. One row of indices per axis.
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<Expr> rows;
  int64_t stride = count;
  for (int64_t d = 0; d < rank; ++d) {
    stride /= dims[d];
    KILN_ASSIGN_OR_RETURN(Expr index, op("floor_divide", {position, ScalarConstant(static_cast<double>(stride), DataType::Int64())}));
    KILN_ASSIGN_OR_RETURN(index, op("floor_mod", {index, ScalarConstant(static_cast<double>(dims[d]), DataType::Int64())}));
    KILN_ASSIGN_OR_RETURN(index, Reshape(c, index, {PrimExpr(int64_t{1}), n_dim}));
    rows.push_back(index);
  }
  Expr table = rows[0];
  if (rank > 1) {
    KILN_ASSIGN_OR_RETURN(table, op("concat", {relax::Tuple(rows)}, {{"axis", int64_t{0}}}));
  }

  // 3. The first nnz columns, nnz a fresh symbolic dim.
  std::string var;
  const std::string name = c.node().output_size() > 0 ? c.node().output(0) : std::string("nonzero");
  for (char ch : absl::StrCat(name, "_count")) var += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  KILN_ASSIGN_OR_RETURN(Expr cut, op("dynamic_strided_slice", {table, Int64Data({0}, {1}), nnz, Int64Data({1}, {1})},
                                     {{"axes", std::vector<int64_t>{1}}}));
  absl::StatusOr<relax::Var> named = c.builder().EmitMatchCast(
      cut, relax::TensorSInfo({PrimExpr(rank), tir::Var::Shape(var)}, DataType::Int64()), name);
  if (!named.ok()) return c.Annotate(named.status());
  return Outputs(*named);
}

}  // namespace

void RegisterNonZeroConverters(ConverterRegistry& r) { r.Register("NonZero", ConvertNonZero, 9); }

}  // namespace kiln::frontends::onnx
