// Legalization of dequantize and quantized_matmul (semantics and block layouts in
// relax/op/quantize.cc), written with TIR's bit operations. Weight k of a row belongs to
// block floordiv(k, 32), position j = floormod(k, 32); the block's scale is its first two
// bytes read as a uint16 and reinterpreted as float16 (q4_1's minimum, the next two).
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

// The weight at output index `out_index` of a row of `data`'s blocks: `out_index` is the
// row's index into `data` followed by the weight's position k in the row.
PrimExpr Weight(const QuantFormat& format, const Buffer& data, const std::vector<PrimExpr>& out_index) {
  std::vector<PrimExpr> index(out_index.begin(), out_index.end() - 1);
  const PrimExpr& k = out_index.back();
  PrimExpr start = tir::FloorDiv(k, Int(kQuantBlockWeights)) * Int(format.block_bytes);
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
