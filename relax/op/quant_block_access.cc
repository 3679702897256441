#include "relax/op/quant_block_access.h"

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"

namespace kiln::relax::op {

namespace {

PrimExpr BlockByte(const tir::Buffer& data, const PrimExpr& row, const PrimExpr& kb, const QuantFormat& format,
                   PrimExpr offset) {
  return data.Load({row, kb * Int(format.block_bytes) + std::move(offset)});
}

}  // namespace

PrimExpr QuantBlockHalf(const tir::Buffer& data, const PrimExpr& row, const PrimExpr& kb, const QuantFormat& format,
                        int64_t offset) {
  const DataType u16 = DataType::UInt(16);
  PrimExpr bits = tir::BitOr(tir::Cast(u16, BlockByte(data, row, kb, format, Int(offset))),
                             tir::Shl(tir::Cast(u16, BlockByte(data, row, kb, format, Int(offset + 1))), tir::IntImm(u16, 8)));
  return tir::Cast(DataType::Float32(), tir::Reinterpret(DataType::Float(16), bits));
}

PrimExpr QuantBlockInt(const tir::Buffer& data, const PrimExpr& row, const PrimExpr& kb, const QuantFormat& format,
                       const PrimExpr& h, const PrimExpr& j) {
  if (format.name == "q8_0") {
    return tir::Cast(DataType::Int32(),
                     tir::Reinterpret(DataType::Int(8), BlockByte(data, row, kb, format, Int(2) + h * Int(16) + j)));
  }
  const int64_t quants = format.name == "q4_1" ? 4 : 2;
  const DataType u8 = DataType::UInt(8);
  PrimExpr packed = BlockByte(data, row, kb, format, Int(quants) + j);
  PrimExpr nibble = tir::Select(tir::EQ(h, Int(0)), tir::BitAnd(packed, tir::IntImm(u8, 15)), tir::Shr(packed, tir::IntImm(u8, 4)));
  PrimExpr q = tir::Cast(DataType::Int32(), nibble);
  return format.name == "q4_1" ? q : q - tir::IntImm(DataType::Int32(), 8);
}

PrimExpr QuantBlockWeight(const tir::Buffer& data, const PrimExpr& row, const PrimExpr& kb, const QuantFormat& format,
                          const PrimExpr& h, const PrimExpr& j) {
  PrimExpr w = tir::Cast(DataType::Float32(), QuantBlockInt(data, row, kb, format, h, j)) *
               QuantBlockHalf(data, row, kb, format, 0);
  return format.name == "q4_1" ? w + QuantBlockHalf(data, row, kb, format, 2) : w;
}

}  // namespace kiln::relax::op
