#include "codegen/half_libcalls.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/MC/MCSubtargetInfo.h"

namespace kiln::codegen {

namespace {

llvm::Function* DeclareHelper(llvm::Module& module, const char* name, llvm::Type* result, llvm::Type* param) {
  auto* type = llvm::FunctionType::get(result, {param}, /*isVarArg=*/false);
  llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  return fn;
}

// i16 -> float (its bits as i32).
void DefineHalfToFloat(llvm::Module& module) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Function* fn = DeclareHelper(module, kHalfToFloatLibcall, b.getFloatTy(), b.getInt16Ty());
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", fn));
  llvm::Value* h = b.CreateZExt(fn->getArg(0), b.getInt32Ty());
  auto i32 = [&](uint32_t v) { return b.getInt32(v); };
  llvm::Value* sign = b.CreateShl(b.CreateAnd(h, i32(0x8000)), 16);
  llvm::Value* exponent = b.CreateAnd(b.CreateLShr(h, 10), i32(0x1f));
  llvm::Value* mantissa = b.CreateAnd(h, i32(0x3ff));
  // A normal half: rebias the exponent (15 -> 127) and widen the mantissa (10 -> 23 bits).
  llvm::Value* normal = b.CreateOr(b.CreateShl(b.CreateAdd(exponent, i32(127 - 15)), 23), b.CreateShl(mantissa, 13));
  // Zero or a subnormal half, mantissa * 2^-24: exact in float (a normal float), so the
  // multiply rounds nothing.
  llvm::Value* small = b.CreateBitCast(
      b.CreateFMul(b.CreateUIToFP(mantissa, b.getFloatTy()), llvm::ConstantFP::get(b.getFloatTy(), 0x1p-24)),
      b.getInt32Ty());
  // Infinity, or a NaN with its payload and the quiet bit set (as F16C's vcvtph2ps does).
  llvm::Value* nan_bit = b.CreateSelect(b.CreateICmpNE(mantissa, i32(0)), i32(0x400000), i32(0));
  llvm::Value* special = b.CreateOr(b.CreateOr(i32(0x7f800000), b.CreateShl(mantissa, 13)), nan_bit);
  llvm::Value* magnitude = b.CreateSelect(b.CreateICmpEQ(exponent, i32(0)), small,
                                          b.CreateSelect(b.CreateICmpEQ(exponent, i32(0x1f)), special, normal));
  b.CreateRet(b.CreateBitCast(b.CreateOr(sign, magnitude), b.getFloatTy()));
}

// float -> i16, rounded to nearest even.
void DefineFloatToHalf(llvm::Module& module) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Function* fn = DeclareHelper(module, kFloatToHalfLibcall, b.getInt16Ty(), b.getFloatTy());
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", fn));
  auto i32 = [&](uint32_t v) { return b.getInt32(v); };
  llvm::Value* bits = b.CreateBitCast(fn->getArg(0), b.getInt32Ty());
  llvm::Value* sign = b.CreateAnd(b.CreateLShr(bits, 16), i32(0x8000));
  llvm::Value* magnitude = b.CreateAnd(bits, i32(0x7fffffff));
  // Rounds `value` right by `shift` (1..31) bits to nearest, ties to even.
  auto round_shift = [&](llvm::Value* value, llvm::Value* shift) {
    llvm::Value* kept = b.CreateLShr(value, shift);
    llvm::Value* rest = b.CreateAnd(value, b.CreateSub(b.CreateShl(i32(1), shift), i32(1)));
    llvm::Value* half_way = b.CreateShl(i32(1), b.CreateSub(shift, i32(1)));
    llvm::Value* up = b.CreateOr(b.CreateICmpUGT(rest, half_way),
                                 b.CreateAnd(b.CreateICmpEQ(rest, half_way), b.CreateTrunc(kept, b.getInt1Ty())));
    return b.CreateAdd(kept, b.CreateZExt(up, b.getInt32Ty()));
  };
  // At or above 2^-14, a normal half: rebias the exponent (127 -> 15) and round off 13 bits;
  // a carry out of the mantissa steps the exponent, up to infinity (0x7c00) from 65520 on.
  llvm::Value* normal = round_shift(b.CreateSub(magnitude, i32((127 - 15) << 23)), i32(13));
  // Below, a multiple of 2^-24: the float's significand (with its leading bit) over
  // 2^(126 - exponent), at most 2^25 (below 2^-25 everything rounds to zero). Rounding up
  // from the largest subnormal gives 0x400, the smallest normal, as it should.
  llvm::Value* significand = b.CreateOr(b.CreateAnd(magnitude, i32(0x7fffff)), i32(0x800000));
  llvm::Value* exponent = b.CreateLShr(magnitude, 23);
  llvm::Value* shift = b.CreateSub(i32(126), exponent);
  shift = b.CreateSelect(b.CreateICmpUGT(shift, i32(25)), i32(25), shift);
  llvm::Value* small = round_shift(significand, shift);
  // A NaN keeps its payload's top bits and becomes quiet (F16C's vcvtps2ph does the same).
  llvm::Value* nan = b.CreateOr(i32(0x7e00), b.CreateAnd(b.CreateLShr(magnitude, 13), i32(0x3ff)));
  llvm::Value* result = b.CreateSelect(
      b.CreateICmpUGT(magnitude, i32(0x7f800000)), nan,
      b.CreateSelect(b.CreateICmpUGE(magnitude, i32(0x477ff000)), i32(0x7c00),
                     b.CreateSelect(b.CreateICmpUGE(magnitude, i32(0x38800000)), normal, small)));
  b.CreateRet(b.CreateTrunc(b.CreateOr(sign, result), b.getInt16Ty()));
}

}  // namespace

void DefineHalfLibcalls(llvm::Module& module, const llvm::TargetMachine& machine) {
  if (machine.getMCSubtargetInfo()->checkFeatures("+f16c")) return;
  DefineHalfToFloat(module);
  DefineFloatToHalf(module);
}

}  // namespace kiln::codegen
