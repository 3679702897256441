// Operators of the ai.onnx.ml domain (traditional machine learning) that are plain tensor
// arithmetic: Binarizer and ArrayFeatureExtractor (version 1).
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Y = 1 where X > threshold, else 0, in X's type.
absl::StatusOr<std::vector<Value>> ConvertBinarizer(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_float() && !dtype.is_integer()) return c.Error("X must be a number tensor");
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  const double threshold = c.AttrFloat("threshold", 0.0);
  KILN_ASSIGN_OR_RETURN(Expr above, c.Call("greater", {x, ScalarConstant(threshold, dtype)}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("where", {above, ScalarConstant(1, dtype), ScalarConstant(0, dtype)}));
  return Outputs(y);
}

// Z = X[..., indices] on the last axis, the indices flattened (ONNX's reference takes a
// [1, n] or n-D index tensor as its n elements); a 1-D X gives [1, n].
absl::StatusOr<std::vector<Value>> ConvertArrayFeatureExtractor(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> index_shape, c.InputShape(1));
  KILN_ASSIGN_OR_RETURN(DataType index_type, c.InputDType(1));
  if (shape.empty()) return c.Error("X must have at least 1 dim");
  if (index_type != DataType::Int64()) return c.Error("Y (the indices) must be int64");
  const PrimExpr count = Product(index_shape, 0, index_shape.size());
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, c.Input(1));
  KILN_ASSIGN_OR_RETURN(indices, Reshape(c, indices, {count}));
  const int64_t axis = static_cast<int64_t>(shape.size()) - 1;
  KILN_ASSIGN_OR_RETURN(Expr z, c.Call("take", {x, indices}, {{"axis", axis}}));
  if (shape.size() == 1) {
    KILN_ASSIGN_OR_RETURN(z, Reshape(c, z, {PrimExpr(int64_t{1}), count}));
  }
  return Outputs(z);
}

}  // namespace

void RegisterMlConverters(ConverterRegistry& r) {
  r.Register(QualifiedOpType("ai.onnx.ml", "Binarizer"), ConvertBinarizer, 1);
  r.Register(QualifiedOpType("ai.onnx.ml", "ArrayFeatureExtractor"), ConvertArrayFeatureExtractor, 1);
}

}  // namespace kiln::frontends::onnx
