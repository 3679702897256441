#include "tir/structural_hash.h"

#include <cstring>
#include <initializer_list>

#include "support/check.h"
#include "support/hash.h"

namespace kiln::tir {

namespace {

// Tags keep different kinds of thing with equal payloads apart.
enum Tag : uint64_t {
  kUndefined = 0x5eed0001,
  kExprTag,
  kBoundVar,
  kDefVar,
  kFreeVar,
  kStmtTag,
  kBoundBuffer,
  kDefBuffer,
  kFreeBuffer,
  kPrimFuncTag,
  kNoBound,
};

uint64_t Mix(std::initializer_list<uint64_t> values) {
  uint64_t seed = 0;
  for (uint64_t v : values) seed = support::HashCombine(seed, v);
  return seed;
}

uint64_t HashBound(const std::optional<int64_t>& bound) {
  return bound ? Mix({1, static_cast<uint64_t>(*bound)}) : kNoBound;
}

uint64_t FloatBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace

uint64_t StructuralHasher::HashString(std::string_view text) {
  return support::Fnv1a64(text.data(), text.size());
}

uint64_t StructuralHasher::HashDataType(DataType dtype) {
  return (static_cast<uint64_t>(dtype.code()) << 32) | (static_cast<uint64_t>(dtype.bits()) << 16) |
         static_cast<uint64_t>(dtype.lanes());
}

uint64_t StructuralHasher::HashExpr(const PrimExpr& expr) { return Expr(expr, false); }
uint64_t StructuralHasher::HashDefExpr(const PrimExpr& expr) { return Expr(expr, true); }

uint64_t StructuralHasher::DefineVar(const VarNode* var) {
  auto it = var_index_.find(var);
  if (it != var_index_.end()) return Mix({kBoundVar, it->second});
  uint64_t index = var_index_.size();
  var_index_.emplace(var, index);
  return Mix({kDefVar, index, HashDataType(var->dtype()), HashBound(var->lower_bound),
              HashBound(var->upper_bound)});
}

uint64_t StructuralHasher::VarUse(const VarNode* var, bool define) {
  auto it = var_index_.find(var);
  if (it != var_index_.end()) return Mix({kBoundVar, it->second});
  if (define) return DefineVar(var);
  return Mix({kFreeVar, HashString(var->name), HashDataType(var->dtype())});
}

uint64_t StructuralHasher::Exprs(const std::vector<PrimExpr>& exprs, bool define) {
  uint64_t h = exprs.size();
  for (const PrimExpr& e : exprs) h = support::HashCombine(h, Expr(e, define));
  return h;
}

uint64_t StructuralHasher::Expr(const PrimExpr& expr, bool define) {
  if (!expr.defined()) return kUndefined;
  uint64_t head = Mix({kExprTag, static_cast<uint64_t>(expr.kind()), HashDataType(expr.dtype())});
  switch (expr.kind()) {
    case ExprKind::kIntImm:
      return Mix({head, static_cast<uint64_t>(expr.as<IntImmNode>()->value)});
    case ExprKind::kFloatImm:
      return Mix({head, FloatBits(expr.as<FloatImmNode>()->value)});
    case ExprKind::kVar:
      return Mix({head, VarUse(expr.as<VarNode>(), define)});
    case ExprKind::kNot:
      return Mix({head, Expr(expr.as<NotNode>()->a, define)});
    case ExprKind::kBitNot:
      return Mix({head, Expr(expr.as<BitNotNode>()->a, define)});
    case ExprKind::kReinterpret:
      return Mix({head, Expr(expr.as<ReinterpretNode>()->value, define)});
    case ExprKind::kSelect: {
      const auto* x = expr.as<SelectNode>();
      uint64_t c = Expr(x->condition, define);
      uint64_t t = Expr(x->true_value, define);
      return Mix({head, c, t, Expr(x->false_value, define)});
    }
    case ExprKind::kCast:
      return Mix({head, Expr(expr.as<CastNode>()->value, define)});
    case ExprKind::kCall: {
      const auto* x = expr.as<CallNode>();
      return Mix({head, HashString(x->op), Exprs(x->args, define)});
    }
    case ExprKind::kBufferLoad: {
      const auto* x = expr.as<BufferLoadNode>();
      uint64_t buffer = HashBufferUse(x->buffer.get());
      return Mix({head, buffer, Exprs(x->indices, define)});
    }
    case ExprKind::kRamp: {
      const auto* x = expr.as<RampNode>();
      uint64_t base = Expr(x->base, define);
      return Mix({head, static_cast<uint64_t>(x->lanes), base, Expr(x->stride, define)});
    }
    case ExprKind::kBroadcast: {
      const auto* x = expr.as<BroadcastNode>();
      return Mix({head, static_cast<uint64_t>(x->lanes), Expr(x->value, define)});
    }
    case ExprKind::kLet: {
      const auto* x = expr.as<LetNode>();
      uint64_t value = Expr(x->value, define);
      uint64_t var = DefineVar(x->var.get());
      return Mix({head, value, var, Expr(x->body, define)});
    }
    default: {
      KILN_CHECK(IsBinary(expr.kind())) << KindName(expr.kind());
      const auto* x = expr.as<BinaryNode>();
      uint64_t a = Expr(x->a, define);
      return Mix({head, a, Expr(x->b, define)});
    }
  }
}

uint64_t StructuralHasher::DefineBuffer(const BufferNode* buffer, bool define_shape_vars) {
  auto it = buffer_index_.find(buffer);
  if (it != buffer_index_.end()) return Mix({kBoundBuffer, it->second});
  uint64_t shape = Exprs(buffer->shape, define_shape_vars);
  uint64_t strides = Exprs(buffer->strides, define_shape_vars);
  uint64_t index = buffer_index_.size();
  buffer_index_.emplace(buffer, index);
  return Mix({kDefBuffer, index, HashDataType(buffer->dtype), HashString(buffer->scope), shape, strides});
}

uint64_t StructuralHasher::HashBufferUse(const BufferNode* buffer) {
  auto it = buffer_index_.find(buffer);
  if (it != buffer_index_.end()) return Mix({kBoundBuffer, it->second});
  return Mix({kFreeBuffer, HashString(buffer->name)});
}

uint64_t StructuralHasher::HashStmt(const Stmt& stmt) {
  if (!stmt.defined()) return kUndefined;
  uint64_t head = Mix({kStmtTag, static_cast<uint64_t>(stmt.kind())});
  switch (stmt.kind()) {
    case StmtKind::kBufferStore: {
      const auto* x = stmt.as<BufferStoreNode>();
      uint64_t buffer = HashBufferUse(x->buffer.get());
      uint64_t value = HashExpr(x->value);
      return Mix({head, buffer, value, Exprs(x->indices, false)});
    }
    case StmtKind::kFor: {
      const auto* x = stmt.as<ForNode>();
      uint64_t min = HashExpr(x->min);
      uint64_t extent = HashExpr(x->extent);
      uint64_t var = DefineVar(x->loop_var.get());
      return Mix({head, min, extent, static_cast<uint64_t>(x->for_kind), HashString(x->thread_tag), var,
                  HashStmt(x->body)});
    }
    case StmtKind::kBlock: {
      const auto* x = stmt.as<BlockNode>();
      uint64_t h = Mix({head, HashString(x->name), x->iter_vars.size()});
      for (const IterVar& iv : x->iter_vars) {
        uint64_t extent = HashExpr(iv.extent);
        uint64_t value = HashExpr(iv.value);
        uint64_t var = DefineVar(iv.var.get());
        h = Mix({h, static_cast<uint64_t>(iv.type), extent, value, var});
      }
      h = Mix({h, HashExpr(x->predicate), x->alloc_buffers.size()});
      for (const Buffer& buffer : x->alloc_buffers) h = Mix({h, DefineBuffer(buffer.get(), false)});
      uint64_t init = HashStmt(x->init);
      return Mix({h, init, HashStmt(x->body)});
    }
    case StmtKind::kIfThenElse: {
      const auto* x = stmt.as<IfThenElseNode>();
      uint64_t condition = HashExpr(x->condition);
      uint64_t then_case = HashStmt(x->then_case);
      return Mix({head, condition, then_case, HashStmt(x->else_case)});
    }
    case StmtKind::kSeqStmt: {
      const auto* x = stmt.as<SeqStmtNode>();
      uint64_t h = Mix({head, x->seq.size()});
      for (const Stmt& s : x->seq) h = Mix({h, HashStmt(s)});
      return h;
    }
    case StmtKind::kAllocate: {
      const auto* x = stmt.as<AllocateNode>();
      uint64_t buffer = DefineBuffer(x->buffer.get(), false);
      return Mix({head, buffer, HashStmt(x->body)});
    }
    case StmtKind::kDeclBuffer: {
      const auto* x = stmt.as<DeclBufferNode>();
      uint64_t data = HashExpr(x->data);
      uint64_t buffer = DefineBuffer(x->buffer.get(), false);
      return Mix({head, data, buffer, HashStmt(x->body)});
    }
    case StmtKind::kLetStmt: {
      const auto* x = stmt.as<LetStmtNode>();
      uint64_t value = HashExpr(x->value);
      uint64_t var = DefineVar(x->var.get());
      return Mix({head, value, var, HashStmt(x->body)});
    }
    case StmtKind::kEvaluate:
      return Mix({head, HashExpr(stmt.as<EvaluateNode>()->value)});
    case StmtKind::kAssert: {
      const auto* x = stmt.as<AssertNode>();
      uint64_t h = Mix({head, HashExpr(x->condition), HashString(x->message), x->values.size()});
      for (const PrimExpr& v : x->values) h = Mix({h, HashExpr(v)});
      return h;
    }
  }
  KILN_UNREACHABLE();
  return 0;
}

uint64_t StructuralHasher::HashPrimFunc(const PrimFunc& func) {
  if (!func.defined()) return kUndefined;
  uint64_t h = Mix({kPrimFuncTag, func->params.size()});
  for (const PrimFuncParam& param : func->params) {
    h = Mix({h, param.is_buffer() ? DefineBuffer(param.buffer.get(), true) : DefineVar(param.var.get())});
  }
  for (const auto& [key, value] : func->attrs) h = Mix({h, HashString(key), HashString(value)});
  return Mix({h, HashStmt(func->body)});
}

uint64_t StructuralHash(const PrimExpr& expr) { return StructuralHasher().HashExpr(expr); }
uint64_t StructuralHash(const Stmt& stmt) { return StructuralHasher().HashStmt(stmt); }
uint64_t StructuralHash(const PrimFunc& func) { return StructuralHasher().HashPrimFunc(func); }

}  // namespace kiln::tir
