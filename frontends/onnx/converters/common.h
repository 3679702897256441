// Helpers shared by the converter families.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/node_context.h"
#include "frontends/onnx/value.h"
#include "relax/expr.h"

namespace kiln::frontends::onnx {

// One output.
inline std::vector<Value> Outputs(relax::Expr e) { return {Value::Of(std::move(e))}; }

// `axis` in [-ndim, ndim) made non-negative; an error naming the node otherwise.
absl::StatusOr<int64_t> NormalizeAxis(const NodeContext& context, int64_t axis, int64_t ndim);
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const NodeContext& context, std::vector<int64_t> axes, int64_t ndim);

// A 0-d constant of `dtype` holding `value` (rounded/truncated as a cast would).
relax::Expr ScalarConstant(double value, tir::DataType dtype);
// Host data of `dtype` and `shape` from doubles (integers truncated, bools != 0).
relax::ConstantData DataFromDoubles(const std::vector<double>& values, tir::DataType dtype,
                                    std::vector<int64_t> shape);

// `x` reshaped to `shape` (symbolic dims allowed).
absl::StatusOr<relax::Expr> Reshape(NodeContext& context, relax::Expr x, std::vector<PrimExpr> shape);

// x[index] along `axis` of x's `shape` (a static slice, the axis removed).
absl::StatusOr<relax::Expr> TakeIndex(NodeContext& context, const relax::Expr& x, const std::vector<PrimExpr>& shape,
                                      int64_t axis, int64_t index);

// A dim's value when it is a constant, else -1 (a symbolic dim).
int64_t StaticDim(const PrimExpr& dim);

// The product of dims [begin, end).
PrimExpr Product(const std::vector<PrimExpr>& dims, size_t begin, size_t end);

// Simplified with a fresh analyzer (shape arithmetic at import time).
PrimExpr Simplify(const PrimExpr& e);

// Slice (opset >= 10) whose starts / ends / steps are known only at run time: Kiln's
// dynamic_strided_slice, then a match_cast naming the sliced dims with fresh symbolic
// variables so that later nodes see a shape (data_converters.cc). axes must be known.
absl::StatusOr<std::vector<Value>> ConvertSliceAtRunTime(NodeContext& context);

}  // namespace kiln::frontends::onnx
