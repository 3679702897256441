#include "codegen/spirv_codegen.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "codegen/spirv_builder.h"
#include "codegen/spirv_math.h"
#include "support/float16.h"
#include "tir/stmt_functor.h"
#include "tir/transform/make_kernel_abi.h"
#include "tir/transform/split_host_device.h"

namespace kiln::codegen {

namespace {

using spv::Op;
using tir::DataType;
using tir::ExprKind;
using tir::PrimExpr;
using tir::Stmt;

constexpr int kMaxPushConstantSlots = 16;  // 128 bytes: what every Vulkan device offers
constexpr char kUnsupported[] = " is not supported by the SPIR-V code generator yet";

bool IsHalf(DataType t) { return t.is_float() && t.bits() == 16; }

// "threadIdx.y" -> (true, 1); nullopt for anything but blockIdx / threadIdx x, y, z.
std::optional<std::pair<bool, uint32_t>> ParseThreadTag(const std::string& tag) {
  for (const bool local : {true, false}) {
    const std::string prefix = local ? "threadIdx." : "blockIdx.";
    if (tag.size() == prefix.size() + 1 && tag.rfind(prefix, 0) == 0 && tag.back() >= 'x' && tag.back() <= 'z') {
      return std::make_pair(local, static_cast<uint32_t>(tag.back() - 'x'));
    }
  }
  return std::nullopt;
}

// The workgroup size: the largest constant extent bound to each threadIdx.
class ThreadExtents : public tir::StmtExprVisitor {
 public:
  void VisitStmt_(const tir::ForNode* f, const Stmt& self) override {
    if (f->for_kind == tir::ForKind::kThreadBinding && f->thread_tag.rfind("threadIdx.", 0) == 0 && status.ok()) {
      std::optional<std::pair<bool, uint32_t>> tag = ParseThreadTag(f->thread_tag);
      std::optional<int64_t> e = f->extent.as_int();
      if (!tag || !e || *e < 1 || *e > 1024) {
        status = absl::InvalidArgumentError(absl::StrCat("loop '", f->loop_var.name(), "' bound to ", f->thread_tag,
                                                         " needs a constant extent in [1, 1024], got ",
                                                         tir::ToString(f->extent)));
      } else {
        size[tag->second] = std::max<uint32_t>(size[tag->second], static_cast<uint32_t>(*e));
      }
    }
    tir::StmtExprVisitor::VisitStmt_(f, self);
  }
  std::array<uint32_t, 3> size{1, 1, 1};
  absl::Status status;
};

// Module-wide ids the kernels share: the builtin input variables.
struct SharedIds {
  uint32_t local_invocation_id = 0;
  uint32_t workgroup_id = 0;
};

// A buffer as the kernel sees it: a pointer to its first element's array.
struct BufferAccess {
  uint32_t variable = 0;
  spv::StorageClass storage = spv::StorageClass::Function;
  uint32_t element_type = 0;  // the storage type of one element
  DataType dtype;
  bool through_block = false;  // a storage buffer: the array is member 0 of a Block
};

class KernelEmitter {
 public:
  KernelEmitter(SpirvBuilder& b, SharedIds& shared) : b_(b), shared_(shared) {}

  absl::StatusOr<SpirvKernelInfo> Emit(const std::string& symbol, const tir::PrimFunc& func) {
    SpirvKernelInfo info{symbol, {}};
    const uint32_t function = b_.NewId();
    b_.Name(function, symbol);
    // Parameters: handles are bindings, the rest push-constant slots.
    std::vector<const tir::VarNode*> scalars;
    for (const tir::PrimFuncParam& p : func->params) {
      if (p.is_buffer()) return absl::InvalidArgumentError("a buffer parameter (expected the lowered device kernel)");
      DataType t = p.var.dtype();
      info.param_types.push_back(t.ToString());
      if (t.is_handle()) {
        handle_binding_[p.var.get()] = static_cast<uint32_t>(handle_binding_.size());
      } else {
        scalars.push_back(p.var.get());
      }
    }
    if (scalars.size() > kMaxPushConstantSlots) {
      return absl::InvalidArgumentError(absl::StrCat(scalars.size(), " scalar parameters (", 8 * scalars.size(),
                                                     " bytes of push constants; at most 128)", kUnsupported));
    }
    std::array<uint32_t, 3> local_size{1, 1, 1};
    if (absl::Status s = LocalSize(func->body, &local_size); !s.ok()) return s;

    w_.StartBlock(b_.NewId());
    if (!scalars.empty()) LoadPushConstants(symbol, scalars);
    EmitStmt(func->body);
    if (!status_.ok()) return status_;
    if (!w_.terminated()) w_.Instruction(Op::OpReturn, {});

    const uint32_t void_type = b_.TypeVoid();
    b_.AddFunction(w_.Finish(function, b_.TypeFunction(void_type), void_type));
    std::vector<uint32_t> interface;
    if (uses_local_id_) interface.push_back(shared_.local_invocation_id);
    if (uses_group_id_) interface.push_back(shared_.workgroup_id);
    b_.AddEntryPoint(function, symbol, interface);
    b_.AddLocalSize(function, local_size[0], local_size[1], local_size[2]);
    return info;
  }

 private:
  // ------------------------------------------------------------------ helpers
  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }
  void Unsupported(const std::string& what) { Fail(absl::StrCat(what, kUnsupported)); }

  // The SPIR-V type a value of `t` is computed in (float16 in float32).
  uint32_t ValueType(DataType t) {
    if (t.lanes() != 1) {
      Unsupported(absl::StrCat("vector type ", t.ToString()));
      return b_.TypeInt(32);
    }
    if (t.is_bool()) return b_.TypeBool();
    if ((t.is_int() || t.is_uint()) && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64)) {
      return b_.TypeInt(t.bits());
    }
    if (t.is_float() && (t.bits() == 16 || t.bits() == 32)) return b_.TypeFloat(32);
    if (t.is_float() && t.bits() == 64) return b_.TypeFloat(64);
    Unsupported(absl::StrCat("type ", t.ToString()));
    return b_.TypeInt(32);
  }
  // The type of one element in a storage buffer: bool a byte, float16 its 16 bits.
  uint32_t StorageType(DataType t) {
    if (t.is_bool()) return b_.TypeInt(8);
    if (IsHalf(t)) return b_.TypeFloat(16);
    return ValueType(t);
  }

  uint32_t Zero(DataType t) { return t.is_float() ? FloatConst(t, 0.0) : IntConst(t, 0); }
  uint32_t One(DataType t) { return t.is_float() ? FloatConst(t, 1.0) : IntConst(t, 1); }
  uint32_t IntConst(DataType t, int64_t v) {
    if (t.is_bool()) return b_.ConstantBool(v != 0);
    return b_.ConstantInt(t.bits(), static_cast<uint64_t>(v));
  }
  uint32_t FloatConst(DataType t, double v) {
    if (t.bits() == 64) return b_.ConstantFloat(64, v);
    if (IsHalf(t)) return b_.ConstantFloat(32, support::HalfToFloat(support::DoubleToHalf(v)));  // rounded once
    return b_.ConstantFloat(32, v);
  }
  // A float16 result rounded to float16 (its value stays a float32).
  uint32_t RoundHalf(DataType t, uint32_t v) {
    if (!IsHalf(t)) return v;
    uint32_t h = w_.Value(Op::OpFConvert, b_.TypeFloat(16), {v});
    return w_.Value(Op::OpFConvert, b_.TypeFloat(32), {h});
  }
  uint32_t Select(DataType t, uint32_t c, uint32_t a, uint32_t b) { return w_.Value(Op::OpSelect, ValueType(t), {c, a, b}); }
  uint32_t Bool(Op op, uint32_t a, uint32_t b) { return w_.Value(op, b_.TypeBool(), {a, b}); }

  // ------------------------------------------------------------------ layout
  absl::Status LocalSize(const Stmt& body, std::array<uint32_t, 3>* size) {
    ThreadExtents extents;
    extents.VisitStmt(body);
    if (!extents.status.ok()) return extents.status;
    *size = extents.size;
    return absl::OkStatus();
  }

  void LoadPushConstants(const std::string& symbol, const std::vector<const tir::VarNode*>& scalars) {
    std::vector<uint32_t> members, offsets;
    std::vector<DataType> slot_types;
    for (size_t i = 0; i < scalars.size(); ++i) {
      DataType slot = scalars[i]->dtype().is_float() ? DataType::Float(64) : DataType::Int(64);
      slot_types.push_back(slot);
      members.push_back(ValueType(slot));
      offsets.push_back(static_cast<uint32_t>(8 * i));
    }
    const uint32_t block = b_.TypeBlock(members, offsets);
    b_.Name(block, absl::StrCat(symbol, "_scalars"));
    const uint32_t var =
        b_.GlobalVariable(b_.TypePointer(spv::StorageClass::PushConstant, block), spv::StorageClass::PushConstant);
    for (size_t i = 0; i < scalars.size(); ++i) {
      uint32_t ptr = w_.Value(Op::OpAccessChain, b_.TypePointer(spv::StorageClass::PushConstant, members[i]),
                           {var, b_.ConstantInt(32, i)});
      uint32_t raw = w_.Value(Op::OpLoad, members[i], {ptr});
      values_[scalars[i]] = Convert(raw, slot_types[i], scalars[i]->dtype());
    }
  }

  // ------------------------------------------------------------------ expressions
  uint32_t Convert(uint32_t v, DataType from, DataType to) {
    if (from == to) return v;
    if (to.is_bool()) {
      if (from.is_float()) return Bool(Op::OpFUnordNotEqual, v, Zero(from));
      return Bool(Op::OpINotEqual, v, Zero(from));
    }
    if (from.is_bool()) return Select(to, v, One(to), Zero(to));
    const uint32_t type = ValueType(to);
    if (from.is_integer() && to.is_integer()) {
      if (from.bits() == to.bits()) return v;
      if (from.is_int() && to.bits() > from.bits()) {
        // Sign extension written as zero extension and (x ^ m) - m, m the source's sign bit:
        // the same value, but Mesa 22.3's lavapipe miscompiles an OpSConvert to 64 bits that
        // feeds a signed comparison (found by the op harness: one_hot of negative indices).
        uint32_t wide = w_.Value(Op::OpUConvert, type, {v});
        uint32_t m = b_.ConstantInt(to.bits(), uint64_t{1} << (from.bits() - 1));
        return w_.Value(Op::OpISub, type, {w_.Value(Op::OpBitwiseXor, type, {wide, m}), m});
      }
      return w_.Value(from.is_int() ? Op::OpSConvert : Op::OpUConvert, type, {v});
    }
    if (from.is_integer() && to.is_float()) {
      return RoundHalf(to, w_.Value(from.is_int() ? Op::OpConvertSToF : Op::OpConvertUToF, type, {v}));
    }
    if (from.is_float() && to.is_integer()) return w_.Value(to.is_int() ? Op::OpConvertFToS : Op::OpConvertFToU, type, {v});
    if (from.is_float() && to.is_float()) {
      if (IsHalf(to) && from.bits() == 64) {
        // One rounding, straight to float16.
        uint32_t h = w_.Value(Op::OpFConvert, b_.TypeFloat(16), {v});
        return w_.Value(Op::OpFConvert, type, {h});
      }
      if (IsHalf(to)) return RoundHalf(to, v);       // from float32
      if (IsHalf(from) && to.bits() == 32) return v;  // already a float32
      return w_.Value(Op::OpFConvert, type, {v});
    }
    Unsupported(absl::StrCat("the cast from ", from.ToString(), " to ", to.ToString()));
    return v;
  }

  uint32_t Reinterpret(uint32_t v, DataType from, DataType to) {
    if (from.bits() != to.bits() || from.is_bool() || to.is_bool()) {
      Unsupported(absl::StrCat("reinterpret from ", from.ToString(), " to ", to.ToString()));
      return v;
    }
    if (IsHalf(to)) return w_.Value(Op::OpFConvert, b_.TypeFloat(32), {w_.Value(Op::OpBitcast, b_.TypeFloat(16), {v})});
    if (IsHalf(from)) return w_.Value(Op::OpBitcast, ValueType(to), {w_.Value(Op::OpFConvert, b_.TypeFloat(16), {v})});
    return w_.Value(Op::OpBitcast, ValueType(to), {v});
  }

  uint32_t Binary(const tir::BinaryNode* op) {
    const DataType t = op->a.dtype();
    const uint32_t a = Expr(op->a);
    const uint32_t b = Expr(op->b);
    const uint32_t type = ValueType(t);
    const bool fl = t.is_float();
    const bool sg = t.is_int();
    switch (op->kind()) {
      case ExprKind::kAdd: return RoundHalf(t, w_.Value(fl ? Op::OpFAdd : Op::OpIAdd, type, {a, b}));
      case ExprKind::kSub: return RoundHalf(t, w_.Value(fl ? Op::OpFSub : Op::OpISub, type, {a, b}));
      case ExprKind::kMul: return RoundHalf(t, w_.Value(fl ? Op::OpFMul : Op::OpIMul, type, {a, b}));
      case ExprKind::kDiv: return RoundHalf(t, w_.Value(fl ? Op::OpFDiv : sg ? Op::OpSDiv : Op::OpUDiv, type, {a, b}));
      case ExprKind::kFloorDiv: {
        if (fl) return RoundHalf(t, w_.Glsl(type, GLSLstd450Floor, {w_.Value(Op::OpFDiv, type, {a, b})}));
        if (!sg) return w_.Value(Op::OpUDiv, type, {a, b});
        // Truncating quotient, one less when the remainder's sign differs from the divisor's.
        uint32_t q = w_.Value(Op::OpSDiv, type, {a, b});
        return w_.Value(Op::OpISub, type, {q, Select(t, RemainderNeedsFix(t, a, b), One(t), Zero(t))});
      }
      case ExprKind::kFloorMod: {
        if (fl) {
          uint32_t q = w_.Glsl(type, GLSLstd450Floor, {w_.Value(Op::OpFDiv, type, {a, b})});
          return RoundHalf(t, w_.Value(Op::OpFSub, type, {a, w_.Value(Op::OpFMul, type, {q, b})}));
        }
        if (!sg) return w_.Value(Op::OpUMod, type, {a, b});
        uint32_t r = w_.Value(Op::OpSRem, type, {a, b});
        return Select(t, RemainderNeedsFix(t, a, b), w_.Value(Op::OpIAdd, type, {r, b}), r);
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        const bool is_min = op->kind() == ExprKind::kMin;
        if (fl) {
          // b wins when it is the smaller (larger) one or NaN; a NaN a stays: NaN propagates.
          uint32_t b_wins = Bool(is_min ? Op::OpFOrdLessThan : Op::OpFOrdGreaterThan, b, a);
          uint32_t b_nan = w_.Value(Op::OpIsNan, b_.TypeBool(), {b});
          return Select(t, w_.Value(Op::OpLogicalOr, b_.TypeBool(), {b_wins, b_nan}), b, a);
        }
        if (t.is_bool()) return Bool(is_min ? Op::OpLogicalAnd : Op::OpLogicalOr, a, b);
        Op less = sg ? Op::OpSLessThan : Op::OpULessThan;
        uint32_t a_less = Bool(less, a, b);
        return is_min ? Select(t, a_less, a, b) : Select(t, a_less, b, a);
      }
      case ExprKind::kEQ:
        return Bool(fl ? Op::OpFOrdEqual : t.is_bool() ? Op::OpLogicalEqual : Op::OpIEqual, a, b);
      case ExprKind::kNE:
        return Bool(fl ? Op::OpFUnordNotEqual : t.is_bool() ? Op::OpLogicalNotEqual : Op::OpINotEqual, a, b);
      case ExprKind::kLT: return Compare(t, Op::OpFOrdLessThan, Op::OpSLessThan, Op::OpULessThan, a, b);
      case ExprKind::kLE: return Compare(t, Op::OpFOrdLessThanEqual, Op::OpSLessThanEqual, Op::OpULessThanEqual, a, b);
      case ExprKind::kGT: return Compare(t, Op::OpFOrdGreaterThan, Op::OpSGreaterThan, Op::OpUGreaterThan, a, b);
      case ExprKind::kGE:
        return Compare(t, Op::OpFOrdGreaterThanEqual, Op::OpSGreaterThanEqual, Op::OpUGreaterThanEqual, a, b);
      case ExprKind::kAnd: return Bool(Op::OpLogicalAnd, a, b);
      case ExprKind::kOr: return Bool(Op::OpLogicalOr, a, b);
      case ExprKind::kBitAnd: return w_.Value(Op::OpBitwiseAnd, type, {a, b});
      case ExprKind::kBitOr: return w_.Value(Op::OpBitwiseOr, type, {a, b});
      case ExprKind::kBitXor: return w_.Value(Op::OpBitwiseXor, type, {a, b});
      case ExprKind::kShl:
      case ExprKind::kShr: return Shift(t, op->kind() == ExprKind::kShl, a, b);
      default: break;
    }
    Fail(absl::StrCat("expression kind ", tir::KindName(op->kind())));
    return a;
  }

  uint32_t Compare(DataType t, Op f, Op s, Op u, uint32_t a, uint32_t b) {
    if (t.is_bool()) {
      // false < true: compare as integers.
      DataType byte = DataType::UInt(8);
      return Bool(u, Convert(a, t, byte), Convert(b, t, byte));
    }
    return Bool(t.is_float() ? f : t.is_int() ? s : u, a, b);
  }

  // r = a rem b is nonzero and of the other sign than b: floor rounding needs a step.
  uint32_t RemainderNeedsFix(DataType t, uint32_t a, uint32_t b) {
    uint32_t r = w_.Value(Op::OpSRem, ValueType(t), {a, b});
    uint32_t nonzero = Bool(Op::OpINotEqual, r, Zero(t));
    uint32_t signs_differ =
        Bool(Op::OpLogicalNotEqual, Bool(Op::OpSLessThan, r, Zero(t)), Bool(Op::OpSLessThan, b, Zero(t)));
    return Bool(Op::OpLogicalAnd, nonzero, signs_differ);
  }

  // Shifts by an amount outside [0, bits) shift every bit out (tir/expr.h); SPIR-V leaves
  // them undefined, so the amount is clamped first and the result chosen by a select.
  uint32_t Shift(DataType t, bool left, uint32_t a, uint32_t b) {
    const uint32_t type = ValueType(t);
    const DataType ut = DataType::UInt(t.bits());
    uint32_t in_range = Bool(Op::OpULessThan, b, IntConst(ut, t.bits()));
    uint32_t amount = Select(ut, in_range, b, IntConst(ut, t.bits() - 1));
    if (left) return Select(t, in_range, w_.Value(Op::OpShiftLeftLogical, type, {a, amount}), Zero(t));
    if (t.is_int()) return w_.Value(Op::OpShiftRightArithmetic, type, {a, amount});
    return Select(t, in_range, w_.Value(Op::OpShiftRightLogical, type, {a, amount}), Zero(t));
  }

  uint32_t Math(const tir::CallNode* call) {
    const std::string& op = call->op;
    const DataType t = call->dtype();
    if (!t.is_float() || t.lanes() != 1) {
      Unsupported(absl::StrCat("math intrinsic ", op, " on ", t.ToString()));
      return b_.ConstantInt(32, 0);
    }
    std::vector<uint32_t> args;
    for (const PrimExpr& a : call->args) args.push_back(Expr(a));
    if (args.empty() || !status_.ok()) return b_.ConstantInt(32, 0);
    std::optional<uint32_t> r = EmitFloatMath(w_, op, t.bits() == 64 ? 64 : 32, args);
    if (!r) {
      if (t.bits() == 64) {
        Unsupported(absl::StrCat("float64 ", op));
      } else {
        Unsupported(absl::StrCat("intrinsic ", op, " in device code"));
      }
      return args[0];
    }
    return RoundHalf(t, *r);
  }

  // The pointer to element `index` of a buffer.
  uint32_t ElementPointer(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) {
      Fail(absl::StrCat("buffer '", buffer->name, "' is not declared in the device kernel"));
      return 0;
    }
    if (indices.size() != 1) {
      Fail(absl::StrCat("buffer '", buffer->name, "' is not flattened"));
      return 0;
    }
    if (indices[0].dtype().lanes() != 1) {
      Unsupported(absl::StrCat("the vector access to buffer '", buffer->name, "'"));
      return 0;
    }
    const BufferAccess& access = it->second;
    uint32_t index = Expr(indices[0]);
    std::vector<uint32_t> chain{access.variable};
    if (access.through_block) chain.push_back(b_.ConstantInt(32, 0));
    chain.push_back(index);
    return w_.Value(Op::OpAccessChain, b_.TypePointer(access.storage, access.element_type), chain);
  }

  uint32_t Load(const tir::BufferLoadNode* op) {
    uint32_t ptr = ElementPointer(op->buffer.get(), op->indices);
    if (ptr == 0) return b_.ConstantInt(32, 0);
    const BufferAccess& access = buffers_.at(op->buffer.get());
    uint32_t raw = w_.Value(Op::OpLoad, access.element_type, {ptr});
    if (!access.through_block) return raw;  // local and shared arrays hold values
    if (access.dtype.is_bool()) return Bool(Op::OpINotEqual, raw, b_.ConstantInt(8, 0));
    if (IsHalf(access.dtype)) return w_.Value(Op::OpFConvert, b_.TypeFloat(32), {raw});
    return raw;
  }

  uint32_t Expr(const PrimExpr& e) {
    if (!status_.ok()) return b_.ConstantInt(32, 0);
    if (!e.defined()) {
      Fail("an undefined expression");
      return b_.ConstantInt(32, 0);
    }
    if (e.dtype().lanes() != 1) {
      Unsupported(absl::StrCat("vector expression ", tir::ToString(e)));
      return b_.ConstantInt(32, 0);
    }
    switch (e.kind()) {
      case ExprKind::kIntImm: return IntConst(e.dtype(), e.as<tir::IntImmNode>()->value);
      case ExprKind::kFloatImm: return FloatConst(e.dtype(), e.as<tir::FloatImmNode>()->value);
      case ExprKind::kVar: return VarValue(e.as<tir::VarNode>());
      case ExprKind::kNot: return w_.Value(Op::OpLogicalNot, b_.TypeBool(), {Expr(e.as<tir::NotNode>()->a)});
      case ExprKind::kBitNot: return w_.Value(Op::OpNot, ValueType(e.dtype()), {Expr(e.as<tir::BitNotNode>()->a)});
      case ExprKind::kSelect: {
        const auto* s = e.as<tir::SelectNode>();
        // Both sides are evaluated (TIR expressions have no effects; division checks made
        // the untaken side safe).
        uint32_t c = Expr(s->condition);
        uint32_t a = Expr(s->true_value);
        uint32_t b = Expr(s->false_value);
        return Select(e.dtype(), c, a, b);
      }
      case ExprKind::kCast: {
        const auto* c = e.as<tir::CastNode>();
        return Convert(Expr(c->value), c->value.dtype(), c->dtype());
      }
      case ExprKind::kReinterpret: {
        const auto* r = e.as<tir::ReinterpretNode>();
        return Reinterpret(Expr(r->value), r->value.dtype(), r->dtype());
      }
      case ExprKind::kCall: {
        const auto* call = e.as<tir::CallNode>();
        if (!tir::IsMathIntrinsic(call->op)) {
          Fail(absl::StrCat("intrinsic ", call->op, " cannot run in device code"));
          return b_.ConstantInt(32, 0);
        }
        return Math(call);
      }
      case ExprKind::kBufferLoad: return Load(e.as<tir::BufferLoadNode>());
      case ExprKind::kLet: {
        const auto* let = e.as<tir::LetNode>();
        values_[let->var.get()] = Expr(let->value);
        return Expr(let->body);
      }
      case ExprKind::kRamp:
      case ExprKind::kBroadcast: break;
      default: return Binary(e.as<tir::BinaryNode>());
    }
    Unsupported(absl::StrCat("expression ", tir::ToString(e)));
    return b_.ConstantInt(32, 0);
  }

  uint32_t VarValue(const tir::VarNode* var) {
    if (auto it = values_.find(var); it != values_.end()) return it->second;
    if (auto it = loop_vars_.find(var); it != loop_vars_.end()) {
      return w_.Value(Op::OpLoad, ValueType(var->dtype()), {it->second});
    }
    if (var->dtype().is_handle()) {
      Unsupported(absl::StrCat("the handle '", var->name, "' used as a value"));
    } else {
      Fail(absl::StrCat("variable '", var->name, "' is not defined in the device kernel"));
    }
    return b_.ConstantInt(32, 0);
  }

  // ------------------------------------------------------------------ statements
  uint32_t BuiltinComponent(bool local, uint32_t component_index, DataType type) {
    uint32_t& var = local ? shared_.local_invocation_id : shared_.workgroup_id;
    const uint32_t uvec3 = b_.TypeVector(b_.TypeInt(32), 3);
    if (var == 0) {
      var = b_.GlobalVariable(b_.TypePointer(spv::StorageClass::Input, uvec3), spv::StorageClass::Input);
      b_.Decorate(var, spv::Decoration::BuiltIn,
                  {static_cast<uint32_t>(local ? spv::BuiltIn::LocalInvocationId : spv::BuiltIn::WorkgroupId)});
      b_.Name(var, local ? "local_invocation_id" : "workgroup_id");
    }
    (local ? uses_local_id_ : uses_group_id_) = true;
    uint32_t vec = w_.Value(Op::OpLoad, uvec3, {var});
    uint32_t component = w_.Value(Op::OpCompositeExtract, b_.TypeInt(32), {vec, component_index});
    return Convert(component, DataType::UInt(32), type);
  }

  // if (condition) { then } [else { otherwise }], structured.
  template <typename Then, typename Else>
  void If(uint32_t condition, Then then, Else otherwise, bool has_else) {
    const uint32_t then_label = b_.NewId(), merge = b_.NewId();
    const uint32_t else_label = has_else ? b_.NewId() : merge;
    w_.Instruction(Op::OpSelectionMerge, {merge, static_cast<uint32_t>(spv::SelectionControlMask::MaskNone)});
    w_.Instruction(Op::OpBranchConditional, {condition, then_label, else_label});
    w_.StartBlock(then_label);
    then();
    w_.BranchTo(merge);
    if (has_else) {
      w_.StartBlock(else_label);
      otherwise();
      w_.BranchTo(merge);
    }
    w_.StartBlock(merge);
  }

  void EmitFor(const tir::ForNode* f) {
    const DataType t = f->loop_var.dtype();
    const uint32_t type = ValueType(t);
    const uint32_t min = Expr(f->min);
    const uint32_t end = w_.Value(Op::OpIAdd, type, {min, Expr(f->extent)});
    if (f->for_kind == tir::ForKind::kThreadBinding) {
      std::optional<std::pair<bool, uint32_t>> tag = ParseThreadTag(f->thread_tag);
      if (!tag) return Fail(absl::StrCat("unknown thread tag '", f->thread_tag, "'"));
      // The launch dimension is the largest extent bound to this index: guard.
      uint32_t v = w_.Value(Op::OpIAdd, type, {BuiltinComponent(tag->first, tag->second, t), min});
      values_[f->loop_var.get()] = v;
      If(Bool(t.is_uint() ? Op::OpULessThan : Op::OpSLessThan, v, end), [&] { EmitStmt(f->body); }, [] {}, false);
      return;
    }
    const uint32_t var = w_.LocalVariable(type);
    loop_vars_[f->loop_var.get()] = var;
    w_.Instruction(Op::OpStore, {var, min});
    const uint32_t header = b_.NewId(), check = b_.NewId(), body = b_.NewId(), next = b_.NewId(), merge = b_.NewId();
    w_.BranchTo(header);
    w_.StartBlock(header);
    const auto control = f->for_kind == tir::ForKind::kUnrolled ? spv::LoopControlMask::Unroll : spv::LoopControlMask::MaskNone;
    w_.Instruction(Op::OpLoopMerge, {merge, next, static_cast<uint32_t>(control)});
    w_.Instruction(Op::OpBranch, {check});
    w_.StartBlock(check);
    uint32_t i = w_.Value(Op::OpLoad, type, {var});
    w_.Instruction(Op::OpBranchConditional, {Bool(t.is_uint() ? Op::OpULessThan : Op::OpSLessThan, i, end), body, merge});
    w_.StartBlock(body);
    EmitStmt(f->body);
    w_.BranchTo(next);
    w_.StartBlock(next);
    uint32_t current = w_.Value(Op::OpLoad, type, {var});
    w_.Instruction(Op::OpStore, {var, w_.Value(Op::OpIAdd, type, {current, One(t)})});
    w_.Instruction(Op::OpBranch, {header});
    w_.StartBlock(merge);
  }

  void EmitAllocation(const tir::Buffer& b) {
    int64_t size = 1;
    for (const PrimExpr& d : b->shape) {
      std::optional<int64_t> v = d.as_int();
      if (!v) {
        return Unsupported(absl::StrCat("buffer '", b->name, "' of the symbolic size ", tir::ToString(d),
                                        " (device allocations need a constant size)"));
      }
      size *= *v;
    }
    if (b->scope != "local" && b->scope != "shared") {
      return Fail(absl::StrCat("buffer '", b->name, "' of scope ", b->scope, " allocated in device code"));
    }
    if (b->dtype.is_sub_byte() || b->dtype.is_bfloat()) {
      return Unsupported(absl::StrCat("type ", b->dtype.ToString(), " (buffer '", b->name, "')"));
    }
    BufferAccess access;
    access.dtype = b->dtype;
    access.element_type = ValueType(b->dtype);
    const uint32_t array =
        b_.TypeArray(access.element_type, b_.ConstantInt(32, static_cast<uint64_t>(std::max<int64_t>(size, 1))));
    if (b->scope == "shared") {
      access.storage = spv::StorageClass::Workgroup;
      access.variable = b_.GlobalVariable(b_.TypePointer(spv::StorageClass::Workgroup, array), spv::StorageClass::Workgroup);
    } else {
      access.storage = spv::StorageClass::Function;
      access.variable = w_.LocalVariable(array);
    }
    b_.Name(access.variable, b->name);
    buffers_[b.get()] = access;
  }

  // A buffer declared on a handle parameter: the storage buffer of its binding.
  void DeclareStorageBuffer(const tir::Buffer& b, const PrimExpr& data) {
    const auto* var = data.as<tir::VarNode>();
    auto binding = var ? handle_binding_.find(var) : handle_binding_.end();
    if (binding == handle_binding_.end()) {
      return Fail(absl::StrCat("buffer '", b->name, "' is not declared on a handle parameter of the kernel"));
    }
    if (b->dtype.is_sub_byte() || b->dtype.is_bfloat() || b->dtype.lanes() != 1) {
      return Unsupported(absl::StrCat("type ", b->dtype.ToString(), " (buffer '", b->name, "')"));
    }
    BufferAccess access;
    access.dtype = b->dtype;
    access.storage = spv::StorageClass::StorageBuffer;
    access.element_type = StorageType(b->dtype);
    access.through_block = true;
    const int bytes = b->dtype.is_bool() ? 1 : b->dtype.bits() / 8;
    if (bytes == 1) {
      b_.RequireCapability(spv::Capability::StorageBuffer8BitAccess);
      b_.RequireExtension("SPV_KHR_8bit_storage");
    }
    if (bytes == 2) b_.RequireCapability(spv::Capability::StorageBuffer16BitAccess);
    // One variable per binding and element type (a second view of a buffer in another type
    // aliases the same binding).
    uint32_t& variable = storage_buffers_[{binding->second, access.element_type}];
    if (variable == 0) {
      const uint32_t array = b_.TypeRuntimeArray(access.element_type, static_cast<uint32_t>(bytes));
      const uint32_t block = b_.TypeBlock({array}, {0});
      variable = b_.GlobalVariable(b_.TypePointer(spv::StorageClass::StorageBuffer, block), spv::StorageClass::StorageBuffer);
      b_.Decorate(variable, spv::Decoration::DescriptorSet, {0});
      b_.Decorate(variable, spv::Decoration::Binding, {binding->second});
      b_.Name(variable, b->name);
    }
    access.variable = variable;
    buffers_[b.get()] = access;
  }

  void EmitStmt(const Stmt& s) {
    if (!status_.ok() || !s.defined()) return;
    switch (s->kind()) {
      case tir::StmtKind::kBufferStore: {
        const auto* st = s.as<tir::BufferStoreNode>();
        uint32_t value = Expr(st->value);
        uint32_t ptr = ElementPointer(st->buffer.get(), st->indices);
        if (ptr == 0) return;
        const BufferAccess& access = buffers_.at(st->buffer.get());
        if (access.through_block && access.dtype.is_bool()) {
          value = Select(DataType::UInt(8), value, b_.ConstantInt(8, 1), b_.ConstantInt(8, 0));
        } else if (access.through_block && IsHalf(access.dtype)) {
          value = w_.Value(Op::OpFConvert, b_.TypeFloat(16), {value});
        }
        w_.Instruction(Op::OpStore, {ptr, value});
        return;
      }
      case tir::StmtKind::kFor: return EmitFor(s.as<tir::ForNode>());
      case tir::StmtKind::kIfThenElse: {
        const auto* i = s.as<tir::IfThenElseNode>();
        If(Expr(i->condition), [&] { EmitStmt(i->then_case); }, [&] { EmitStmt(i->else_case); },
           i->else_case.defined());
        return;
      }
      case tir::StmtKind::kSeqStmt:
        for (const Stmt& c : s.as<tir::SeqStmtNode>()->seq) EmitStmt(c);
        return;
      case tir::StmtKind::kAllocate: {
        const auto* a = s.as<tir::AllocateNode>();
        EmitAllocation(a->buffer);
        EmitStmt(a->body);
        return;
      }
      case tir::StmtKind::kLetStmt: {
        const auto* l = s.as<tir::LetStmtNode>();
        values_[l->var.get()] = Expr(l->value);
        EmitStmt(l->body);
        return;
      }
      case tir::StmtKind::kEvaluate: {
        const auto* e = s.as<tir::EvaluateNode>();
        if (const auto* call = e->value.as<tir::CallNode>(); call && call->op == "storage_sync") {
          // All invocations of the workgroup wait here, and their Workgroup-storage writes
          // before the barrier are visible to every invocation after it (acquire-release).
          const uint32_t workgroup = b_.ConstantInt(32, static_cast<uint32_t>(spv::Scope::Workgroup));
          const uint32_t semantics = b_.ConstantInt(
              32, static_cast<uint32_t>(spv::MemorySemanticsMask::AcquireRelease |
                                        spv::MemorySemanticsMask::WorkgroupMemory));
          w_.Instruction(Op::OpControlBarrier, {workgroup, workgroup, semantics});
          return;
        }
        if (const auto* call = e->value.as<tir::CallNode>(); call && call->op == "prefetch") return;  // a CPU hint
        if (!e->value.as<tir::IntImmNode>()) Expr(e->value);  // pure: only checked
        return;
      }
      case tir::StmtKind::kAssert: {
        // No message can leave the kernel: the invocation stops instead of computing garbage.
        const auto* a = s.as<tir::AssertNode>();
        If(w_.Value(Op::OpLogicalNot, b_.TypeBool(), {Expr(a->condition)}), [&] { w_.Instruction(Op::OpReturn, {}); },
           [] {}, false);
        return;
      }
      case tir::StmtKind::kDeclBuffer: {
        const auto* d = s.as<tir::DeclBufferNode>();
        DeclareStorageBuffer(d->buffer, d->data);
        EmitStmt(d->body);
        return;
      }
      case tir::StmtKind::kBlock: return Fail("a block in device code (lower_blocks must run first)");
    }
  }

  SpirvBuilder& b_;
  SharedIds& shared_;
  SpirvFunctionWriter w_{b_};
  bool uses_local_id_ = false, uses_group_id_ = false;
  std::map<const tir::VarNode*, uint32_t> handle_binding_;
  std::map<const tir::VarNode*, uint32_t> values_;     // SSA values: parameters, lets, thread indices
  std::map<const tir::VarNode*, uint32_t> loop_vars_;  // Function variables of serial loops
  std::map<const tir::BufferNode*, BufferAccess> buffers_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> storage_buffers_;  // (binding, element type) -> variable
  absl::Status status_;
};

}  // namespace

absl::StatusOr<SpirvModule> EmitSpirvModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels) {
  SpirvBuilder builder;
  SharedIds shared;
  SpirvModule module;
  for (const auto& [symbol, func] : kernels) {
    auto conv = func->attrs.find(tir::transform::kCallingConvAttr);
    if (conv == func->attrs.end() || conv->second != tir::transform::kDeviceKernel) {
      return absl::InvalidArgumentError(absl::StrCat("device kernel ", symbol,
                                                     ": not a lowered device kernel (calling_conv != device_kernel)"));
    }
    KernelEmitter emitter(builder, shared);
    absl::StatusOr<SpirvKernelInfo> info = emitter.Emit(symbol, func);
    if (!info.ok()) {
      return absl::Status(info.status().code(), absl::StrCat("device kernel ", symbol, ": ", info.status().message()));
    }
    module.kernels.push_back(*std::move(info));
  }
  const SpirvWords words = builder.Finish();
  module.bytes.resize(words.size() * 4);
  for (size_t i = 0; i < words.size(); ++i) {
    for (int b = 0; b < 4; ++b) module.bytes[4 * i + b] = static_cast<char>((words[i] >> (8 * b)) & 0xff);
  }
  return module;
}

}  // namespace kiln::codegen
