#include "frontends/onnx/converters/narrowing.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "frontends/onnx/converters/common.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Emits the calls of one narrowing, all on the same node.
class Emitter {
 public:
  explicit Emitter(NodeContext& c) : c_(c) {}
  absl::StatusOr<Expr> operator()(const std::string& op, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c_.Call(op, std::move(args), std::move(attrs));
  }
  static Expr I32(double v) { return ScalarConstant(v, DataType::Int32()); }
  static Expr F32(double v) { return ScalarConstant(v, DataType::Float32()); }

 private:
  NodeContext& c_;
};

// Integers: truncate to int32, keep the low `bits`, sign-extend when signed.
absl::StatusOr<Expr> WrapToInteger(Emitter& e, Expr x, const NarrowType& type) {
  KILN_ASSIGN_OR_RETURN(Expr v, e("astype", {x}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr low, e("bitwise_and", {v, Emitter::I32((1 << type.bits) - 1)}));
  if (type.is_signed) {
    KILN_ASSIGN_OR_RETURN(Expr negative, e("greater", {low, Emitter::I32(type.max)}));
    KILN_ASSIGN_OR_RETURN(Expr shifted, e("subtract", {low, Emitter::I32(1 << type.bits)}));
    KILN_ASSIGN_OR_RETURN(low, e("where", {negative, shifted, low}));
  }
  return e("astype", {low}, {{"dtype", type.storage}});
}

// float32 -> E8M0 through the float32 bit pattern: its exponent field, rounded by the
// mantissa bits, is E8M0's code; the result is 2^(code - 127) as float32 bits.
absl::StatusOr<Expr> RoundToE8M0(Emitter& e, Expr x, bool saturate, std::string_view round_mode) {
  KILN_ASSIGN_OR_RETURN(Expr bits, e("bitcast", {x}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, e("right_shift", {bits, Emitter::I32(23)}));
  KILN_ASSIGN_OR_RETURN(Expr exponent, e("bitwise_and", {shifted, Emitter::I32(0xff)}));
  auto bit_set = [&](int mask) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr masked, e("bitwise_and", {bits, Emitter::I32(mask)}));
    return e("not_equal", {masked, Emitter::I32(0)});
  };
  Expr round_up;
  if (round_mode == "up") {
    KILN_ASSIGN_OR_RETURN(round_up, bit_set(0x7fffff));
  } else if (round_mode == "nearest") {
    // The guard bit, and then the round bit, a sticky bit or a non-zero exponent.
    KILN_ASSIGN_OR_RETURN(Expr guard, bit_set(0x400000));
    KILN_ASSIGN_OR_RETURN(Expr rest, bit_set(0x3fffff));
    KILN_ASSIGN_OR_RETURN(Expr normal, e("greater", {exponent, Emitter::I32(0)}));
    KILN_ASSIGN_OR_RETURN(Expr either, e("logical_or", {rest, normal}));
    KILN_ASSIGN_OR_RETURN(round_up, e("logical_and", {guard, either}));
  } else if (round_mode != "down") {
    return absl::InvalidArgumentError(absl::StrCat("round_mode '", std::string(round_mode), "' (must be up, down or nearest)"));
  }
  Expr code = exponent;
  if (round_up.defined()) {
    if (saturate) {
      KILN_ASSIGN_OR_RETURN(Expr below_max, e("not_equal", {exponent, Emitter::I32(0xfe)}));
      KILN_ASSIGN_OR_RETURN(round_up, e("logical_and", {round_up, below_max}));
    }
    KILN_ASSIGN_OR_RETURN(Expr one, e("astype", {round_up}, {{"dtype", DataType::Int32()}}));
    KILN_ASSIGN_OR_RETURN(Expr special, e("equal", {exponent, Emitter::I32(0xff)}));
    KILN_ASSIGN_OR_RETURN(Expr incremented, e("add", {exponent, one}));
    KILN_ASSIGN_OR_RETURN(code, e("where", {special, exponent, incremented}));
  }
  // Code 0 is 2^-127 (a float32 subnormal: bit 22), code 255 NaN, the others 2^(code-127).
  KILN_ASSIGN_OR_RETURN(Expr power_bits, e("left_shift", {code, Emitter::I32(23)}));
  KILN_ASSIGN_OR_RETURN(Expr is_nan, e("equal", {code, Emitter::I32(0xff)}));
  KILN_ASSIGN_OR_RETURN(Expr with_nan, e("where", {is_nan, Emitter::I32(0x7fc00000), power_bits}));
  KILN_ASSIGN_OR_RETURN(Expr is_zero, e("equal", {code, Emitter::I32(0)}));
  KILN_ASSIGN_OR_RETURN(Expr out_bits, e("where", {is_zero, Emitter::I32(0x400000), with_nan}));
  return e("bitcast", {out_bits}, {{"dtype", DataType::Float32()}});
}

// float32 -> a signed float8 / float4 grid: the quantum of x's binade in the target
// format, 2^(max(exponent(x), emin) - mantissa_bits), is an exact power of two built from
// x's float32 exponent field, so round(x / q) * q rounds to nearest even exactly (float32
// holds every intermediate); then the out-of-range and special values.
absl::StatusOr<Expr> RoundToFloatGrid(Emitter& e, Expr x, const NarrowType& type, bool saturate) {
  KILN_ASSIGN_OR_RETURN(Expr bits, e("bitcast", {x}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, e("right_shift", {bits, Emitter::I32(23)}));
  KILN_ASSIGN_OR_RETURN(Expr exponent, e("bitwise_and", {shifted, Emitter::I32(0xff)}));
  // The biased float32 exponent of the target's smallest normal value.
  const int min_normal_exponent = 1 - type.bias + 127;
  KILN_ASSIGN_OR_RETURN(Expr binade, e("maximum", {exponent, Emitter::I32(min_normal_exponent)}));
  KILN_ASSIGN_OR_RETURN(Expr quantum_exponent, e("subtract", {binade, Emitter::I32(type.mantissa_bits)}));
  KILN_ASSIGN_OR_RETURN(Expr quantum_bits, e("left_shift", {quantum_exponent, Emitter::I32(23)}));
  KILN_ASSIGN_OR_RETURN(Expr quantum, e("bitcast", {quantum_bits}, {{"dtype", DataType::Float32()}}));
  KILN_ASSIGN_OR_RETURN(Expr steps, e("divide", {x, quantum}));
  KILN_ASSIGN_OR_RETURN(Expr rounded_steps, e("round", {steps}));
  KILN_ASSIGN_OR_RETURN(Expr r, e("multiply", {rounded_steps, quantum}));

  KILN_ASSIGN_OR_RETURN(Expr magnitude, e("abs", {r}));
  KILN_ASSIGN_OR_RETURN(Expr overflow, e("greater", {magnitude, Emitter::F32(type.max)}));
  KILN_ASSIGN_OR_RETURN(Expr positive, e("greater", {r, Emitter::F32(0)}));
  const double inf = std::numeric_limits<double>::infinity();
  Expr replacement;
  if (saturate || !type.has_nan) {
    KILN_ASSIGN_OR_RETURN(replacement, e("where", {positive, Emitter::F32(type.max), Emitter::F32(-type.max)}));
  } else if (type.has_inf) {
    KILN_ASSIGN_OR_RETURN(replacement, e("where", {positive, Emitter::F32(inf), Emitter::F32(-inf)}));
  } else {
    replacement = Emitter::F32(std::numeric_limits<double>::quiet_NaN());
  }
  KILN_ASSIGN_OR_RETURN(r, e("where", {overflow, replacement, r}));
  if (!type.has_nan) {
    KILN_ASSIGN_OR_RETURN(Expr nan, e("isnan", {r}));
    KILN_ASSIGN_OR_RETURN(r, e("where", {nan, Emitter::F32(0), r}));
  }
  if (type.fnuz) {
    KILN_ASSIGN_OR_RETURN(Expr zero, e("equal", {r, Emitter::F32(0)}));
    KILN_ASSIGN_OR_RETURN(r, e("where", {zero, Emitter::F32(0), r}));
  }
  return r;
}

// float32 -> bfloat16 on the bit pattern: adding 0x7fff plus the lowest kept bit carries
// into the kept half exactly when rounding to nearest even rounds up (a carry out of the
// mantissa moves to the next binade, out of the largest one to infinity). In int32 the sum
// cannot overflow except for positive NaNs, which add nothing.
absl::StatusOr<Expr> RoundToBFloat16(Emitter& e, Expr x) {
  KILN_ASSIGN_OR_RETURN(Expr bits, e("bitcast", {x}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, e("right_shift", {bits, Emitter::I32(16)}));
  KILN_ASSIGN_OR_RETURN(Expr kept_lsb, e("bitwise_and", {shifted, Emitter::I32(1)}));
  KILN_ASSIGN_OR_RETURN(Expr bias, e("add", {kept_lsb, Emitter::I32(0x7fff)}));
  KILN_ASSIGN_OR_RETURN(Expr nan, e("isnan", {x}));
  KILN_ASSIGN_OR_RETURN(Expr no_bias, e("where", {nan, Emitter::I32(0), bias}));
  KILN_ASSIGN_OR_RETURN(Expr sum, e("add", {bits, no_bias}));
  KILN_ASSIGN_OR_RETURN(Expr kept, e("bitwise_and", {sum, Emitter::I32(static_cast<int32_t>(0xffff0000u))}));
  KILN_ASSIGN_OR_RETURN(Expr rounded, e("bitcast", {kept}, {{"dtype", DataType::Float32()}}));
  // Clearing a NaN's low bits could leave infinity's pattern: NaN stays x.
  return e("where", {nan, x, rounded});
}

float RoundFloatToBFloat16(float f) {
  if (std::isnan(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

relax::ConstantData RoundDataToBFloat16(const relax::ConstantData& data) {
  std::vector<double> values;
  values.reserve(static_cast<size_t>(data.numel()));
  for (int64_t i = 0; i < data.numel(); ++i) {
    values.push_back(RoundFloatToBFloat16(static_cast<float>(ElementAsDouble(data, i))));
  }
  return DataFromDoubles(values, DataType::Float32(), data.shape);
}

absl::StatusOr<Expr> NarrowTo(NodeContext& context, Expr x, DataType x_dtype, const NarrowType& type, bool saturate,
                              std::string_view round_mode) {
  Emitter e(context);
  if (!type.is_float) return WrapToInteger(e, std::move(x), type);
  if (x_dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(x, e("astype", {x}, {{"dtype", DataType::Float32()}}));
  }
  if (type.onnx_type == kOnnxBFloat16) return RoundToBFloat16(e, std::move(x));
  if (type.onnx_type == kOnnxFloat8E8M0) {
    absl::StatusOr<Expr> out = RoundToE8M0(e, std::move(x), saturate, round_mode);
    if (!out.ok() && absl::IsInvalidArgument(out.status())) return context.Error(out.status().message());
    return out;
  }
  return RoundToFloatGrid(e, std::move(x), type, saturate);
}

}  // namespace kiln::frontends::onnx
