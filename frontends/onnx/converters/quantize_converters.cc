// Linear quantization: QuantizeLinear, DequantizeLinear (10; per-axis from 13, float8 from 19,
// blocked, int4 / uint4, output_dtype from 21, int2 / float4 later), DynamicQuantizeLinear (11)
// QLinearMatMul and MatMulInteger (10), as their ONNX reference (onnx.reference.ops) computes them:
//   QuantizeLinear   y = clip(rint(x / scale) + zero_point, type's range)  (integer types)
//                    y = cast(x / scale, type, saturate)                   (float8; the zero point is 0)
//   DequantizeLinear y = (float32(x) - float32(zero_point)) * scale, in float32, cast to scale's type
// A scale / zero point is a scalar (per tensor), a 1-D tensor along `axis` (per axis) or,
// with block_size, x's shape with dim `axis` divided into blocks of block_size elements.
// The narrow types (float8, float4, int4, int2) are held widened (narrow_types.h).
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/converters/narrowing.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;
namespace TP = ::onnx;

// Input i's ONNX element type (a narrow type's own number, not its storage).
absl::StatusOr<int32_t> OnnxTypeOfInput(NodeContext& c, int i) {
  const Value* v = c.InputValue(i);
  if (v != nullptr && v->narrow_type != 0) return v->narrow_type;
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(i));
  return OnnxDataTypeOf(dtype);
}

// Input `param` (a scale or zero point) shaped to broadcast against x of `x_shape`.
absl::StatusOr<Expr> BroadcastParam(NodeContext& c, int param, const std::vector<PrimExpr>& x_shape, int64_t axis,
                                    int64_t block_size) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(param));
  KILN_ASSIGN_OR_RETURN(Expr value, c.Input(param));
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  if (shape.empty()) return value;
  std::vector<int64_t> dims;
  if (!AllConstant(shape, &dims)) {
    return c.Unsupported("input '", c.input_name(param), "' has a shape known only at run time");
  }
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  if (numel == 1 && block_size == 0) return Reshape(c, value, {});
  KILN_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(c, axis, rank));
  if (block_size <= 0) {
    if (dims.size() != 1) {
      return c.Error("input '", c.input_name(param), "' must be a scalar or 1-D (per axis) without block_size");
    }
    std::vector<PrimExpr> target(rank, PrimExpr(1));
    target[a] = PrimExpr(dims[0]);
    return Reshape(c, value, target);
  }
  // Blocked: element i along the axis uses block i / block_size.
  std::vector<int64_t> extent;
  if (static_cast<int64_t>(dims.size()) != rank || !AllConstant({x_shape[a]}, &extent)) {
    return c.Error("blocked input '", c.input_name(param), "' must have the rank of x and x a static dim ", a);
  }
  const int64_t blocks = (extent[0] + block_size - 1) / block_size;
  if (dims[a] != blocks) {
    return c.Error("input '", c.input_name(param), "' has ", dims[a], " blocks along axis ", a, ", x needs ", blocks,
                   " of ", block_size);
  }
  std::vector<int64_t> index(extent[0]);
  for (int64_t i = 0; i < extent[0]; ++i) index[i] = i / block_size;
  return c.Call("take", {value, relax::Constant(IntData(index, DataType::Int64(), {extent[0]}))}, {{"axis", a}});
}

// The integer range of a quantized integer type, or false.
bool IntegerRange(int32_t onnx_type, double* lo, double* hi) {
  if (const NarrowType* narrow = FindNarrowType(onnx_type); narrow != nullptr && !narrow->is_float) {
    *lo = narrow->min;
    *hi = narrow->max;
    return true;
  }
  switch (onnx_type) {
    case TP::TensorProto::UINT8: *lo = 0, *hi = 255; return true;
    case TP::TensorProto::INT8: *lo = -128, *hi = 127; return true;
    case TP::TensorProto::UINT16: *lo = 0, *hi = 65535; return true;
    case TP::TensorProto::INT16: *lo = -32768, *hi = 32767; return true;
    default: return false;
  }
}

Value Tagged(Expr e, int32_t onnx_type) {
  Value v = Value::Of(std::move(e));
  if (FindNarrowType(onnx_type) != nullptr) v.narrow_type = onnx_type;
  return v;
}

// rint(q) (+ zero_point), clamped to [lo, hi], as `storage`.
absl::StatusOr<Expr> RoundAndClamp(NodeContext& c, Expr q, const Expr* zero_point, double lo, double hi,
                                   DataType storage) {
  KILN_ASSIGN_OR_RETURN(Expr r, c.Call("round", {q}));
  KILN_ASSIGN_OR_RETURN(Expr ri, c.Call("astype", {r}, {{"dtype", DataType::Int32()}}));
  if (zero_point != nullptr) {
    KILN_ASSIGN_OR_RETURN(Expr zp, c.Call("astype", {*zero_point}, {{"dtype", DataType::Int32()}}));
    KILN_ASSIGN_OR_RETURN(ri, c.Call("add", {ri, zp}));
  }
  KILN_ASSIGN_OR_RETURN(ri, c.Call("maximum", {ri, ScalarConstant(lo, DataType::Int32())}));
  KILN_ASSIGN_OR_RETURN(ri, c.Call("minimum", {ri, ScalarConstant(hi, DataType::Int32())}));
  return c.Call("astype", {ri}, {{"dtype", storage}});
}

absl::StatusOr<std::vector<Value>> ConvertQuantizeLinear(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> x_shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType x_dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(DataType scale_dtype, c.InputDType(1));
  const int64_t axis = c.AttrInt("axis", 1), block_size = c.AttrInt("block_size", 0);
  int32_t out_type = static_cast<int32_t>(c.AttrInt("output_dtype", 0));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(int32_t zp_type, OnnxTypeOfInput(c, 2));
    if (out_type != 0 && out_type != zp_type) {
      return c.Error("output_dtype ", OnnxDataTypeName(out_type), " differs from the zero point's type ",
                     OnnxDataTypeName(zp_type));
    }
    out_type = zp_type;
  }
  if (out_type == 0) out_type = TP::TensorProto::UINT8;
  const NarrowType* narrow = FindNarrowType(out_type);
  double lo = 0, hi = 0;
  const bool integer = IntegerRange(out_type, &lo, &hi);
  if (!integer && (narrow == nullptr || narrow->onnx_type == kOnnxFloat8E8M0)) {
    return c.Unsupported("quantizing to ", OnnxDataTypeName(out_type), " is not supported");
  }
  // x / scale in x's type as the reference (numpy) does, in `precision` when given, in
  // float32 when the two types differ.
  DataType compute = x_dtype;
  if (const int64_t precision = c.AttrInt("precision", 0); precision != 0) {
    KILN_ASSIGN_OR_RETURN(compute, DataTypeFromOnnx(static_cast<int32_t>(precision)));
  } else if (scale_dtype != x_dtype) {
    compute = DataType::Float32();
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, BroadcastParam(c, 1, x_shape, axis, block_size));
  if (x_dtype != compute) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("astype", {x}, {{"dtype", compute}}));
  }
  if (scale_dtype != compute) {
    KILN_ASSIGN_OR_RETURN(scale, c.Call("astype", {scale}, {{"dtype", compute}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr q, c.Call("divide", {x, scale}));
  Expr zero_point;
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(zero_point, BroadcastParam(c, 2, x_shape, axis, block_size));
  }
  if (integer) {
    KILN_ASSIGN_OR_RETURN(DataType storage, DataTypeFromOnnx(out_type));
    KILN_ASSIGN_OR_RETURN(Expr y, RoundAndClamp(c, q, zero_point.defined() ? &zero_point : nullptr, lo, hi, storage));
    return std::vector<Value>{Tagged(y, out_type)};
  }
  // float4 adds its zero point (a float4 value) before rounding; float8's must be zero.
  if (narrow->onnx_type == kOnnxFloat4E2M1 && zero_point.defined()) {
    KILN_ASSIGN_OR_RETURN(Expr zp, c.Call("astype", {zero_point}, {{"dtype", compute}}));
    KILN_ASSIGN_OR_RETURN(q, c.Call("add", {q, zp}));
  }
  const bool saturate = c.AttrInt("saturate", 1) != 0;
  KILN_ASSIGN_OR_RETURN(Expr y, NarrowTo(c, q, compute, *narrow, saturate));
  return std::vector<Value>{Tagged(y, out_type)};
}

absl::StatusOr<std::vector<Value>> ConvertDequantizeLinear(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> x_shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(int32_t x_type, OnnxTypeOfInput(c, 0));
  KILN_ASSIGN_OR_RETURN(DataType scale_dtype, c.InputDType(1));
  const int64_t axis = c.AttrInt("axis", 1), block_size = c.AttrInt("block_size", 0);
  DataType out_dtype = scale_dtype;
  if (const int64_t output_dtype = c.AttrInt("output_dtype", 0); output_dtype != 0) {
    KILN_ASSIGN_OR_RETURN(out_dtype, DataTypeFromOnnx(static_cast<int32_t>(output_dtype)));
  }
  const NarrowType* narrow = FindNarrowType(x_type);
  const bool float_input = narrow != nullptr && narrow->is_float;
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr dx, c.Call("astype", {x}, {{"dtype", DataType::Float32()}}));
  // The float types' zero point is zero (ONNX requires it); the reference ignores it.
  if (c.has_input(2) && !float_input) {
    KILN_ASSIGN_OR_RETURN(Expr zp, BroadcastParam(c, 2, x_shape, axis, block_size));
    KILN_ASSIGN_OR_RETURN(zp, c.Call("astype", {zp}, {{"dtype", DataType::Float32()}}));
    KILN_ASSIGN_OR_RETURN(dx, c.Call("subtract", {dx, zp}));
  }
  KILN_ASSIGN_OR_RETURN(Expr scale, BroadcastParam(c, 1, x_shape, axis, block_size));
  if (scale_dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(scale, c.Call("astype", {scale}, {{"dtype", DataType::Float32()}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("multiply", {dx, scale}));
  if (out_dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", out_dtype}}));
  }
  return Outputs(y);
}

// DynamicQuantizeLinear: uint8 with the scale and zero point that map [min(x, 0), max(x, 0)]
// onto [0, 255].
absl::StatusOr<std::vector<Value>> ConvertDynamicQuantizeLinear(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType x_dtype, c.InputDType(0));
  if (x_dtype != DataType::Float32()) return c.Unsupported("x of type ", x_dtype.ToString(), " (only float32)");
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  const Expr zero = ScalarConstant(0, DataType::Float32());
  KILN_ASSIGN_OR_RETURN(Expr x_max, c.Call("max", {x}));
  KILN_ASSIGN_OR_RETURN(Expr x_min, c.Call("min", {x}));
  KILN_ASSIGN_OR_RETURN(x_max, c.Call("maximum", {x_max, zero}));
  KILN_ASSIGN_OR_RETURN(x_min, c.Call("minimum", {x_min, zero}));
  KILN_ASSIGN_OR_RETURN(Expr range, c.Call("subtract", {x_max, x_min}));
  // A tensor of zeros has range 0: the reference uses 1 then.
  KILN_ASSIGN_OR_RETURN(Expr empty, c.Call("equal", {range, zero}));
  KILN_ASSIGN_OR_RETURN(range, c.Call("where", {empty, ScalarConstant(1, DataType::Float32()), range}));
  KILN_ASSIGN_OR_RETURN(Expr scale, c.Call("divide", {range, ScalarConstant(255, DataType::Float32())}));
  KILN_ASSIGN_OR_RETURN(Expr min_over_scale, c.Call("divide", {x_min, scale}));
  KILN_ASSIGN_OR_RETURN(Expr initial, c.Call("negative", {min_over_scale}));
  KILN_ASSIGN_OR_RETURN(initial, c.Call("maximum", {initial, zero}));
  KILN_ASSIGN_OR_RETURN(initial, c.Call("minimum", {initial, ScalarConstant(255, DataType::Float32())}));
  KILN_ASSIGN_OR_RETURN(Expr zp, c.Call("round", {initial}));
  KILN_ASSIGN_OR_RETURN(Expr q, c.Call("divide", {x, scale}));
  KILN_ASSIGN_OR_RETURN(Expr y, RoundAndClamp(c, q, &zp, 0, 255, DataType::UInt(8)));
  KILN_ASSIGN_OR_RETURN(Expr zp_u8, c.Call("astype", {zp}, {{"dtype", DataType::UInt(8)}}));
  return std::vector<Value>{Value::Of(y), Value::Of(scale), Value::Of(zp_u8)};
}

// Input `value` minus input `zero_point` (when present) in float64, where integer products
// stay exact; a 1-D zero point is per row of a matrix when `per_row` (A's of MatMulInteger),
// else it broadcasts along the last dim (B's columns).
absl::StatusOr<Expr> ShiftedByZeroPoint(NodeContext& c, int value, int zero_point, bool per_row) {
  const DataType f64 = DataType::Float(64);
  KILN_ASSIGN_OR_RETURN(Expr v, c.Input(value));
  KILN_ASSIGN_OR_RETURN(v, c.Call("astype", {v}, {{"dtype", f64}}));
  if (!c.has_input(zero_point)) return v;
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> zp_shape, c.InputShape(zero_point));
  KILN_ASSIGN_OR_RETURN(Expr zp, c.Input(zero_point));
  KILN_ASSIGN_OR_RETURN(zp, c.Call("astype", {zp}, {{"dtype", f64}}));
  if (per_row && zp_shape.size() == 1) {
    KILN_ASSIGN_OR_RETURN(zp, Reshape(c, zp, {zp_shape[0], PrimExpr(1)}));
  } else if (zp_shape.size() > 1) {
    return c.Unsupported("zero point '", c.input_name(zero_point), "' of rank ", zp_shape.size());
  }
  return c.Call("subtract", {v, zp});
}

// QLinearMatMul: the int32 product of the zero-point-shifted operands (computed in float64,
// exact for 8-bit operands), times a_scale * b_scale / y_scale, requantized to y's type.
absl::StatusOr<std::vector<Value>> ConvertQLinearMatMul(NodeContext& c) {
  for (int i : {1, 4, 6}) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(i));
    std::vector<int64_t> dims;
    int64_t numel = 1;
    if (!AllConstant(shape, &dims)) return c.Unsupported("scale '", c.input_name(i), "' of run-time shape");
    for (int64_t d : dims) numel *= d;
    if (numel != 1) return c.Unsupported("per-axis scale '", c.input_name(i), "' (only per tensor)");
  }
  const DataType f64 = DataType::Float(64);
  KILN_ASSIGN_OR_RETURN(Expr a, ShiftedByZeroPoint(c, 0, 2, false));
  KILN_ASSIGN_OR_RETURN(Expr b, ShiftedByZeroPoint(c, 3, 5, false));
  KILN_ASSIGN_OR_RETURN(Expr product, c.Call("matmul", {a, b}));
  // The scale product in the scales' own type, as the reference computes it.
  KILN_ASSIGN_OR_RETURN(Expr a_scale, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr b_scale, c.Input(4));
  KILN_ASSIGN_OR_RETURN(Expr y_scale, c.Input(6));
  KILN_ASSIGN_OR_RETURN(Expr ab, c.Call("multiply", {a_scale, b_scale}));
  KILN_ASSIGN_OR_RETURN(Expr factor, c.Call("divide", {ab, y_scale}));
  KILN_ASSIGN_OR_RETURN(factor, c.Call("astype", {factor}, {{"dtype", f64}}));
  KILN_ASSIGN_OR_RETURN(Expr d, c.Call("multiply", {product, factor}));
  KILN_ASSIGN_OR_RETURN(DataType y_dtype, c.has_input(7) ? c.InputDType(7) : c.InputDType(0));
  if (c.has_input(7)) {
    KILN_ASSIGN_OR_RETURN(Expr zp, c.Input(7));
    KILN_ASSIGN_OR_RETURN(zp, c.Call("astype", {zp}, {{"dtype", f64}}));
    KILN_ASSIGN_OR_RETURN(d, c.Call("add", {d, zp}));
  }
  double lo = 0, hi = 0;
  if (!IntegerRange(OnnxDataTypeOf(y_dtype), &lo, &hi)) {
    return c.Unsupported("a result of type ", y_dtype.ToString(), " (int8 or uint8 only)");
  }
  KILN_ASSIGN_OR_RETURN(Expr r, c.Call("round", {d}));
  KILN_ASSIGN_OR_RETURN(r, c.Call("maximum", {r, ScalarConstant(lo, f64)}));
  KILN_ASSIGN_OR_RETURN(r, c.Call("minimum", {r, ScalarConstant(hi, f64)}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("astype", {r}, {{"dtype", y_dtype}}));
  return Outputs(y);
}

// MatMulInteger (10): (A - a_zero_point) @ (B - b_zero_point) as int32; a per-row zero
// point of A is 1-D (M), a per-column one of B 1-D (N). The product is computed in float64,
// exact for 8-bit operands.
absl::StatusOr<std::vector<Value>> ConvertMatMulInteger(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Expr a, ShiftedByZeroPoint(c, 0, 2, true));
  KILN_ASSIGN_OR_RETURN(Expr b, ShiftedByZeroPoint(c, 1, 3, false));
  KILN_ASSIGN_OR_RETURN(Expr product, c.Call("matmul", {a, b}));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("astype", {product}, {{"dtype", DataType::Int32()}}));
  return Outputs(y);
}

}  // namespace

void RegisterQuantizeConverters(ConverterRegistry& r) {
  r.Register("QuantizeLinear", ConvertQuantizeLinear, 10);
  r.Register("DequantizeLinear", ConvertDequantizeLinear, 10);
  r.Register("DynamicQuantizeLinear", ConvertDynamicQuantizeLinear, 11);
  r.Register("QLinearMatMul", ConvertQLinearMatMul, 10);
  r.Register("MatMulInteger", ConvertMatMulInteger, 10);
}

}  // namespace kiln::frontends::onnx
