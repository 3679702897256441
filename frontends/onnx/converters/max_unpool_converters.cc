// MaxUnpool (opsets 9, 11): the partial inverse of MaxPool. X (N, C, D1, ...) and the
// indices I of X's shape (MaxPool's Indices output: flat positions in the whole output
// tensor, row-major over (N, C, D1', ...)) give an output of zeros with X's values at those
// positions. The indices point into the inferred shape, per spatial dim (D - 1) * stride +
// kernel - pads at both ends: one scatter_elements into its flattened zeros, then a reshape.
// An `output_shape` input (known at import time, as Reshape's shape) that is larger only
// adds zeros at the end of each dim, as ONNX's reference does (its test expects that); a
// smaller one is refused.
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

absl::StatusOr<std::vector<Value>> ConvertMaxUnpool(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> index_shape, c.InputShape(1));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 3) return c.Error("X must have at least 3 dims (N, C, spatial...), got ", rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (d >= static_cast<int64_t>(index_shape.size()) || StaticDim(index_shape[d]) != StaticDim(shape[d])) {
      return c.Error("I must have X's shape");
    }
  }
  const int64_t spatial = rank - 2;
  const std::vector<int64_t> kernel = c.AttrInts("kernel_shape");
  if (static_cast<int64_t>(kernel.size()) != spatial) {
    return c.Error("kernel_shape must have ", spatial, " values (got ", kernel.size(), ")");
  }
  const std::vector<int64_t> strides = c.AttrInts("strides", std::vector<int64_t>(static_cast<size_t>(spatial), 1));
  const std::vector<int64_t> pads = c.AttrInts("pads", std::vector<int64_t>(static_cast<size_t>(2 * spatial), 0));
  if (static_cast<int64_t>(strides.size()) != spatial || static_cast<int64_t>(pads.size()) != 2 * spatial) {
    return c.Error("strides must have ", spatial, " values and pads ", 2 * spatial);
  }
  KILN_ASSIGN_OR_RETURN(DataType index_dtype, c.InputDType(1));
  if (!index_dtype.is_integer()) return c.Error("I must be integers (got ", index_dtype.ToString(), ")");

  // The inferred shape, where the indices point.
  std::vector<int64_t> inferred;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = StaticDim(shape[d]);
    if (dim < 0) return c.Unsupported("needs a static input shape");
    inferred.push_back(d < 2 ? dim : (dim - 1) * strides[d - 2] + kernel[d - 2] - pads[d - 2] - pads[spatial + d - 2]);
    if (inferred.back() <= 0) return c.Error("the output's dim ", d, " would be ", inferred.back());
  }
  int64_t count = 1, total = 1;
  for (const PrimExpr& d : shape) count *= StaticDim(d);
  for (int64_t d : inferred) total *= d;
  // output_shape only adds zeros after the inferred extent of each dim.
  std::vector<int64_t> extra(static_cast<size_t>(2 * rank), 0);
  bool padded = false;
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> given, c.InputInts(2));
    if (static_cast<int64_t>(given.size()) != rank) {
      return c.Error("output_shape must have ", rank, " values (got ", given.size(), ")");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (given[d] < inferred[d]) {
        return c.Unsupported("output_shape's dim ", d, " (", given[d], ") is smaller than the inferred ", inferred[d]);
      }
      extra[rank + d] = given[d] - inferred[d];
      padded = padded || extra[rank + d] > 0;
    }
  }
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(1));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {PrimExpr(count)}));
  KILN_ASSIGN_OR_RETURN(indices, Reshape(c, indices, {PrimExpr(count)}));
  KILN_ASSIGN_OR_RETURN(indices, c.Call("astype", {indices}, {{"dtype", DataType::Int64()}}));
  // An index outside the output is a run-time error of the scatter kernel (a negative one
  // counts from the end, as numpy's indexing in ONNX's reference).
  KILN_ASSIGN_OR_RETURN(Expr zeros, c.Call("zeros", {relax::ShapeExpr({PrimExpr(total)})}, {{"dtype", dtype}}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("scatter_elements", {zeros, indices, x},
                                       {{"axis", int64_t{0}}, {"reduction", std::string("none")}}));
  std::vector<PrimExpr> inferred_dims(inferred.begin(), inferred.end());
  KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, inferred_dims));
  if (padded) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("pad", {y}, {{"pads", extra}, {"mode", std::string("constant")}, {"pad_value", 0.0}}));
  }
  std::vector<Value> out = Outputs(y);
  if (const Value* input = c.InputValue(0)) out[0].narrow_type = input->narrow_type;
  return out;
}

}  // namespace

void RegisterMaxUnpoolConverters(ConverterRegistry& r) { r.Register("MaxUnpool", ConvertMaxUnpool, 9); }

}  // namespace kiln::frontends::onnx
