// Quantized weights.
//
// dequantize (data: Tensor((d0, ..., dk), uint8)), attributes format (string, required) and
//   dtype (float32, the default, or float16). `data` holds blocks of GGML's formats, whole
//   blocks along the last dim, which must be a constant multiple of the block's size:
//     "q4_0": 18 bytes, the scale d as a little-endian float16, then 16 bytes of 4-bit
//             quants: byte j holds weight j in its low nibble and weight j + 16 in its high
//             nibble; weight = (q - 8) * d.
//     "q4_1": 20 bytes, d, then a float16 minimum m, then 16 bytes of nibbles as q4_0;
//             weight = q * d + m.
//     "q8_0": 34 bytes, d as above, then 32 int8 quants; weight = q * d.
//     "q5_0": 22 bytes, d, a little-endian uint32 whose bit j is weight j's fifth bit, then
//             16 bytes of nibbles as q4_0; weight = (q - 16) * d.
//     "q5_1": 24 bytes, d, m, the fifth bits and nibbles as q5_0; weight = q * d + m.
//     "q4_K", "q5_K", "q6_K": super-blocks of 256 weights in 144, 176 and 210 bytes with 6-bit
//             (q4_K, q5_K: scale and min per 32) or int8 (q6_K: scale per 16) sub-scales,
//             laid out as builtins/kquant_block_dot.h states; weight = (d * scale) * q -
//             dmin * min (q4_K, q5_K) or (d * scale) * (q - 32) (q6_K).
//     "q2_K": super-blocks of 256 weights in 84 bytes: 16 bytes of 4-bit scales (low nibble)
//             and mins (high nibble), one per 16 weights, 64 bytes of 2-bit quants (weight
//             128n + 32j + l has bits 2j of byte 16 + 32n + l), d, dmin; weight = (d * scale)
//             * q - dmin * min.
//     "q3_K": super-blocks of 256 weights in 110 bytes: 32 bytes of high bits (weight 128n +
//             32j + l has bit 4n + j of byte l), 64 bytes of 2-bit lows (bits 2j of byte 32n
//             + l), 12 bytes of sixteen 6-bit scales (scale i: low nibble of byte i % 8 at bit
//             4 * (i / 8), top bits 2 * (i / 4) of byte 8 + i % 4), d last; q = low - 4 when
//             the high bit is clear, weight = (d * (scale - 32)) * q, the scale per 16.
//     "iq4_nl": 18 bytes, d, then 16 bytes of nibbles as q4_0; weight = d * v[q], v the
//             16-value table of builtins/q8_block_dot.h (kIq4NlValues).
//     "iq4_xs": super-blocks of 256 weights in 136 bytes: d, a little-endian uint16 of high
//             scale bits, 4 bytes of low scale nibbles, then per group g of 32 16 bytes of
//             nibbles as iq4_nl's; scale(g) = (low nibble g | 2 high bits g << 4) - 32,
//             weight = (d * scale) * v[q] (builtins/kquant_block_dot.h).
//   Result: Tensor((d0, ..., dk / block_bytes * block_weights), dtype): each block's weights
//   in order, computed in float32 (each product and difference rounded once, no fused
//   operations: the values of ggml's dequantize_row_*) and rounded once more to dtype.
//   The legalization (legalize_quantize.cc) is never constant-folded: dequantizing constant
//   weights at compile time would store them 3.5 to 7 times larger.
//
// quantized_matmul (x: Tensor((d0, ..., k), float32), w: Tensor((n, k / block_weights * block_bytes),
//   uint8)), attribute format as dequantize's. `w` is a weight matrix stored as GGML stores
//   it: row j holds output column j's k weights as blocks. Result: Tensor((d0, ..., n),
//   float32) = x @ dequantize(w)^T, accumulated in float32. k must be a multiple of the block and
//   w's last dim exactly its blocks' bytes (checked at compile time; k may be symbolic only
//   if w's is known). The legalization decodes the blocks inside the reduction: the weights
//   stay quantized in memory. Attribute activations: "float32" (the default: x as it is) or
//   "q8": x quantized per block of 32 to 8 bits first and the blocks' integer dot products
//   combined in llama.cpp's order (legalize_quantized_matmul_q8.cc; on the CPU the library
//   kernels compute the same floats), whose result differs from float32's by the
//   quantization error of x (about 0.4 % of a block's largest |x| per element). Attribute
//   summation (optional): how the CPU library kernel with 8-bit activations
//   (relax/transform/dispatch_libraries.h) orders its sums, which moves only the last bits
//   of the result: "lanes" (the default, llama.cpp's vec_dot), "blocks" (llama.cpp's
//   repacked Q4_0, Q4_K, Q2_K and IQ4_NL kernels; q4_0, q8_0, q4_K, q2_K and iq4_nl only;
//   llama.cpp repacks Q2_K only in its AVX-512 build, so with the AVX2 arithmetic of
//   builtins/ggml_simd.h q2_K takes "tiles" instead) or "tiles" (llama.cpp's tiled K-quant
//   matmul for calls of 8 or more rows, vec_dot's for fewer; q2_K, q3_K, q4_K, q5_K, q6_K and
//   iq4_xs only). The generated kernels sum in "lanes" order.
#include "relax/op/quantize.h"

#include <variant>

#include "relax/op/legalize_quantized_matmul_q8.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {

namespace {

const QuantFormat kFormats[] = {
    {"q4_0", 18, 32}, {"q4_1", 20, 32}, {"q8_0", 34, 32},   {"q5_0", 22, 32},
    {"q5_1", 24, 32}, {"q4_K", 144, 256}, {"q5_K", 176, 256}, {"q6_K", 210, 256},
    {"q3_K", 110, 256}, {"iq4_nl", 18, 32},   {"iq4_xs", 136, 256}, {"q2_K", 84, 256},
};

}  // namespace

const char* QuantFormatNames() {
  return "\"q4_0\", \"q4_1\", \"q8_0\", \"q5_0\", \"q5_1\", \"q2_K\", \"q3_K\", \"q4_K\", \"q5_K\", \"q6_K\", \"iq4_nl\" or \"iq4_xs\"";
}

absl::StatusOr<QuantFormat> QuantFormatAttr(const CallNode& call) {
  auto it = call.attrs.find("format");
  if (it == call.attrs.end()) return OpError(call, "missing attribute format (", QuantFormatNames(), ")");
  const auto* name = std::get_if<std::string>(&it->second);
  for (const QuantFormat& format : kFormats) {
    if (name != nullptr && *name == format.name) return format;
  }
  return OpError(call, "attribute format must be ", QuantFormatNames());
}

namespace {

absl::StatusOr<StructInfo> InferDequantize(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(QuantFormat format, QuantFormatAttr(call));
  KILN_ASSIGN_OR_RETURN(std::optional<DataType> dtype_attr, DTypeAttr(call, "dtype"));
  const DataType dtype = dtype_attr.value_or(DataType::Float32());
  if (dtype != DataType::Float32() && dtype != DataType::Float(16)) {
    return OpError(call, "dtype must be float32 or float16, got ", dtype.ToString());
  }
  if (data->dtype && *data->dtype != DataType::UInt(8)) {
    return OpError(call, "data must be uint8 (the blocks' bytes), got ", data->dtype->ToString());
  }
  if (!data->shape) {
    if (data->ndim == 0) return OpError(call, "data must have at least one dim");
    return TensorSInfoOfNdim(data->ndim, dtype, data->device);
  }
  std::vector<PrimExpr> shape = *data->shape;
  if (shape.empty()) return OpError(call, "data must have at least one dim");
  std::optional<int64_t> bytes = shape.back().as_int();
  if (!bytes || *bytes % format.block_bytes != 0) {
    return OpError(call, "the last dim of data (", DimStr(shape.back()), ") must be a constant multiple of ",
                   format.block_bytes, ", the bytes of a ", format.name, " block");
  }
  shape.back() = Int(*bytes / format.block_bytes * format.block_weights);
  return TensorSInfo(SimplifyDims(std::move(shape), analyzer), dtype, data->device);
}

absl::StatusOr<StructInfo> InferQuantizedMatmul(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0, "x"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* w, TensorArg(call, 1, "w"));
  KILN_ASSIGN_OR_RETURN(QuantFormat format, QuantFormatAttr(call));
  KILN_RETURN_IF_ERROR(QuantizedMatmulQ8Activations(call).status());
  if (auto it = call.attrs.find("summation"); it != call.attrs.end()) {
    const auto* summation = std::get_if<std::string>(&it->second);
    if (summation == nullptr || (*summation != "lanes" && *summation != "blocks" && *summation != "tiles")) {
      return OpError(call, "attribute summation must be \"lanes\", \"blocks\" or \"tiles\"");
    }
    const std::string name = format.name;
    if (*summation == "blocks" && name != "q4_0" && name != "q8_0" && name != "q4_K" && name != "q2_K" &&
        name != "iq4_nl") {
      return OpError(call, "summation \"blocks\" is for q4_0, q8_0, q4_K, q2_K and iq4_nl weights, not ", name);
    }
    if (*summation == "tiles" && name != "q2_K" && name != "q3_K" && name != "q4_K" && name != "q5_K" && name != "q6_K" &&
        name != "iq4_xs") {
      return OpError(call, "summation \"tiles\" is for q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs weights, not ", name);
    }
  }
  if (x->dtype && *x->dtype != DataType::Float32()) {
    return OpError(call, "x must be float32, got ", x->dtype->ToString());
  }
  if (w->dtype && *w->dtype != DataType::UInt(8)) {
    return OpError(call, "w must be uint8 (the blocks' bytes), got ", w->dtype->ToString());
  }
  if (w->ndim != -1 && w->ndim != 2) return OpError(call, "w must have 2 dims, got ", w->ndim);
  if (x->ndim == 0) return OpError(call, "x must have at least one dim");
  if (!x->shape || !w->shape) {
    return TensorSInfoOfNdim(x->ndim, DataType::Float32(), x->device);
  }
  const std::vector<PrimExpr>& xs = *x->shape;
  const std::vector<PrimExpr>& ws = *w->shape;
  std::optional<int64_t> row_bytes = ws[1].as_int();
  if (!row_bytes || *row_bytes % format.block_bytes != 0) {
    return OpError(call, "the last dim of w (", DimStr(ws[1]), ") must be a constant multiple of ",
                   format.block_bytes, ", the bytes of a ", format.name, " block");
  }
  const int64_t k = *row_bytes / format.block_bytes * format.block_weights;
  if (DimsDiffer(xs.back(), Int(k), analyzer) || !DimsEqual(xs.back(), Int(k), analyzer)) {
    return OpError(call, "the last dim of x (", DimStr(xs.back()), ") must equal the ", k,
                   " weights of each row of w (", *row_bytes, " bytes of ", format.name, " blocks)");
  }
  std::vector<PrimExpr> shape(xs.begin(), xs.end() - 1);
  shape.push_back(ws[0]);
  return TensorSInfo(SimplifyDims(std::move(shape), analyzer), DataType::Float32(), x->device);
}

}  // namespace

void RegisterQuantizeOps(OpRegistry& registry) {
  registry.Register(OpInfo{"dequantize", 1, 1, true, {"format", "dtype"}, InferDequantize});
  registry.Register(OpInfo{"quantized_matmul", 2, 2, true, {"format", "activations", "summation"}, InferQuantizedMatmul});
}

}  // namespace kiln::relax::op
