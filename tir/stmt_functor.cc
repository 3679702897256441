#include "tir/stmt_functor.h"

#include "support/check.h"

namespace kiln::tir {

namespace {

// Calls `visit` with the node of `expr` / `stmt` cast to its concrete class, so that the
// visitor and the mutator share one dispatch and an overload set picks the handler.
template <typename Visit>
decltype(auto) DispatchExpr(const PrimExpr& expr, Visit&& visit) {
  const PrimExprNode* node = expr.get();
  switch (expr.kind()) {
    case ExprKind::kIntImm: return visit(static_cast<const IntImmNode*>(node));
    case ExprKind::kFloatImm: return visit(static_cast<const FloatImmNode*>(node));
    case ExprKind::kVar: return visit(static_cast<const VarNode*>(node));
    case ExprKind::kNot: return visit(static_cast<const NotNode*>(node));
    case ExprKind::kBitNot: return visit(static_cast<const BitNotNode*>(node));
    case ExprKind::kReinterpret: return visit(static_cast<const ReinterpretNode*>(node));
    case ExprKind::kSelect: return visit(static_cast<const SelectNode*>(node));
    case ExprKind::kCast: return visit(static_cast<const CastNode*>(node));
    case ExprKind::kCall: return visit(static_cast<const CallNode*>(node));
    case ExprKind::kBufferLoad: return visit(static_cast<const BufferLoadNode*>(node));
    case ExprKind::kRamp: return visit(static_cast<const RampNode*>(node));
    case ExprKind::kBroadcast: return visit(static_cast<const BroadcastNode*>(node));
    case ExprKind::kLet: return visit(static_cast<const LetNode*>(node));
    default:
      KILN_CHECK(IsBinary(expr.kind())) << KindName(expr.kind());
      return visit(static_cast<const BinaryNode*>(node));
  }
}

template <typename Visit>
decltype(auto) DispatchStmt(const Stmt& stmt, Visit&& visit) {
  const StmtNode* node = stmt.get();
  switch (stmt.kind()) {
    case StmtKind::kBufferStore: return visit(static_cast<const BufferStoreNode*>(node));
    case StmtKind::kFor: return visit(static_cast<const ForNode*>(node));
    case StmtKind::kBlock: return visit(static_cast<const BlockNode*>(node));
    case StmtKind::kIfThenElse: return visit(static_cast<const IfThenElseNode*>(node));
    case StmtKind::kSeqStmt: return visit(static_cast<const SeqStmtNode*>(node));
    case StmtKind::kAllocate: return visit(static_cast<const AllocateNode*>(node));
    case StmtKind::kLetStmt: return visit(static_cast<const LetStmtNode*>(node));
    case StmtKind::kEvaluate: return visit(static_cast<const EvaluateNode*>(node));
    case StmtKind::kAssert: return visit(static_cast<const AssertNode*>(node));
    case StmtKind::kDeclBuffer: break;
  }
  KILN_CHECK(stmt.kind() == StmtKind::kDeclBuffer);
  return visit(static_cast<const DeclBufferNode*>(node));
}

}  // namespace

// ---------------------------------------------------------------- visitor

void StmtExprVisitor::VisitExpr(const PrimExpr& expr) {
  if (!expr.defined()) return;
  DispatchExpr(expr, [&](const auto* node) { VisitExpr_(node, expr); });
}

void StmtExprVisitor::VisitStmt(const Stmt& stmt) {
  if (!stmt.defined()) return;
  DispatchStmt(stmt, [&](const auto* node) { VisitStmt_(node, stmt); });
}

void StmtExprVisitor::VisitPrimFunc(const PrimFunc& func) {
  for (const PrimFuncParam& param : func->params) {
    if (param.is_buffer()) {
      VisitBufferDef(param.buffer);
    } else {
      VisitVarDef(param.var);
    }
  }
  VisitStmt(func->body);
}

void StmtExprVisitor::VisitExpr_(const IntImmNode*, const PrimExpr&) {}
void StmtExprVisitor::VisitExpr_(const FloatImmNode*, const PrimExpr&) {}
void StmtExprVisitor::VisitExpr_(const VarNode*, const PrimExpr&) {}

void StmtExprVisitor::VisitExpr_(const BinaryNode* op, const PrimExpr&) {
  VisitExpr(op->a);
  VisitExpr(op->b);
}

void StmtExprVisitor::VisitExpr_(const NotNode* op, const PrimExpr&) { VisitExpr(op->a); }
void StmtExprVisitor::VisitExpr_(const BitNotNode* op, const PrimExpr&) { VisitExpr(op->a); }
void StmtExprVisitor::VisitExpr_(const ReinterpretNode* op, const PrimExpr&) { VisitExpr(op->value); }

void StmtExprVisitor::VisitExpr_(const SelectNode* op, const PrimExpr&) {
  VisitExpr(op->condition);
  VisitExpr(op->true_value);
  VisitExpr(op->false_value);
}

void StmtExprVisitor::VisitExpr_(const CastNode* op, const PrimExpr&) { VisitExpr(op->value); }

void StmtExprVisitor::VisitExpr_(const CallNode* op, const PrimExpr&) {
  for (const PrimExpr& arg : op->args) VisitExpr(arg);
}

void StmtExprVisitor::VisitExpr_(const BufferLoadNode* op, const PrimExpr&) {
  VisitBufferUse(Buffer(op->buffer));
  for (const PrimExpr& index : op->indices) VisitExpr(index);
}

void StmtExprVisitor::VisitExpr_(const RampNode* op, const PrimExpr&) {
  VisitExpr(op->base);
  VisitExpr(op->stride);
}

void StmtExprVisitor::VisitExpr_(const BroadcastNode* op, const PrimExpr&) { VisitExpr(op->value); }

void StmtExprVisitor::VisitExpr_(const LetNode* op, const PrimExpr&) {
  VisitExpr(op->value);
  VisitVarDef(Var(op->var));
  VisitExpr(op->body);
}

void StmtExprVisitor::VisitStmt_(const BufferStoreNode* op, const Stmt&) {
  VisitBufferUse(op->buffer);
  VisitExpr(op->value);
  for (const PrimExpr& index : op->indices) VisitExpr(index);
}

void StmtExprVisitor::VisitStmt_(const ForNode* op, const Stmt&) {
  VisitExpr(op->min);
  VisitExpr(op->extent);
  VisitVarDef(op->loop_var);
  VisitStmt(op->body);
}

void StmtExprVisitor::VisitStmt_(const BlockNode* op, const Stmt&) {
  for (const IterVar& iv : op->iter_vars) {
    VisitExpr(iv.extent);
    VisitExpr(iv.value);
    VisitVarDef(iv.var);
  }
  VisitExpr(op->predicate);
  for (const Buffer& buffer : op->alloc_buffers) VisitBufferDef(buffer);
  VisitStmt(op->init);
  VisitStmt(op->body);
}

void StmtExprVisitor::VisitStmt_(const IfThenElseNode* op, const Stmt&) {
  VisitExpr(op->condition);
  VisitStmt(op->then_case);
  VisitStmt(op->else_case);
}

void StmtExprVisitor::VisitStmt_(const SeqStmtNode* op, const Stmt&) {
  for (const Stmt& s : op->seq) VisitStmt(s);
}

void StmtExprVisitor::VisitStmt_(const AllocateNode* op, const Stmt&) {
  VisitBufferDef(op->buffer);
  VisitStmt(op->body);
}

void StmtExprVisitor::VisitStmt_(const LetStmtNode* op, const Stmt&) {
  VisitExpr(op->value);
  VisitVarDef(op->var);
  VisitStmt(op->body);
}

void StmtExprVisitor::VisitStmt_(const EvaluateNode* op, const Stmt&) { VisitExpr(op->value); }

void StmtExprVisitor::VisitStmt_(const AssertNode* op, const Stmt&) {
  VisitExpr(op->condition);
  for (const PrimExpr& v : op->values) VisitExpr(v);
}

void StmtExprVisitor::VisitStmt_(const DeclBufferNode* op, const Stmt&) {
  VisitExpr(op->data);
  VisitBufferDef(op->buffer);
  VisitStmt(op->body);
}

void StmtExprVisitor::VisitVarDef(const Var&) {}

void StmtExprVisitor::VisitBufferDef(const Buffer& buffer) {
  for (const PrimExpr& dim : buffer->shape) VisitExpr(dim);
  for (const PrimExpr& stride : buffer->strides) VisitExpr(stride);
}

void StmtExprVisitor::VisitBufferUse(const Buffer&) {}

// ---------------------------------------------------------------- mutator

PrimExpr StmtExprMutator::VisitExpr(const PrimExpr& expr) {
  if (!expr.defined()) return expr;
  return DispatchExpr(expr, [&](const auto* node) { return VisitExpr_(node, expr); });
}

Stmt StmtExprMutator::VisitStmt(const Stmt& stmt) {
  if (!stmt.defined()) return stmt;
  return DispatchStmt(stmt, [&](const auto* node) { return VisitStmt_(node, stmt); });
}

PrimFunc StmtExprMutator::VisitPrimFunc(const PrimFunc& func) {
  bool changed = false;
  std::vector<PrimFuncParam> params;
  params.reserve(func->params.size());
  for (const PrimFuncParam& param : func->params) {
    PrimFuncParam p = param;
    if (param.is_buffer()) {
      p.buffer = VisitBuffer(param.buffer);
      changed |= !p.buffer.same_as(param.buffer);
    } else {
      p.var = DefineVar(param.var);
      changed |= !p.var.same_as(param.var);
    }
    params.push_back(std::move(p));
  }
  Stmt body = VisitStmt(func->body);
  if (!changed && body.same_as(func->body)) return func;
  return PrimFunc(std::move(params), std::move(body), func->attrs);
}

std::vector<PrimExpr> StmtExprMutator::VisitExprs(const std::vector<PrimExpr>& exprs, bool* changed) {
  std::vector<PrimExpr> out;
  out.reserve(exprs.size());
  for (const PrimExpr& e : exprs) {
    out.push_back(VisitExpr(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

PrimExpr StmtExprMutator::VisitExpr_(const IntImmNode*, const PrimExpr& self) { return self; }
PrimExpr StmtExprMutator::VisitExpr_(const FloatImmNode*, const PrimExpr& self) { return self; }

PrimExpr StmtExprMutator::VisitExpr_(const VarNode* op, const PrimExpr& self) {
  auto it = var_remap_.find(op);
  return it == var_remap_.end() ? self : it->second;
}

PrimExpr StmtExprMutator::VisitExpr_(const BinaryNode* op, const PrimExpr& self) {
  PrimExpr a = VisitExpr(op->a);
  PrimExpr b = VisitExpr(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return MakeBinary(op->kind(), std::move(a), std::move(b));
}

PrimExpr StmtExprMutator::VisitExpr_(const NotNode* op, const PrimExpr& self) {
  PrimExpr a = VisitExpr(op->a);
  if (a.same_as(op->a)) return self;
  return Not(std::move(a));
}

PrimExpr StmtExprMutator::VisitExpr_(const BitNotNode* op, const PrimExpr& self) {
  PrimExpr a = VisitExpr(op->a);
  if (a.same_as(op->a)) return self;
  return BitNot(std::move(a));
}

PrimExpr StmtExprMutator::VisitExpr_(const ReinterpretNode* op, const PrimExpr& self) {
  PrimExpr value = VisitExpr(op->value);
  if (value.same_as(op->value)) return self;
  return Reinterpret(op->dtype(), std::move(value));
}

PrimExpr StmtExprMutator::VisitExpr_(const SelectNode* op, const PrimExpr& self) {
  PrimExpr c = VisitExpr(op->condition);
  PrimExpr t = VisitExpr(op->true_value);
  PrimExpr f = VisitExpr(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return Select(std::move(c), std::move(t), std::move(f));
}

PrimExpr StmtExprMutator::VisitExpr_(const CastNode* op, const PrimExpr& self) {
  PrimExpr value = VisitExpr(op->value);
  if (value.same_as(op->value)) return self;
  return Cast(op->dtype(), std::move(value));
}

PrimExpr StmtExprMutator::VisitExpr_(const CallNode* op, const PrimExpr& self) {
  bool changed = false;
  std::vector<PrimExpr> args = VisitExprs(op->args, &changed);
  if (!changed) return self;
  return Call(op->op, std::move(args));
}

PrimExpr StmtExprMutator::VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) {
  Buffer buffer = VisitBuffer(Buffer(op->buffer));
  bool changed = buffer.node() != op->buffer;
  std::vector<PrimExpr> indices = VisitExprs(op->indices, &changed);
  if (!changed) return self;
  return buffer.Load(std::move(indices));
}

PrimExpr StmtExprMutator::VisitExpr_(const RampNode* op, const PrimExpr& self) {
  PrimExpr base = VisitExpr(op->base);
  PrimExpr stride = VisitExpr(op->stride);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return self;
  return Ramp(std::move(base), std::move(stride), op->lanes);
}

PrimExpr StmtExprMutator::VisitExpr_(const BroadcastNode* op, const PrimExpr& self) {
  PrimExpr value = VisitExpr(op->value);
  if (value.same_as(op->value)) return self;
  return Broadcast(std::move(value), op->lanes);
}

PrimExpr StmtExprMutator::VisitExpr_(const LetNode* op, const PrimExpr& self) {
  PrimExpr value = VisitExpr(op->value);
  Var old_var(op->var);
  Var var = DefineVar(old_var);
  PrimExpr body = VisitExpr(op->body);
  if (value.same_as(op->value) && var.same_as(old_var) && body.same_as(op->body)) return self;
  return Let(std::move(var), std::move(value), std::move(body));
}

Stmt StmtExprMutator::VisitStmt_(const BufferStoreNode* op, const Stmt& self) {
  Buffer buffer = VisitBuffer(op->buffer);
  PrimExpr value = VisitExpr(op->value);
  bool changed = !buffer.same_as(op->buffer) || !value.same_as(op->value);
  std::vector<PrimExpr> indices = VisitExprs(op->indices, &changed);
  if (!changed) return self;
  return BufferStore(std::move(buffer), std::move(value), std::move(indices));
}

Stmt StmtExprMutator::VisitStmt_(const ForNode* op, const Stmt& self) {
  PrimExpr min = VisitExpr(op->min);
  PrimExpr extent = VisitExpr(op->extent);
  Var loop_var = DefineVar(op->loop_var);
  Stmt body = VisitStmt(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && loop_var.same_as(op->loop_var) &&
      body.same_as(op->body)) {
    return self;
  }
  return For(std::move(loop_var), std::move(min), std::move(extent), op->for_kind, std::move(body),
             op->thread_tag);
}

Stmt StmtExprMutator::VisitStmt_(const BlockNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<IterVar> iter_vars;
  iter_vars.reserve(op->iter_vars.size());
  for (const IterVar& iv : op->iter_vars) {
    IterVar out = iv;
    out.extent = VisitExpr(iv.extent);
    out.value = VisitExpr(iv.value);
    out.var = DefineVar(iv.var);
    changed |= !out.extent.same_as(iv.extent) || !out.value.same_as(iv.value) || !out.var.same_as(iv.var);
    iter_vars.push_back(std::move(out));
  }
  PrimExpr predicate = VisitExpr(op->predicate);
  changed |= !predicate.same_as(op->predicate);
  std::vector<Buffer> alloc_buffers;
  alloc_buffers.reserve(op->alloc_buffers.size());
  for (const Buffer& buffer : op->alloc_buffers) {
    alloc_buffers.push_back(VisitBuffer(buffer));
    changed |= !alloc_buffers.back().same_as(buffer);
  }
  Stmt init = VisitStmt(op->init);
  Stmt body = VisitStmt(op->body);
  changed |= !init.same_as(op->init) || !body.same_as(op->body);
  if (!changed) return self;
  return Block(op->name, std::move(iter_vars), std::move(body), std::move(init), std::move(predicate),
               std::move(alloc_buffers));
}

Stmt StmtExprMutator::VisitStmt_(const IfThenElseNode* op, const Stmt& self) {
  PrimExpr condition = VisitExpr(op->condition);
  Stmt then_case = VisitStmt(op->then_case);
  Stmt else_case = VisitStmt(op->else_case);
  if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
      else_case.same_as(op->else_case)) {
    return self;
  }
  return IfThenElse(std::move(condition), std::move(then_case), std::move(else_case));
}

Stmt StmtExprMutator::VisitStmt_(const SeqStmtNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> seq;
  seq.reserve(op->seq.size());
  for (const Stmt& s : op->seq) {
    seq.push_back(VisitStmt(s));
    changed |= !seq.back().same_as(s);
  }
  if (!changed) return self;
  return SeqStmt(std::move(seq));
}

Stmt StmtExprMutator::VisitStmt_(const AllocateNode* op, const Stmt& self) {
  Buffer buffer = VisitBuffer(op->buffer);
  Stmt body = VisitStmt(op->body);
  if (buffer.same_as(op->buffer) && body.same_as(op->body)) return self;
  return Allocate(std::move(buffer), std::move(body));
}

Stmt StmtExprMutator::VisitStmt_(const LetStmtNode* op, const Stmt& self) {
  PrimExpr value = VisitExpr(op->value);
  Var var = DefineVar(op->var);
  Stmt body = VisitStmt(op->body);
  if (value.same_as(op->value) && var.same_as(op->var) && body.same_as(op->body)) return self;
  return LetStmt(std::move(var), std::move(value), std::move(body));
}

Stmt StmtExprMutator::VisitStmt_(const EvaluateNode* op, const Stmt& self) {
  PrimExpr value = VisitExpr(op->value);
  if (value.same_as(op->value)) return self;
  return Evaluate(std::move(value));
}

Stmt StmtExprMutator::VisitStmt_(const AssertNode* op, const Stmt& self) {
  PrimExpr condition = VisitExpr(op->condition);
  bool changed = !condition.same_as(op->condition);
  std::vector<PrimExpr> values = VisitExprs(op->values, &changed);
  if (!changed) return self;
  return Assert(std::move(condition), op->message, std::move(values));
}

Stmt StmtExprMutator::VisitStmt_(const DeclBufferNode* op, const Stmt& self) {
  PrimExpr data = VisitExpr(op->data);
  Buffer buffer = VisitBuffer(op->buffer);
  Stmt body = VisitStmt(op->body);
  if (data.same_as(op->data) && buffer.same_as(op->buffer) && body.same_as(op->body)) return self;
  return DeclBuffer(std::move(buffer), std::move(data), std::move(body));
}

Var StmtExprMutator::VisitVarDef(const Var& var) { return var; }

Var StmtExprMutator::DefineVar(const Var& var) {
  Var result = VisitVarDef(var);
  if (!result.same_as(var)) var_remap_[var.get()] = result;
  return result;
}

Buffer StmtExprMutator::VisitBuffer(const Buffer& buffer) {
  auto it = buffer_remap_.find(buffer.get());
  if (it != buffer_remap_.end()) return it->second;
  bool changed = false;
  std::vector<PrimExpr> shape = VisitExprs(buffer->shape, &changed);
  std::vector<PrimExpr> strides = VisitExprs(buffer->strides, &changed);
  Buffer result = buffer;
  if (changed) {
    result = Buffer(buffer->name, buffer->dtype, std::move(shape), std::move(strides), buffer->scope);
  }
  buffer_remap_.emplace(buffer.get(), result);
  return result;
}

// ---------------------------------------------------------------- Substitute

namespace {

class Substituter : public StmtExprMutator {
 public:
  explicit Substituter(const VarMap& vmap) { var_remap_ = vmap; }
};

}  // namespace

PrimExpr Substitute(const PrimExpr& expr, const VarMap& vmap) {
  if (vmap.empty()) return expr;
  return Substituter(vmap).VisitExpr(expr);
}

Stmt Substitute(const Stmt& stmt, const VarMap& vmap) {
  if (vmap.empty()) return stmt;
  return Substituter(vmap).VisitStmt(stmt);
}

void VarUseCollector::VisitExpr_(const VarNode* op, const PrimExpr& self) {
  if (seen_.insert(op).second) vars_.push_back(Var(std::static_pointer_cast<const VarNode>(self.node())));
}

void VarUseCollector::Add(const Var& var) {
  if (seen_.insert(var.get()).second) vars_.push_back(var);
}

}  // namespace kiln::tir
