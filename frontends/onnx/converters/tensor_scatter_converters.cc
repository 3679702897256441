// TensorScatter (opset 24): a KV-cache update. past_cache (B, ..., L, ...) and update
// (B, ..., S, ...) differ only along `axis` (default -2, never the batch axis);
// present_cache is past_cache with update[b, ..., i, ...] written at position
// write_indices[b] + i along the axis (mode "linear"), or that position modulo L ("circular").
// write_indices (B) is optional, 0 for every batch entry when absent.
//
// As a gather rather than a scatter: output position t of batch entry b reads update's
// i = t - w[b] (modulo L when circular) when 0 <= i < S, else past_cache's own element. The
// (B, L) table of i and of the mask is reshaped to broadcast along the other dims, so one
// gather_elements and one where do the whole update. L and S must be static.
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

absl::StatusOr<std::vector<Value>> ConvertTensorScatter(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> past_shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> update_shape, c.InputShape(1));
  const int64_t rank = static_cast<int64_t>(past_shape.size());
  if (rank < 2) return c.Error("past_cache must have at least 2 dims (got ", rank, ")");
  if (static_cast<int64_t>(update_shape.size()) != rank) {
    return c.Error("update has ", update_shape.size(), " dims where past_cache has ", rank);
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(c, c.AttrInt("axis", -2), rank));
  if (axis == 0) return c.Error("axis must not be the batch axis 0");
  const std::string mode = c.AttrString("mode", "linear");
  if (mode != "linear" && mode != "circular") return c.Error("mode must be 'linear' or 'circular' (got '", mode, "')");
  const int64_t max_len = StaticDim(past_shape[axis]);
  const int64_t len = StaticDim(update_shape[axis]);
  if (max_len < 0 || len < 0) return c.Unsupported("needs static lengths along the axis");
  if (len > max_len) return c.Error("update's length ", len, " along axis ", axis, " exceeds past_cache's ", max_len);
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(DataType update_dtype, c.InputDType(1));
  if (update_dtype != dtype) return c.Error("update's element type differs from past_cache's");
  KILN_ASSIGN_OR_RETURN(Expr past, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr update, c.Input(1));
  auto op = [&](const std::string& name, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c.Call(name, std::move(args), std::move(attrs));
  };
  const PrimExpr batch = past_shape[0], one(int64_t{1});

  // i = t - w[b] over (B, L).
  std::vector<double> positions(static_cast<size_t>(max_len));
  for (int64_t t = 0; t < max_len; ++t) positions[t] = static_cast<double>(t);
  Expr source = relax::Constant(DataFromDoubles(positions, DataType::Int64(), {1, max_len}));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Expr write, c.Input(2));
    KILN_ASSIGN_OR_RETURN(DataType write_dtype, c.InputDType(2));
    if (!write_dtype.is_integer()) return c.Error("write_indices must be integers (got ", write_dtype.ToString(), ")");
    KILN_ASSIGN_OR_RETURN(write, op("astype", {write}, {{"dtype", DataType::Int64()}}));
    KILN_ASSIGN_OR_RETURN(write, Reshape(c, write, {batch, one}));
    KILN_ASSIGN_OR_RETURN(source, op("subtract", {source, write}));
  }
  if (mode == "circular") {
    KILN_ASSIGN_OR_RETURN(source, op("floor_mod", {source, ScalarConstant(static_cast<double>(max_len), DataType::Int64())}));
  }
  KILN_ASSIGN_OR_RETURN(Expr from_start, op("greater_equal", {source, ScalarConstant(0, DataType::Int64())}));
  KILN_ASSIGN_OR_RETURN(Expr before_end, op("less", {source, ScalarConstant(static_cast<double>(len), DataType::Int64())}));
  KILN_ASSIGN_OR_RETURN(Expr written, op("logical_and", {from_start, before_end}));
  KILN_ASSIGN_OR_RETURN(source, op("where", {written, source, ScalarConstant(0, DataType::Int64())}));
  KILN_ASSIGN_OR_RETURN(source, op("broadcast_to", {source, relax::ShapeExpr({batch, PrimExpr(max_len)})}));
  KILN_ASSIGN_OR_RETURN(written, op("broadcast_to", {written, relax::ShapeExpr({batch, PrimExpr(max_len)})}));

  // Both tables laid along the axis, 1 elsewhere but the batch.
  std::vector<PrimExpr> table_shape(static_cast<size_t>(rank), one);
  table_shape[0] = batch;
  table_shape[axis] = PrimExpr(max_len);
  KILN_ASSIGN_OR_RETURN(source, Reshape(c, source, table_shape));
  KILN_ASSIGN_OR_RETURN(written, Reshape(c, written, table_shape));
  KILN_ASSIGN_OR_RETURN(source, op("broadcast_to", {source, relax::ShapeExpr(past_shape)}));
  KILN_ASSIGN_OR_RETURN(Expr gathered, op("gather_elements", {update, source}, {{"axis", axis}}));
  KILN_ASSIGN_OR_RETURN(Expr present, op("where", {written, gathered, past}));
  std::vector<Value> out = Outputs(present);
  if (const Value* input = c.InputValue(0)) out[0].narrow_type = input->narrow_type;
  return out;
}

}  // namespace

void RegisterTensorScatterConverters(ConverterRegistry& r) { r.Register("TensorScatter", ConvertTensorScatter, 24); }

}  // namespace kiln::frontends::onnx
