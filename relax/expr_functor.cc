#include "relax/expr_functor.h"

#include <memory>

#include "support/check.h"

namespace kiln::relax {

namespace {

// Calls f(static_cast<const XNode*>(node)) for the node's kind.
template <typename F>
decltype(auto) Dispatch(const Expr& expr, F&& f) {
  const ExprNode* node = expr.get();
  switch (expr.kind()) {
    case ExprKind::kVar:
    case ExprKind::kDataflowVar: return f(static_cast<const VarNode*>(node));
    case ExprKind::kConstant: return f(static_cast<const ConstantNode*>(node));
    case ExprKind::kShapeExpr: return f(static_cast<const ShapeExprNode*>(node));
    case ExprKind::kPrimValue: return f(static_cast<const PrimValueNode*>(node));
    case ExprKind::kStringImm: return f(static_cast<const StringImmNode*>(node));
    case ExprKind::kTuple: return f(static_cast<const TupleNode*>(node));
    case ExprKind::kTupleGetItem: return f(static_cast<const TupleGetItemNode*>(node));
    case ExprKind::kCall: return f(static_cast<const CallNode*>(node));
    case ExprKind::kIf: return f(static_cast<const IfNode*>(node));
    case ExprKind::kSeqExpr: return f(static_cast<const SeqExprNode*>(node));
    case ExprKind::kFunction: return f(static_cast<const FunctionNode*>(node));
    case ExprKind::kGlobalVar: return f(static_cast<const GlobalVarNode*>(node));
    case ExprKind::kOp: return f(static_cast<const OpNode*>(node));
    case ExprKind::kExternFunc: return f(static_cast<const ExternFuncNode*>(node));
  }
  KILN_UNREACHABLE();
  return f(static_cast<const OpNode*>(node));
}

}  // namespace

// ---------------------------------------------------------------- visitor

void ExprVisitor::VisitExpr(const Expr& expr) {
  if (!expr.defined()) return;
  Dispatch(expr, [&](const auto* node) { VisitExpr_(node, expr); });
}

void ExprVisitor::VisitExpr_(const VarNode*, const Expr&) {}

void ExprVisitor::VisitExpr_(const ConstantNode* op, const Expr&) { VisitStructInfo(op->struct_info()); }

void ExprVisitor::VisitExpr_(const ShapeExprNode* op, const Expr&) {
  for (const PrimExpr& value : op->values) VisitPrimExpr(value);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const PrimValueNode* op, const Expr&) {
  VisitPrimExpr(op->value);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const StringImmNode* op, const Expr&) { VisitStructInfo(op->struct_info()); }

void ExprVisitor::VisitExpr_(const TupleNode* op, const Expr&) {
  for (const Expr& field : op->fields) VisitExpr(field);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const TupleGetItemNode* op, const Expr&) {
  VisitExpr(op->tuple);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const CallNode* op, const Expr&) {
  VisitExpr(op->op);
  for (const Expr& arg : op->args) VisitExpr(arg);
  for (const StructInfo& sinfo : op->sinfo_args) VisitStructInfo(sinfo);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const IfNode* op, const Expr&) {
  VisitExpr(op->condition);
  VisitExpr(op->true_branch);
  VisitExpr(op->false_branch);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const SeqExprNode* op, const Expr&) {
  for (const BindingBlock& block : op->blocks) VisitBindingBlock(block);
  VisitExpr(op->body);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const FunctionNode* op, const Expr&) {
  for (const Var& param : op->params) VisitVarDef(param);
  VisitStructInfo(op->ret_struct_info);
  VisitExpr(op->body);
  VisitStructInfo(op->struct_info());
}

void ExprVisitor::VisitExpr_(const GlobalVarNode* op, const Expr&) { VisitStructInfo(op->struct_info()); }
void ExprVisitor::VisitExpr_(const OpNode*, const Expr&) {}
void ExprVisitor::VisitExpr_(const ExternFuncNode* op, const Expr&) { VisitStructInfo(op->struct_info()); }

void ExprVisitor::VisitBindingBlock(const BindingBlock& block) {
  for (const Binding& binding : block.bindings) VisitBinding(binding);
}

void ExprVisitor::VisitBinding(const Binding& binding) {
  VisitExpr(binding.value);
  if (binding.is_match_cast()) VisitStructInfo(binding.match_cast_sinfo);
  VisitVarDef(binding.var);
}

void ExprVisitor::VisitVarDef(const Var& var) { VisitStructInfo(var.struct_info()); }

void ExprVisitor::VisitStructInfo(const StructInfo& sinfo) {
  if (!sinfo.defined()) return;
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: return;
    case StructInfoKind::kPrim: {
      const auto* prim = sinfo.as<PrimStructInfoNode>();
      if (prim->value.defined()) VisitPrimExpr(prim->value);
      return;
    }
    case StructInfoKind::kShape: {
      const auto* shape = sinfo.as<ShapeStructInfoNode>();
      if (shape->values) {
        for (const PrimExpr& value : *shape->values) VisitPrimExpr(value);
      }
      return;
    }
    case StructInfoKind::kTensor: {
      const auto* tensor = sinfo.as<TensorStructInfoNode>();
      if (tensor->shape) {
        for (const PrimExpr& dim : *tensor->shape) VisitPrimExpr(dim);
      }
      return;
    }
    case StructInfoKind::kTuple:
      for (const StructInfo& field : sinfo.as<TupleStructInfoNode>()->fields) VisitStructInfo(field);
      return;
    case StructInfoKind::kFunc: {
      const auto* func = sinfo.as<FuncStructInfoNode>();
      if (func->params) {
        for (const StructInfo& param : *func->params) VisitStructInfo(param);
      }
      VisitStructInfo(func->ret);
      return;
    }
  }
}

void ExprVisitor::VisitPrimExpr(const PrimExpr&) {}

// ---------------------------------------------------------------- mutator

Expr ExprMutator::VisitExpr(const Expr& expr) {
  if (!expr.defined()) return expr;
  return Dispatch(expr, [&](const auto* node) -> Expr { return VisitExpr_(node, expr); });
}

std::vector<Expr> ExprMutator::VisitExprs(const std::vector<Expr>& exprs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr& e : exprs) {
    out.push_back(VisitExpr(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

std::vector<PrimExpr> ExprMutator::VisitPrimExprs(const std::vector<PrimExpr>& exprs, bool* changed) {
  std::vector<PrimExpr> out;
  out.reserve(exprs.size());
  for (const PrimExpr& e : exprs) {
    out.push_back(VisitPrimExpr(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

std::vector<StructInfo> ExprMutator::VisitStructInfos(const std::vector<StructInfo>& sinfos,
                                                      bool* changed) {
  std::vector<StructInfo> out;
  out.reserve(sinfos.size());
  for (const StructInfo& s : sinfos) {
    out.push_back(VisitStructInfo(s));
    if (!out.back().same_as(s)) *changed = true;
  }
  return out;
}

Expr ExprMutator::VisitExpr_(const VarNode* op, const Expr& self) {
  auto it = var_remap_.find(op);
  return it == var_remap_.end() ? self : it->second;
}

Expr ExprMutator::VisitExpr_(const ConstantNode* op, const Expr& self) {
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<ConstantNode>(op->data, std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const ShapeExprNode* op, const Expr& self) {
  bool changed = false;
  std::vector<PrimExpr> values = VisitPrimExprs(op->values, &changed);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (!changed && sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<ShapeExprNode>(std::move(values), std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const PrimValueNode* op, const Expr& self) {
  PrimExpr value = VisitPrimExpr(op->value);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (value.same_as(op->value) && sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<PrimValueNode>(std::move(value), std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const StringImmNode* op, const Expr& self) {
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<StringImmNode>(op->value, std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const TupleNode* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> fields = VisitExprs(op->fields, &changed);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (!changed && sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<TupleNode>(std::move(fields), std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const TupleGetItemNode* op, const Expr& self) {
  Expr tuple = VisitExpr(op->tuple);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (tuple.same_as(op->tuple) && sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<TupleGetItemNode>(std::move(tuple), op->index, std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const CallNode* op, const Expr& self) {
  Expr callee = VisitExpr(op->op);
  bool changed = !callee.same_as(op->op);
  std::vector<Expr> args = VisitExprs(op->args, &changed);
  std::vector<StructInfo> sinfo_args = VisitStructInfos(op->sinfo_args, &changed);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (!changed && sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<CallNode>(std::move(callee), std::move(args), op->attrs,
                                         std::move(sinfo_args), std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const IfNode* op, const Expr& self) {
  Expr condition = VisitExpr(op->condition);
  Expr true_branch = VisitExpr(op->true_branch);
  Expr false_branch = VisitExpr(op->false_branch);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (condition.same_as(op->condition) && true_branch.same_as(op->true_branch) &&
      false_branch.same_as(op->false_branch) && sinfo.same_as(op->struct_info())) {
    return self;
  }
  return Expr(std::make_shared<IfNode>(std::move(condition), std::move(true_branch),
                                       std::move(false_branch), std::move(sinfo)));
}

namespace {

bool SameBindings(const std::vector<Binding>& a, const std::vector<Binding>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].var.same_as(b[i].var) || !a[i].value.same_as(b[i].value) ||
        !a[i].match_cast_sinfo.same_as(b[i].match_cast_sinfo)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Expr ExprMutator::VisitExpr_(const SeqExprNode* op, const Expr& self) {
  bool changed = false;
  std::vector<BindingBlock> blocks;
  blocks.reserve(op->blocks.size());
  for (const BindingBlock& block : op->blocks) {
    blocks.push_back(VisitBindingBlock(block));
    changed |= blocks.back().dataflow != block.dataflow ||
               !SameBindings(blocks.back().bindings, block.bindings);
  }
  Expr body = VisitExpr(op->body);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (!changed && body.same_as(op->body) && sinfo.same_as(op->struct_info())) return self;
  return Expr(std::make_shared<SeqExprNode>(std::move(blocks), std::move(body), std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const FunctionNode* op, const Expr& self) {
  bool changed = false;
  std::vector<Var> params;
  params.reserve(op->params.size());
  for (const Var& param : op->params) {
    params.push_back(DefineVar(param));
    changed |= !params.back().same_as(param);
  }
  StructInfo ret = VisitStructInfo(op->ret_struct_info);
  Expr body = VisitExpr(op->body);
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  changed |= !ret.same_as(op->ret_struct_info) || !body.same_as(op->body);
  if (!changed && sinfo.same_as(op->struct_info())) return self;
  if (changed) {
    // The function's struct info is its signature: rebuild it from the new parts.
    return Function(std::move(params), std::move(body), std::move(ret), op->is_pure, op->attrs);
  }
  return Expr(std::make_shared<FunctionNode>(std::move(params), std::move(body), std::move(ret),
                                             op->is_pure, op->attrs, std::move(sinfo)));
}

Expr ExprMutator::VisitExpr_(const GlobalVarNode* op, const Expr& self) {
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (sinfo.same_as(op->struct_info())) return self;
  return GlobalVar(op->name, std::move(sinfo));
}

Expr ExprMutator::VisitExpr_(const OpNode*, const Expr& self) { return self; }

Expr ExprMutator::VisitExpr_(const ExternFuncNode* op, const Expr& self) {
  StructInfo sinfo = VisitStructInfo(op->struct_info());
  if (sinfo.same_as(op->struct_info())) return self;
  return ExternFunc(op->symbol, std::move(sinfo));
}

BindingBlock ExprMutator::VisitBindingBlock(const BindingBlock& block) {
  BindingBlock out;
  out.dataflow = block.dataflow;
  out.bindings.reserve(block.bindings.size());
  for (const Binding& binding : block.bindings) out.bindings.push_back(VisitBinding(binding));
  return out;
}

Binding ExprMutator::VisitBinding(const Binding& binding) {
  Binding out;
  out.value = VisitExpr(binding.value);
  out.match_cast_sinfo = VisitStructInfo(binding.match_cast_sinfo);
  out.var = DefineVar(binding.var);
  return out;
}

Var ExprMutator::DefineVar(const Var& var) {
  Var result = VisitVarDef(var);
  if (!result.same_as(var)) var_remap_[var.get()] = result;
  return result;
}

Var ExprMutator::VisitVarDef(const Var& var) {
  StructInfo sinfo = VisitStructInfo(var.struct_info());
  if (sinfo.same_as(var.struct_info())) return var;
  return Var(var.name_hint(), std::move(sinfo), var.is_dataflow());
}

StructInfo ExprMutator::VisitStructInfo(const StructInfo& sinfo) {
  if (!sinfo.defined()) return sinfo;
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: return sinfo;
    case StructInfoKind::kPrim: {
      const auto* prim = sinfo.as<PrimStructInfoNode>();
      if (!prim->value.defined()) return sinfo;
      PrimExpr value = VisitPrimExpr(prim->value);
      if (value.same_as(prim->value)) return sinfo;
      return PrimSInfo(prim->dtype, std::move(value));
    }
    case StructInfoKind::kShape: {
      const auto* shape = sinfo.as<ShapeStructInfoNode>();
      if (!shape->values) return sinfo;
      bool changed = false;
      std::vector<PrimExpr> values = VisitPrimExprs(*shape->values, &changed);
      if (!changed) return sinfo;
      return ShapeSInfo(std::move(values));
    }
    case StructInfoKind::kTensor: {
      const auto* tensor = sinfo.as<TensorStructInfoNode>();
      if (!tensor->shape) return sinfo;
      bool changed = false;
      std::vector<PrimExpr> shape = VisitPrimExprs(*tensor->shape, &changed);
      if (!changed) return sinfo;
      return TensorSInfo(std::move(shape), tensor->dtype, tensor->device);
    }
    case StructInfoKind::kTuple: {
      bool changed = false;
      std::vector<StructInfo> fields =
          VisitStructInfos(sinfo.as<TupleStructInfoNode>()->fields, &changed);
      if (!changed) return sinfo;
      return TupleSInfo(std::move(fields));
    }
    case StructInfoKind::kFunc: {
      const auto* func = sinfo.as<FuncStructInfoNode>();
      bool changed = false;
      std::vector<StructInfo> params;
      if (func->params) params = VisitStructInfos(*func->params, &changed);
      StructInfo ret = VisitStructInfo(func->ret);
      if (!changed && ret.same_as(func->ret)) return sinfo;
      if (!func->params) return OpaqueFuncSInfo(std::move(ret), func->pure);
      return FuncSInfo(std::move(params), std::move(ret), func->pure);
    }
  }
  KILN_UNREACHABLE();
  return sinfo;
}

PrimExpr ExprMutator::VisitPrimExpr(const PrimExpr& expr) { return expr; }

}  // namespace kiln::relax
