#include "frontends/onnx/converters/bfloat16_outputs.h"

#include <optional>
#include <string>
#include <unordered_set>

#include "frontends/onnx/converters/narrowing.h"
#include "frontends/onnx/narrow_types.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using tir::DataType;

// Operators whose float outputs are elements of their inputs (moved, selected, or
// sign-flipped): a bfloat16 input gives bfloat16 values without rounding.
bool OnlyMovesElements(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {
      "Identity",  "Reshape",        "Flatten",      "Squeeze",       "Unsqueeze",    "Transpose",
      "Concat",    "Split",          "Slice",        "Gather",        "GatherElements", "GatherND",
      "Scatter",   "ScatterElements", "ScatterND",   "Expand",        "Tile",         "Pad",
      "ReverseSequence", "DepthToSpace", "SpaceToDepth", "Compress",  "Where",        "Max",
      "Min",       "Relu",           "Neg",          "Abs",           "TopK",         "Dropout",
      "Trilu",     "MaxPool",        "GlobalMaxPool", "OneHot",       "CenterCropPad", "Unique",
      "ReduceMax", "ReduceMin",      "Constant",     "ConstantOfShape", "EyeLike"};
  return kOps.count(op) > 0;
}

std::optional<DataType> DTypeOf(const Value& v) {
  if (v.expr.defined()) {
    const auto* t = v.expr.struct_info().as<relax::TensorStructInfoNode>();
    if (t != nullptr && t->dtype) return *t->dtype;
    return std::nullopt;
  }
  if (v.data) return v.data->dtype;
  if (v.elements) return v.elements_dtype;
  return std::nullopt;
}

// The ONNX type of input i when known: its narrow type's number, or 0 for a plain float
// type (float16/32/64), or -1 when it is not a float at all (or absent).
int32_t FloatInputType(const NodeContext& c, int i) {
  const Value* v = c.InputValue(i);
  if (v == nullptr) return -1;
  if (v->narrow_type != 0) return FindNarrowType(v->narrow_type)->is_float ? v->narrow_type : -1;
  std::optional<DataType> dtype = DTypeOf(*v);
  return dtype && dtype->is_float() ? 0 : -1;
}

// Whether output k of the node has ONNX type bfloat16 (see the header for the rules).
bool OutputIsBFloat16(const NodeContext& c, int k) {
  // An explicit result type wins (EyeLike's dtype, the windows' output_datatype, ...);
  // DequantizeLinear's output_dtype 0 means "as x_scale".
  for (const char* name : {"to", "dtype", "output_dtype", "output_datatype"}) {
    const ::onnx::AttributeProto* attr = c.Attr(name);
    if (attr != nullptr && attr->has_i() && attr->i() != 0) return attr->i() == kOnnxBFloat16;
  }
  const std::string& op = c.op_type();
  int source = -1;
  if (op == "LayerNormalization" && k > 0) return c.AttrInt("stash_type", 1) == kOnnxBFloat16;
  if (op == "BatchNormalization" && k > 0) source = 3;
  if (op == "Attention" && (k == 1 || k == 2)) source = k;
  if (op == "OneHot") source = 2;
  if (op == "DequantizeLinear" || op == "CastLike") source = 1;
  if (source >= 0) return FloatInputType(c, source) == kOnnxBFloat16;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const int32_t type = FloatInputType(c, i);
    if (type >= 0) return type == kOnnxBFloat16;
  }
  return false;
}

}  // namespace

absl::Status RoundBFloat16Outputs(NodeContext& context, std::vector<Value>& outputs) {
  const NarrowType& bfloat16 = *FindNarrowType(kOnnxBFloat16);
  for (int k = 0; k < static_cast<int>(outputs.size()); ++k) {
    Value& out = outputs[k];
    if (out.narrow_type != 0 || !OutputIsBFloat16(context, k)) continue;
    std::optional<DataType> dtype = DTypeOf(out);
    if (!dtype || *dtype != DataType::Float32()) continue;
    if (!OnlyMovesElements(context.op_type())) {
      if (!out.expr.defined() && out.data && !out.data->is_external() && out.data->numel() <= kMaxShapeValueElements) {
        out = Value::OfData(RoundDataToBFloat16(*out.data));
      } else {
        relax::Expr x = out.expr.defined() ? out.expr : relax::Constant(*out.data);
        KILN_ASSIGN_OR_RETURN(relax::Expr rounded, NarrowTo(context, x, DataType::Float32(), bfloat16, false));
        out = Value::Of(rounded);
      }
    }
    out.narrow_type = kOnnxBFloat16;
  }
  return absl::OkStatus();
}

}  // namespace kiln::frontends::onnx
