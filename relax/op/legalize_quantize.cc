// Legalization of dequantize and quantized_matmul (semantics and block layouts in
// relax/op/quantize.cc), written with TIR's bit operations. Weight k of a row belongs to
// block floordiv(k, block_weights), position j = floormod(k, block_weights); a float16
// parameter is two bytes read as a uint16 and reinterpreted as float16.
//
// dequantize is one elementwise kernel over the output. quantized_matmul is one reduction
// over the blocks and their positions whose operand is the decoded weight: blocks are
// decoded where they are used, never written out.
// quantized_matmul with activations="q8" (llama.cpp's 8-bit activations) is
// legalize_quantized_matmul_q8.cc's.
//
// It is a general legalization (LegalizeFn: the kernel joins the module through the
// context) rather than a KernelLegalizeFn so that constant folding never runs it (see
// quantize.cc).
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/quant_block_access.h"
#include "relax/op/quantize.h"
#include "relax/op/legalize_quantized_matmul_q8.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

PrimExpr U8(int64_t v) { return tir::IntImm(DataType::UInt(8), v); }
PrimExpr I32(int64_t v) { return tir::IntImm(DataType::Int32(), v); }
PrimExpr AsI32(PrimExpr v) { return tir::Cast(DataType::Int32(), std::move(v)); }
PrimExpr AsF32(PrimExpr v) { return tir::Cast(DataType::Float32(), std::move(v)); }

// (v >> shift) & mask on int32 values (shift an index expression).
PrimExpr Bits(PrimExpr v, PrimExpr shift, int64_t mask) {
  return tir::BitAnd(tir::Shr(std::move(v), AsI32(std::move(shift))), I32(mask));
}

// ggml's IQ4_NL table (builtins/q8_block_dot.h, kIq4NlValues) at the int32 nibble q, as a
// tree of selects over [lo, hi).
PrimExpr Iq4NlValue(const PrimExpr& q, int lo = 0, int hi = 16) {
  static constexpr int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  if (hi - lo == 1) return I32(kValues[lo]);
  const int mid = (lo + hi) / 2;
  return tir::Select(tir::LT(q, I32(mid)), Iq4NlValue(q, lo, mid), Iq4NlValue(q, mid, hi));
}

// Weight `k` of a row of the formats whose blocks need more than a byte and a nibble per
// weight (q5_0, q5_1, iq4_nl and the K-quants; layouts in quantize.cc), as int32 bit
// operations on the bytes `byte(offset in the block)`, `half(offset)` the float16 there as
// float32.
template <typename ByteFn, typename HalfFn>
PrimExpr ExtendedWeight(const QuantFormat& format, const PrimExpr& k, ByteFn byte, HalfFn half) {
  auto b = [&](PrimExpr offset) { return AsI32(byte(std::move(offset))); };
  if (format.name == "iq4_nl") {
    PrimExpr j = tir::FloorMod(k, Int(32));
    PrimExpr nibble = Bits(b(Int(2) + tir::FloorMod(j, Int(16))), tir::FloorDiv(j, Int(16)) * Int(4), 15);
    return half(0) * AsF32(Iq4NlValue(nibble));
  }
  if (format.name == "q5_0" || format.name == "q5_1") {
    const bool q5_1 = format.name == "q5_1";
    const int64_t base = q5_1 ? 4 : 2;
    PrimExpr j = tir::FloorMod(k, Int(32));
    PrimExpr fifth = Bits(b(Int(base) + tir::FloorDiv(j, Int(8))), tir::FloorMod(j, Int(8)), 1);
    PrimExpr packed = b(Int(base + 4) + tir::FloorMod(j, Int(16)));
    PrimExpr nibble = Bits(packed, tir::FloorDiv(j, Int(16)) * Int(4), 15);
    PrimExpr q = tir::BitOr(nibble, tir::Shl(fifth, I32(4)));
    if (q5_1) return AsF32(q) * half(0) + half(2);
    return AsF32(q - I32(16)) * half(0);
  }
  PrimExpr e = tir::FloorMod(k, Int(256));
  if (format.name == "iq4_xs") {
    PrimExpr g = tir::FloorDiv(e, Int(32));
    PrimExpr l = tir::FloorMod(e, Int(32));
    PrimExpr nibble = Bits(b(Int(8) + g * Int(16) + tir::FloorMod(l, Int(16))), tir::FloorDiv(l, Int(16)) * Int(4), 15);
    PrimExpr high = tir::BitOr(b(Int(2)), tir::Shl(b(Int(3)), I32(8)));
    PrimExpr low = Bits(b(Int(4) + tir::FloorDiv(g, Int(2))), tir::FloorMod(g, Int(2)) * Int(4), 15);
    PrimExpr scale = tir::BitOr(low, tir::Shl(Bits(high, g * Int(2), 3), I32(4))) - I32(32);
    return (half(0) * AsF32(scale)) * AsF32(Iq4NlValue(nibble));
  }
  if (format.name == "q6_K") {
    PrimExpr c = tir::FloorDiv(e, Int(128));
    PrimExpr part = tir::FloorDiv(tir::FloorMod(e, Int(128)), Int(32));
    PrimExpr l = tir::FloorMod(e, Int(32));
    PrimExpr low = Bits(b(c * Int(64) + tir::FloorMod(part, Int(2)) * Int(32) + l), tir::FloorDiv(part, Int(2)) * Int(4), 15);
    PrimExpr high = Bits(b(Int(128) + c * Int(32) + l), part * Int(2), 3);
    PrimExpr q = tir::BitOr(low, tir::Shl(high, I32(4))) - I32(32);
    PrimExpr scale = AsI32(tir::Reinterpret(DataType::Int(8), byte(Int(192) + tir::FloorDiv(e, Int(16)))));
    return (half(208) * AsF32(scale)) * AsF32(q);
  }
  if (format.name == "q2_K") {
    // Byte i < 16: the scale (low nibble) and min (high) of weights 16i .. 16i + 15.
    PrimExpr i = tir::FloorDiv(e, Int(16));
    PrimExpr part = tir::FloorDiv(tir::FloorMod(e, Int(128)), Int(32));
    PrimExpr q = Bits(b(Int(16) + tir::FloorDiv(e, Int(128)) * Int(32) + tir::FloorMod(e, Int(32))), part * Int(2), 3);
    return (half(80) * AsF32(tir::BitAnd(b(i), I32(15)))) * AsF32(q) - half(82) * AsF32(Bits(b(i), I32(4), 15));
  }
  if (format.name == "q3_K") {
    PrimExpr half_index = tir::FloorDiv(e, Int(128));
    PrimExpr part = tir::FloorDiv(tir::FloorMod(e, Int(128)), Int(32));
    PrimExpr l = tir::FloorMod(e, Int(32));
    PrimExpr low = Bits(b(Int(32) + half_index * Int(32) + l), part * Int(2), 3);
    PrimExpr high = Bits(b(l), half_index * Int(4) + part, 1);
    PrimExpr q = low - I32(4) + tir::Shl(high, I32(2));
    PrimExpr i = tir::FloorDiv(e, Int(16));
    PrimExpr scale_low = Bits(b(Int(96) + tir::FloorMod(i, Int(8))), tir::FloorDiv(i, Int(8)) * Int(4), 15);
    PrimExpr scale_high = Bits(b(Int(104) + tir::FloorMod(i, Int(4))), tir::FloorDiv(i, Int(4)) * Int(2), 3);
    PrimExpr scale = tir::BitOr(scale_low, tir::Shl(scale_high, I32(4))) - I32(32);
    return (half(108) * AsF32(scale)) * AsF32(q);
  }
  // q4_K, q5_K: group g = e / 32 has a 6-bit scale and min (g < 4: low 6 bits of bytes 4 + g
  // and 8 + g; else nibbles of byte 8 + g, top bits from the top of bytes g and 4 + g).
  const bool q5 = format.name == "q5_K";
  PrimExpr g = tir::FloorDiv(e, Int(32));
  PrimExpr l = tir::FloorMod(e, Int(32));
  PrimExpr first = tir::LT(g, Int(4));
  PrimExpr scale = tir::Select(first, tir::BitAnd(b(Int(4) + g), I32(63)),
                               tir::BitOr(tir::BitAnd(b(Int(8) + g), I32(15)), tir::Shl(Bits(b(g), I32(6), 3), I32(4))));
  PrimExpr min = tir::Select(first, tir::BitAnd(b(Int(8) + g), I32(63)),
                             tir::BitOr(Bits(b(Int(8) + g), I32(4), 15), tir::Shl(Bits(b(Int(4) + g), I32(6), 3), I32(4))));
  PrimExpr q = Bits(b(Int(q5 ? 48 : 16) + tir::FloorDiv(g, Int(2)) * Int(32) + l), tir::FloorMod(g, Int(2)) * Int(4), 15);
  if (q5) q = tir::BitOr(q, tir::Shl(Bits(b(Int(16) + l), g, 1), I32(4)));
  return (half(0) * AsF32(scale)) * AsF32(q) - half(2) * AsF32(min);
}

bool IsExtendedFormat(const QuantFormat& format) {
  return format.name != "q4_0" && format.name != "q4_1" && format.name != "q8_0";
}

// The weight at output index `out_index` of a row of `data`'s blocks: `out_index` is the
// row's index into `data` followed by the weight's position k in the row.
PrimExpr Weight(const QuantFormat& format, const Buffer& data, const std::vector<PrimExpr>& out_index) {
  std::vector<PrimExpr> index(out_index.begin(), out_index.end() - 1);
  const PrimExpr& k = out_index.back();
  PrimExpr start = tir::FloorDiv(k, Int(format.block_weights)) * Int(format.block_bytes);
  PrimExpr j = tir::FloorMod(k, Int(kQuantBlockWeights));
  auto byte = [&](PrimExpr offset) {
    std::vector<PrimExpr> at = index;
    at.push_back(start + offset);
    return data.Load(std::move(at));
  };
  const DataType u16 = DataType::UInt(16);
  auto half_at = [&](int64_t offset) {
    PrimExpr bits = tir::BitOr(tir::Cast(u16, byte(Int(offset))), tir::Shl(tir::Cast(u16, byte(Int(offset + 1))), tir::IntImm(u16, 8)));
    return tir::Cast(DataType::Float32(), tir::Reinterpret(DataType::Float(16), bits));
  };
  if (IsExtendedFormat(format)) return ExtendedWeight(format, k, byte, half_at);
  PrimExpr d = half_at(0);
  if (format.name == "q8_0") {
    PrimExpr q = tir::Cast(DataType::Int32(), tir::Reinterpret(DataType::Int(8), byte(Int(2) + j)));
    return tir::Cast(DataType::Float32(), q) * d;
  }
  // Byte j % 16 of the quants holds weight j % 16 low, weight j % 16 + 16 high.
  const int64_t quants = format.name == "q4_1" ? 4 : 2;
  PrimExpr packed = byte(Int(quants) + tir::FloorMod(j, Int(16)));
  PrimExpr nibble = tir::Select(tir::LT(j, Int(16)), tir::BitAnd(packed, U8(15)), tir::Shr(packed, U8(4)));
  if (format.name == "q4_1") {
    return tir::Cast(DataType::Float32(), tir::Cast(DataType::Int32(), nibble)) * d + half_at(2);
  }
  PrimExpr q = tir::Cast(DataType::Int32(), nibble) - tir::IntImm(DataType::Int32(), 8);
  return tir::Cast(DataType::Float32(), q) * d;
}

absl::StatusOr<Expr> LegalizeDequantize(LegalizeContext& context, const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(QuantFormat format, QuantFormatAttr(call));
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  if (p.inputs.size() != 1) return OpError(call, "cannot legalize: expects one tensor operand");
  const Buffer& data = p.inputs[0];
  const Buffer& out = p.outputs[0];
  Stmt body = ComputeBlock("dequantize", out, [&](const std::vector<PrimExpr>& index) {
    PrimExpr w = Weight(format, data, index);
    return out->dtype == w.dtype() ? w : tir::Cast(out->dtype, w);
  });
  Expr kernel = context.AddPrimFunc("dequantize_" + format.name, MakePrimFunc(p, body, "elementwise"));
  return CallTir(kernel, {call.args[0]}, call.struct_info());
}

// One reduction over (block kb, half h, position j in the half) rather than over k: the
// innermost loop then reads 16 consecutive quantized bytes and 16 consecutive activations,
// which the CPU row-reduction rule (tir/schedule_rules/cpu_row_reduction.cc) turns into
// vector lanes (a vector load of bytes, a mask or shift, a conversion, two FMAs) with the
// float accumulators in registers.
absl::StatusOr<Expr> LegalizeQuantizedMatmul(LegalizeContext& context, const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(QuantFormat format, QuantFormatAttr(call));
  KILN_ASSIGN_OR_RETURN(bool q8, QuantizedMatmulQ8Activations(call));
  if (q8) return LegalizeQuantizedMatmulQ8(context, call, format);
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  if (p.inputs.size() != 2) return OpError(call, "cannot legalize: expects two tensor operands");
  const Buffer& x = p.inputs[0];
  const Buffer& w = p.inputs[1];
  const Buffer& out = p.outputs[0];
  const size_t rank = out->shape.size();
  if (IsExtendedFormat(format)) {
    // One reduction over k, each weight decoded where it is used (the general, unscheduled
    // form: CPU builds call the library kernels for these formats).
    Stmt body = ReduceBlock("quantized_matmul", out, {x->shape.back()}, Const(DataType::Float32(), 0), tir::Add,
                            [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                              std::vector<PrimExpr> xi(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(rank - 1));
                              xi.push_back(r[0]);
                              return tir::Mul(x.Load(xi), Weight(format, w, {s[rank - 1], r[0]}));
                            });
    Expr kernel = context.AddPrimFunc("quantized_matmul_" + format.name, MakePrimFunc(p, body, "out_ewise_fusable"));
    return CallTir(kernel, {call.args[0], call.args[1]}, call.struct_info());
  }
  constexpr int64_t kHalf = kQuantBlockWeights / 2;
  const PrimExpr blocks = tir::FloorDiv(x->shape.back(), Int(kQuantBlockWeights));
  Stmt body = ReduceBlock("quantized_matmul", out, {blocks, Int(2), Int(kHalf)}, Const(DataType::Float32(), 0), tir::Add,
                          [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                            std::vector<PrimExpr> xi(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(rank - 1));
                            xi.push_back(r[0] * Int(kQuantBlockWeights) + r[1] * Int(kHalf) + r[2]);
                            return tir::Mul(x.Load(xi), QuantBlockWeight(w, s[rank - 1], r[0], format, r[1], r[2]));
                          });
  Expr kernel = context.AddPrimFunc("quantized_matmul_" + format.name, MakePrimFunc(p, body, "out_ewise_fusable"));
  return CallTir(kernel, {call.args[0], call.args[1]}, call.struct_info());
}

}  // namespace

void RegisterQuantizeLegalize(OpRegistry& registry) {
  registry.SetLegalize("dequantize", LegalizeFn(LegalizeDequantize));
  registry.SetLegalize("quantized_matmul", LegalizeFn(LegalizeQuantizedMatmul));
}

}  // namespace kiln::relax::op
