#include "codegen/llvm_kernel_lowering.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Metadata.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Target/TargetMachine.h"
#include "codegen/fast_math.h"
#include "tir/intrinsics.h"
#include "tir/math_intrinsic_arity.h"
#include "support/check.h"

namespace kiln::codegen {

// ------------------------------------------------------------------ expressions

namespace {

// `scalar`, or a vector of it with as many lanes as `like` has.
llvm::Type* WithLanesOf(llvm::Type* scalar, const llvm::Value* like) {
  if (const auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType())) {
    return llvm::FixedVectorType::get(scalar, vt->getNumElements());
  }
  return scalar;
}

// double -> half in two steps, never LLVM's own truncation: LLVM 14 lowers that to a call of
// __truncdfhf2 and reads its result from ax, where libgcc (GCC 12) returns _Float16 in xmm0,
// so every value came back as garbage. Rounding to float first would round twice (wrong at
// some ties); rounding to float *to odd* (toward zero, the last bit set when inexact) and
// then to half to nearest even is exact, since float keeps 13 more bits than half (the same
// two steps as support::DoubleToHalf, which folds constants on the host).
llvm::Value* DoubleToHalf(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Type* half_type) {
  llvm::Type* float_type = WithLanesOf(b.getFloatTy(), v);
  llvm::Type* bits_type = WithLanesOf(b.getInt32Ty(), v);
  llvm::Value* nearest = b.CreateFPTrunc(v, float_type);
  llvm::Value* back = b.CreateFPExt(nearest, v->getType());
  llvm::Value* inexact = b.CreateFCmpONE(back, v);  // false for NaN: kept as it is
  llvm::Value* away = b.CreateFCmpOGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                      b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v));
  llvm::Value* bits = b.CreateBitCast(nearest, bits_type);
  // One step toward zero is one less in magnitude (float bits are sign and magnitude);
  // infinity steps to the largest float, which rounds to half's infinity as it should.
  llvm::Value* toward_zero = b.CreateSelect(away, b.CreateSub(bits, llvm::ConstantInt::get(bits_type, 1)), bits);
  llvm::Value* odd = b.CreateOr(toward_zero, llvm::ConstantInt::get(bits_type, 1));
  llvm::Value* to_odd = b.CreateBitCast(b.CreateSelect(inexact, odd, bits), float_type);
  return b.CreateFPTrunc(to_odd, half_type);
}

// bfloat16 bits (i16 lanes) -> float32: they are float32's upper half.
llvm::Value* BFloatToFloat(llvm::IRBuilderBase& b, llvm::Value* bits16) {
  llvm::Type* i32 = WithLanesOf(b.getInt32Ty(), bits16);
  llvm::Type* f32 = WithLanesOf(b.getFloatTy(), bits16);
  llvm::Value* wide = b.CreateShl(b.CreateZExt(bits16, i32), llvm::ConstantInt::get(i32, 16));
  return b.CreateBitCast(wide, f32);
}

// float32 -> bfloat16 bits, rounded to nearest even; a NaN stays a (quiet) NaN, which
// rounding its bits could have turned into infinity.
llvm::Value* FloatToBFloat(llvm::IRBuilderBase& b, llvm::Value* f) {
  llvm::Type* i32 = WithLanesOf(b.getInt32Ty(), f);
  llvm::Type* i16 = WithLanesOf(b.getInt16Ty(), f);
  auto c = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  llvm::Value* bits = b.CreateBitCast(f, i32);
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(bits, c(16)), c(1));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(c(0x7fff), odd)), c(16));
  llvm::Value* quiet_nan = b.CreateOr(b.CreateLShr(bits, c(16)), c(0x40));
  llvm::Value* result = b.CreateSelect(b.CreateFCmpUNO(f, f), quiet_nan, rounded);
  return b.CreateTrunc(result, i16);
}

}  // namespace

std::string KernelLowering::BFloatArithmeticError() {
  return "bfloat16 is loaded, stored and converted by the CPU code generator but not computed in: "
         "convert to float32 first (astype)";
}

llvm::Value* KernelLowering::CastToI64(llvm::Value* v, DataType from) {
  llvm::Type* target = b_.getInt64Ty();
  if (v->getType()->isVectorTy()) {
    target = llvm::FixedVectorType::get(target, llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements());
  }
  if (v->getType() == target) return v;
  if (!from.is_integer() && !from.is_bool()) {
    return Fail(absl::StrCat("a ", from.ToString(), " value is used as an index or extent"), target);
  }
  return b_.CreateIntCast(v, target, from.is_int());
}

llvm::Value* KernelLowering::CastValue(llvm::Value* v, DataType from, DataType to) {
  if (from == to) return v;
  // bfloat16 converts through float32, the one type it widens to exactly.
  const DataType f32 = DataType::Float(32, from.lanes());
  if (from.is_bfloat()) return CastValue(BFloatToFloat(b_, v), f32, to);
  if (to.is_bfloat()) return FloatToBFloat(b_, CastValue(v, from, f32.with_lanes(to.lanes())));
  llvm::Type* dst = LlvmType(to);
  if (to.is_bool()) {
    if (from.is_floating()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    if (from.is_handle()) return b_.CreateIsNotNull(v);
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_handle() || to.is_handle()) {
    if (from.is_handle() && to.is_integer()) return b_.CreatePtrToInt(v, dst);
    if (to.is_handle() && from.is_integer()) return b_.CreateIntToPtr(v, dst);
    return Fail(absl::StrCat("cannot cast ", from.ToString(), " to ", to.ToString()), dst);
  }
  bool from_signed = from.is_int();
  if (from.is_bool()) {
    return to.is_floating() ? b_.CreateUIToFP(v, dst) : b_.CreateZExt(v, dst);
  }
  if (from.is_integer() && to.is_integer()) return b_.CreateIntCast(v, dst, from_signed);
  if (from.is_integer() && to.is_floating()) return from_signed ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
  if (from.is_floating() && to.is_integer()) return to.is_int() ? b_.CreateFPToSI(v, dst) : b_.CreateFPToUI(v, dst);
  if (from.is_floating() && from.bits() == 64 && dst->getScalarType()->isHalfTy()) return DoubleToHalf(b_, v, dst);
  return b_.CreateFPCast(v, dst);
}

llvm::Value* KernelLowering::Lower(const PrimExpr& e) {
  if (!status_.ok()) return llvm::UndefValue::get(SafeType(e.dtype()));
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto* imm = e.as<tir::IntImmNode>();
      return llvm::ConstantInt::get(LlvmType(e.dtype()), static_cast<uint64_t>(imm->value), /*isSigned=*/true);
    }
    case ExprKind::kFloatImm:
      if (e.dtype().is_bfloat()) {
        const float value = static_cast<float>(e.as<tir::FloatImmNode>()->value);
        return FloatToBFloat(b_, llvm::ConstantFP::get(b_.getFloatTy(), value));  // folds to a constant
      }
      return llvm::ConstantFP::get(LlvmType(e.dtype()), e.as<tir::FloatImmNode>()->value);
    case ExprKind::kVar: {
      const auto* var = e.as<tir::VarNode>();
      auto it = vars_.find(var);
      if (it == vars_.end()) return Fail(absl::StrCat("variable ", var->name, " is used where it is not defined"), LlvmType(e.dtype()));
      return it->second;
    }
    case ExprKind::kNot: return b_.CreateNot(Lower(e.as<tir::NotNode>()->a));
    case ExprKind::kBitNot: return b_.CreateNot(Lower(e.as<tir::BitNotNode>()->a));
    case ExprKind::kReinterpret:
      return b_.CreateBitCast(Lower(e.as<tir::ReinterpretNode>()->value), LlvmType(e.dtype()));
    case ExprKind::kSelect: {
      const auto* s = e.as<tir::SelectNode>();
      if (llvm::Value* masked = MaskedLoad(s)) return masked;
      llvm::Value* cond = Lower(s->condition);
      llvm::Value* t = Lower(s->true_value);
      llvm::Value* f = Lower(s->false_value);
      return b_.CreateSelect(cond, t, f);
    }
    case ExprKind::kCast: {
      const auto* c = e.as<tir::CastNode>();
      return CastValue(Lower(c->value), c->value.dtype(), e.dtype());
    }
    case ExprKind::kCall:
      if (e.dtype().is_bfloat()) return Fail(BFloatArithmeticError(), SafeType(e.dtype()));
      return LowerCall(e.as<tir::CallNode>());
    case ExprKind::kBufferLoad: return LoadBuffer(e.as<tir::BufferLoadNode>());
    case ExprKind::kRamp: {
      const auto* r = e.as<tir::RampNode>();
      llvm::Value* base = b_.CreateVectorSplat(r->lanes, Lower(r->base));
      llvm::Value* stride = b_.CreateVectorSplat(r->lanes, Lower(r->stride));
      DataType t = r->base.dtype();
      std::vector<llvm::Constant*> steps;
      for (int l = 0; l < r->lanes; ++l) {
        steps.push_back(t.is_floating() ? llvm::ConstantFP::get(ScalarType(t), l)
                                        : llvm::ConstantInt::get(ScalarType(t), l));
      }
      llvm::Value* lane = llvm::ConstantVector::get(steps);
      if (t.is_floating()) return b_.CreateFAdd(base, b_.CreateFMul(stride, lane));
      return b_.CreateAdd(base, b_.CreateMul(stride, lane));
    }
    case ExprKind::kBroadcast: {
      const auto* bc = e.as<tir::BroadcastNode>();
      return b_.CreateVectorSplat(bc->lanes, Lower(bc->value));
    }
    case ExprKind::kLet: {
      const auto* let = e.as<tir::LetNode>();
      llvm::Value* value = Lower(let->value);
      llvm::Value* result = nullptr;
      Bind(let->var.get(), value, [&] { result = Lower(let->body); });
      return result;
    }
    default: return LowerBinary(e.as<tir::BinaryNode>());
  }
}

// A type that never fails, for placeholders after an error.
llvm::Type* KernelLowering::SafeType(DataType t) {
  if (t.is_bfloat()) return b_.getInt16Ty();
  return LlvmType(t);
}

llvm::Value* KernelLowering::LowerBinary(const tir::BinaryNode* op) {
  KILN_CHECK(op != nullptr);
  DataType t = op->a.dtype();
  if (t.is_bfloat()) return Fail(BFloatArithmeticError(), SafeType(op->dtype()));
  llvm::Value* a = Lower(op->a);
  llvm::Value* b = Lower(op->b);
  bool is_float = t.is_floating();
  bool is_signed = t.is_int();
  switch (op->kind()) {
    case ExprKind::kAdd:
      return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, is_signed);
    case ExprKind::kSub:
      return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, is_signed);
    case ExprKind::kMul:
      return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, is_signed);
    case ExprKind::kDiv:
      if (is_float) return b_.CreateFDiv(a, b);
      return is_signed ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
    case ExprKind::kFloorDiv: {
      if (is_float) return Intrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
      if (!is_signed) return b_.CreateUDiv(a, b);
      // Truncating division, minus one when the remainder is nonzero and has the
      // opposite sign of the divisor.
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
      llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
      return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
    }
    case ExprKind::kFloorMod: {
      if (is_float) {
        llvm::Value* q = Intrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        return b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      if (!is_signed) return b_.CreateURem(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
      llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
      return b_.CreateAdd(r, b_.CreateSelect(adjust, b, zero));
    }
    case ExprKind::kMin:
      if (is_float) return FloatMinMax(/*is_max=*/false, a, b);
      return b_.CreateSelect(is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b), a, b);
    case ExprKind::kMax:
      if (is_float) return FloatMinMax(/*is_max=*/true, a, b);
      return b_.CreateSelect(is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b), a, b);
    case ExprKind::kEQ: return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case ExprKind::kNE: return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case ExprKind::kLT:
      return is_float ? b_.CreateFCmpOLT(a, b) : is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case ExprKind::kLE:
      return is_float ? b_.CreateFCmpOLE(a, b) : is_signed ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case ExprKind::kGT:
      return is_float ? b_.CreateFCmpOGT(a, b) : is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case ExprKind::kGE:
      return is_float ? b_.CreateFCmpOGE(a, b) : is_signed ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case ExprKind::kAnd: case ExprKind::kBitAnd: return b_.CreateAnd(a, b);
    case ExprKind::kOr: case ExprKind::kBitOr: return b_.CreateOr(a, b);
    case ExprKind::kBitXor: return b_.CreateXor(a, b);
    case ExprKind::kShl: case ExprKind::kShr: {
      // LLVM's shifts are poison for an amount outside [0, bits); TIR's shift every bit
      // out (tir/expr.h). An unsigned compare also sends negative amounts out of range.
      // With a constant amount all of this folds away.
      llvm::Value* bits = llvm::ConstantInt::get(a->getType(), t.bits());
      llvm::Value* in_range = b_.CreateICmpULT(b, bits);
      if (op->kind() == ExprKind::kShr && is_signed) {
        llvm::Value* last = llvm::ConstantInt::get(a->getType(), t.bits() - 1);
        return b_.CreateAShr(a, b_.CreateSelect(in_range, b, last));
      }
      // A poison shift in the arm select does not choose does not make the result poison.
      llvm::Value* shifted = op->kind() == ExprKind::kShl ? b_.CreateShl(a, b) : b_.CreateLShr(a, b);
      return b_.CreateSelect(in_range, shifted, llvm::Constant::getNullValue(a->getType()));
    }
    default: break;
  }
  return Fail(absl::StrCat("cannot lower expression kind ", tir::KindName(op->kind())), LlvmType(op->dtype()));
}

// NaN-propagating float min/max (tir/expr.h). `b > a ? b : a` (ordered compare) is one
// maxps/vmaxps on x86 and already yields a when either operand is NaN; only a NaN in b
// needs a second select (cmpunord + blend), skipped when b is a constant that is not NaN
// (relu's 0, a clip bound). llvm.maximum would say the same, but LLVM 14 does not lower
// it to vector code on x86.
llvm::Value* KernelLowering::FloatMinMax(bool is_max, llvm::Value* a, llvm::Value* b) {
  auto not_nan = [](llvm::Value* v) {
    auto* c = llvm::dyn_cast<llvm::Constant>(v);
    if (c != nullptr && c->getType()->isVectorTy()) c = c->getSplatValue();
    const auto* f = llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
    return f != nullptr && !f->getValueAPF().isNaN();
  };
  if (not_nan(a) && !not_nan(b)) std::swap(a, b);
  llvm::Value* r = b_.CreateSelect(is_max ? b_.CreateFCmpOGT(b, a) : b_.CreateFCmpOLT(b, a), b, a);
  if (not_nan(b)) return r;
  return b_.CreateSelect(b_.CreateFCmpUNO(b, b), b, r);
}

llvm::Value* KernelLowering::Intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }

// A libm function on every lane: scalar f32 and f64 have their own entry points; half
// goes through float.
llvm::Value* KernelLowering::LibmCall(const std::string& name, llvm::Value* x) {
  llvm::Type* type = x->getType();
  if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    llvm::Value* out = llvm::UndefValue::get(type);
    for (unsigned l = 0; l < vec->getNumElements(); ++l) {
      out = b_.CreateInsertElement(out, LibmCall(name, b_.CreateExtractElement(x, l)), l);
    }
    return out;
  }
  if (type->isHalfTy()) return b_.CreateFPTrunc(LibmCall(name, b_.CreateFPExt(x, b_.getFloatTy())), type);
  std::string symbol = type->isFloatTy() ? name + "f" : name;
  llvm::FunctionCallee fn = module_->getOrInsertFunction(symbol, llvm::FunctionType::get(type, {type}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();
    f->setWillReturn();
  }
  return b_.CreateCall(fn, {x});
}

// fast_exp, ... (float32 of any lanes, tir/transform/lower_intrinsics.h): inline polynomial
// code that stays SIMD in vector loops, where llvm.exp or libm would be called lane by lane.
llvm::Value* KernelLowering::FastMath(const std::string& op, llvm::Value* x) {
  // The functions computed through exp take whether the target has AVX-512F (vscalefps).
  using ExpEmitter = llvm::Value* (*)(llvm::IRBuilderBase&, llvm::Value*, bool);
  ExpEmitter through_exp = op == "exp"       ? EmitFastExpF32
                           : op == "erf"     ? EmitFastErfF32
                           : op == "tanh"    ? EmitFastTanhF32
                           : op == "sigmoid" ? EmitFastSigmoidF32
                           : op == "expm1"   ? EmitFastExpm1F32
                                             : nullptr;
  if (through_exp != nullptr) {
    if (!IsFloat32OrVector(x->getType())) return nullptr;
    return through_exp(b_, x, machine_.getMCSubtargetInfo()->checkFeatures("+avx512f"));
  }
  using Emitter = llvm::Value* (*)(llvm::IRBuilderBase&, llvm::Value*);
  Emitter emit = op == "log"       ? EmitFastLogF32
                 : op == "log1p"   ? EmitFastLog1pF32
                 : op == "sin"     ? EmitFastSinF32
                 : op == "cos"     ? EmitFastCosF32
                 : op == "tan"     ? EmitFastTanF32
                 : op == "asin"    ? EmitFastAsinF32
                 : op == "acos"    ? EmitFastAcosF32
                 : op == "atan"    ? EmitFastAtanF32
                 : op == "sinh"    ? EmitFastSinhF32
                 : op == "cosh"    ? EmitFastCoshF32
                 : op == "asinh"   ? EmitFastAsinhF32
                 : op == "acosh"   ? EmitFastAcoshF32
                 : op == "atanh"   ? EmitFastAtanhF32
                                   : nullptr;
  if (emit == nullptr || !IsFloat32OrVector(x->getType())) return nullptr;
  return emit(b_, x);
}

llvm::Value* KernelLowering::LowerCall(const tir::CallNode* call) {
  DataType t = call->dtype();
  llvm::Type* type = LlvmType(t);
  const std::string& op = call->op;
  bool fast = op.rfind("fast_", 0) == 0;
  bool libm = op.rfind("libm_", 0) == 0;
  if (!fast && !libm && tir::FindIntrinsic(op) != nullptr) return LowerAbiCall(call);
  size_t arity = tir::MathIntrinsicArity(op);
  if (call->args.size() != arity) {
    return Fail(absl::StrCat(op, " takes ", arity, " argument(s), got ", call->args.size()), type);
  }
  for (const PrimExpr& arg : call->args) {
    if (!arg.dtype().is_float() || arg.dtype() != t) {
      return Fail(absl::StrCat(op, "(", tir::ToString(call->args[0]), "): math intrinsics take float arguments of one type, got ",
                               arg.dtype().ToString()),
                  type);
    }
  }
  llvm::Value* x = Lower(call->args[0]);
  if (fast) {
    if (llvm::Value* v = FastMath(op.substr(5), x)) return v;
    return Fail(absl::StrCat(op, " takes float32, got ", t.ToString()), type);
  }
  if (libm) return LibmCall(op.substr(5), x);
  if (op == "exp") return Intrinsic(llvm::Intrinsic::exp, x);
  if (op == "log") return Intrinsic(llvm::Intrinsic::log, x);
  if (op == "sqrt") return Intrinsic(llvm::Intrinsic::sqrt, x);
  if (op == "fabs") return Intrinsic(llvm::Intrinsic::fabs, x);
  if (op == "floor") return Intrinsic(llvm::Intrinsic::floor, x);
  if (op == "ceil") return Intrinsic(llvm::Intrinsic::ceil, x);
  if (op == "round") return Intrinsic(llvm::Intrinsic::roundeven, x);
  if (op == "sin") return Intrinsic(llvm::Intrinsic::sin, x);
  if (op == "cos") return Intrinsic(llvm::Intrinsic::cos, x);
  if (op == "pow") return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, Lower(call->args[1]));
  // frem is exact (C's fmod); LLVM expands it to fmodf / fmod calls, lane by lane in vectors.
  if (op == "fmod") return b_.CreateFRem(x, Lower(call->args[1]));
  if (op == "fma") {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {x, Lower(call->args[1]), Lower(call->args[2])});
  }
  if (tir::IsMathIntrinsic(op)) {
    return Fail(absl::StrCat("math intrinsic ", op, " must be lowered first (tir/transform/lower_intrinsics.h)"), type);
  }
  return Fail(absl::StrCat("unknown math intrinsic ", op), type);
}

}  // namespace kiln::codegen
