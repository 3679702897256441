// CausalConvWithState (opset 27): the stateful causal depthwise 1-D convolution of Mamba and
// Gated DeltaNet, as the Concat + Conv + Slice it fuses:
//   padded        = concat(past_state or k - 1 zeros, input) along the length    (B, C, k - 1 + L)
//   output        = conv1d(padded, weight, groups = C, no padding) + bias         (B, C, L)
//                   then SiLU (activation 'silu' or its alias 'swish'), computed in float32
//                   from the convolution's rounded result, as ONNX's reference does
//   present_state = the last k - 1 positions of padded                           (B, C, k - 1)
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

absl::StatusOr<std::vector<Value>> ConvertCausalConvWithState(NodeContext& c) {
  const std::string activation = c.AttrString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return c.Error("activation '", activation, "' is not none, silu or swish");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ws, c.InputShape(1));
  if (in.size() != 3) return c.Error("input must be 3-D (batch, channels, length), got ", in.size(), " dims");
  if (ws.size() != 3) return c.Error("weight must be 3-D (channels, 1, k), got ", ws.size(), " dims");
  const int64_t channels = StaticDim(in[1]), length = StaticDim(in[2]), k = StaticDim(ws[2]);
  if (channels < 0 || length < 0 || k < 0) return c.Unsupported("needs static channels, length and kernel size");
  if (StaticDim(ws[0]) != channels || StaticDim(ws[1]) != 1 || k < 1) {
    return c.Error("weight must have shape (", channels, ", 1, k) with k >= 1");
  }
  const PrimExpr batch = in[0];
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  const std::vector<PrimExpr> state_shape = {batch, PrimExpr(channels), PrimExpr(k - 1)};
  Expr past;
  if (c.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ps, c.InputShape(3));
    if (ps.size() != 3 || StaticDim(ps[1]) != channels || StaticDim(ps[2]) != k - 1) {
      return c.Error("past_state must have shape (batch, ", channels, ", ", k - 1, ")");
    }
    KILN_ASSIGN_OR_RETURN(past, c.Input(3));
  } else {
    KILN_ASSIGN_OR_RETURN(past, c.Call("full", {relax::ShapeExpr(state_shape), ScalarConstant(0, dtype)},
                                       {{"dtype", dtype}}));
  }
  Expr padded = x;
  if (k > 1) {
    KILN_ASSIGN_OR_RETURN(padded, c.Call("concat", {relax::Tuple({past, x})}, {{"axis", int64_t{2}}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr weight, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("conv1d", {padded, weight},
                                       {{"strides", std::vector<int64_t>{1}},
                                        {"padding", std::vector<int64_t>{0, 0}},
                                        {"dilation", std::vector<int64_t>{1}},
                                        {"groups", channels}}));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bs, c.InputShape(2));
    if (bs.size() != 1 || StaticDim(bs[0]) != channels) return c.Error("bias must have shape (", channels, ")");
    KILN_ASSIGN_OR_RETURN(Expr bias, c.Input(2));
    KILN_ASSIGN_OR_RETURN(bias, Reshape(c, bias, {PrimExpr(channels), PrimExpr(int64_t{1})}));
    KILN_ASSIGN_OR_RETURN(y, c.Call("add", {y, bias}));
  }
  if (activation != "none") {
    const bool widen = dtype != DataType::Float32() && dtype != DataType::Float(64);
    if (widen) {
      KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", DataType::Float32()}}));
    }
    KILN_ASSIGN_OR_RETURN(y, c.Call("silu", {y}));
    if (widen) {
      KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", dtype}}));
    }
  }
  // The last k - 1 positions of padded (an empty state for k = 1).
  KILN_ASSIGN_OR_RETURN(Expr present, c.Call("strided_slice", {padded},
                                             {{"begin", std::vector<int64_t>{length}},
                                              {"end", std::vector<int64_t>{length + k - 1}},
                                              {"axes", std::vector<int64_t>{2}},
                                              {"strides", std::vector<int64_t>{1}}}));
  std::vector<Value> out = {Value::Of(y), Value::Of(present)};
  // present_state only moves input elements: it keeps a narrow type (narrow_types.h).
  if (const Value* input = c.InputValue(0)) out[1].narrow_type = input->narrow_type;
  return out;
}

}  // namespace

void RegisterCausalConvConverters(ConverterRegistry& r) {
  r.Register("CausalConvWithState", ConvertCausalConvWithState, 27);
}

}  // namespace kiln::frontends::onnx
