// Legalization of dequantize (semantics and block layouts in relax/op/quantize.cc): one
// elementwise kernel over the output, written with TIR's bit operations. Output element
// k of a row belongs to block floordiv(k, 32), position j = floormod(k, 32); the block's
// scale is its first two bytes read as a uint16 and reinterpreted as float16.
//
// It is a general legalization (LegalizeFn: the kernel joins the module through the
// context) rather than a KernelLegalizeFn so that constant folding never runs it (see
// quantize.cc).
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/quantize.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

PrimExpr U8(int64_t v) { return tir::IntImm(DataType::UInt(8), v); }

// The weight at output index `out_index` of a row of `data`'s blocks.
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
  PrimExpr bits = tir::BitOr(tir::Cast(u16, byte(Int(0))), tir::Shl(tir::Cast(u16, byte(Int(1))), tir::IntImm(u16, 8)));
  PrimExpr d = tir::Cast(DataType::Float32(), tir::Reinterpret(DataType::Float(16), bits));
  PrimExpr q;
  if (format.name == "q4_0") {
    // Byte j % 16 holds weight j % 16 low, weight j % 16 + 16 high.
    PrimExpr packed = byte(Int(2) + tir::FloorMod(j, Int(16)));
    PrimExpr nibble = tir::Select(tir::LT(j, Int(16)), tir::BitAnd(packed, U8(15)), tir::Shr(packed, U8(4)));
    q = tir::Cast(DataType::Int32(), nibble) - tir::IntImm(DataType::Int32(), 8);
  } else {
    q = tir::Cast(DataType::Int32(), tir::Reinterpret(DataType::Int(8), byte(Int(2) + j)));
  }
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

}  // namespace

void RegisterQuantizeLegalize(OpRegistry& registry) {
  registry.SetLegalize("dequantize", LegalizeFn(LegalizeDequantize));
}

}  // namespace kiln::relax::op
