#include "frontends/onnx/converters/shape_value_folding.h"

#include <algorithm>

#include "tir/analyzer.h"

namespace kiln::frontends::onnx {

std::optional<Value> FoldShapeValues(NodeContext& c, int num_inputs, std::optional<tir::DataType> result_dtype,
                                     const ElementFold& fold) {
  std::vector<std::vector<PrimExpr>> inputs;
  size_t n = 1;
  int rank = 0;
  for (int i = 0; i < num_inputs; ++i) {
    if (!c.InputElementsKnown(i)) return std::nullopt;
    absl::StatusOr<tir::DataType> dtype = c.InputDType(i);
    if (!dtype.ok() || !(dtype->is_integer() || dtype->is_bool())) return std::nullopt;
    absl::StatusOr<std::vector<PrimExpr>> elements = c.InputElements(i);
    if (!elements.ok()) return std::nullopt;
    const Value* v = c.InputValue(i);
    rank = std::max(rank, v->elements ? v->elements_rank : static_cast<int>(v->data->shape.size()));
    if (elements->size() != 1) {
      if (n != 1 && n != elements->size()) return std::nullopt;
      n = elements->size();
    }
    inputs.push_back(*std::move(elements));
  }
  if (!result_dtype) {
    absl::StatusOr<tir::DataType> dtype = c.InputDType(0);
    if (!dtype.ok()) return std::nullopt;
    result_dtype = *dtype;
  }
  std::vector<PrimExpr> out;
  tir::Analyzer analyzer;
  for (size_t k = 0; k < n; ++k) {
    std::vector<PrimExpr> args;
    for (const auto& e : inputs) args.push_back(e[e.size() == 1 ? 0 : k]);
    std::optional<PrimExpr> r = fold(args);
    if (!r) return std::nullopt;
    out.push_back(analyzer.Simplify(*r));
  }
  return Value::OfElements(std::move(out), *result_dtype, rank);
}

std::optional<PrimExpr> ProvenTruth(const PrimExpr& condition) {
  tir::Analyzer analyzer;
  if (analyzer.CanProve(condition)) return PrimExpr(int64_t{1});
  if (analyzer.CanProve(tir::Not(condition))) return PrimExpr(int64_t{0});
  return std::nullopt;
}

}  // namespace kiln::frontends::onnx
