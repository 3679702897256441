#include "relax/expr.h"

#include "support/check.h"

namespace kiln::relax {

Var::Var(std::string name_hint, StructInfo struct_info, bool dataflow)
    : Expr(std::make_shared<VarNode>(std::move(name_hint), std::move(struct_info), dataflow)) {}

int64_t ConstantData::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expr Constant(ConstantData data) {
  if (data.is_external()) {
    KILN_CHECK(data.bytes == nullptr) << "an external constant has no bytes";
  } else {
    KILN_CHECK(data.bytes != nullptr);
    KILN_CHECK_EQ(static_cast<int64_t>(data.bytes->size()), data.numel() * data.dtype.bytes())
        << "constant data size does not match its shape";
  }
  std::vector<PrimExpr> dims(data.shape.begin(), data.shape.end());
  StructInfo sinfo = TensorSInfo(std::move(dims), data.dtype);
  return Expr(std::make_shared<ConstantNode>(std::move(data), std::move(sinfo)));
}

Expr ShapeExpr(std::vector<PrimExpr> values) {
  StructInfo sinfo = ShapeSInfo(values);
  return Expr(std::make_shared<ShapeExprNode>(std::move(values), std::move(sinfo)));
}

Expr PrimValue(PrimExpr value) {
  StructInfo sinfo = PrimSInfo(value.dtype(), value);
  return Expr(std::make_shared<PrimValueNode>(std::move(value), std::move(sinfo)));
}

Expr StringImm(std::string value) {
  return Expr(std::make_shared<StringImmNode>(std::move(value), ObjectSInfo()));
}

Expr GlobalVar(std::string name, StructInfo sinfo) {
  return Expr(std::make_shared<GlobalVarNode>(std::move(name), std::move(sinfo)));
}

Expr Op(std::string name) { return Expr(std::make_shared<OpNode>(std::move(name))); }

bool IsOp(const Expr& e, std::string_view name) {
  const auto* op = e.defined() ? e.as<OpNode>() : nullptr;
  return op != nullptr && op->name == name;
}

Expr ExternFunc(std::string symbol, StructInfo sinfo) {
  return Expr(std::make_shared<ExternFuncNode>(std::move(symbol), std::move(sinfo)));
}

Expr Tuple(std::vector<Expr> fields, StructInfo sinfo) {
  return Expr(std::make_shared<TupleNode>(std::move(fields), std::move(sinfo)));
}

Expr TupleGetItem(Expr tuple, int index, StructInfo sinfo) {
  return Expr(std::make_shared<TupleGetItemNode>(std::move(tuple), index, std::move(sinfo)));
}

Expr Call(Expr op, std::vector<Expr> args, Attrs attrs, std::vector<StructInfo> sinfo_args,
          StructInfo sinfo) {
  return Expr(std::make_shared<CallNode>(std::move(op), std::move(args), std::move(attrs),
                                         std::move(sinfo_args), std::move(sinfo)));
}

Expr SeqExpr(std::vector<BindingBlock> blocks, Expr body, StructInfo sinfo) {
  return Expr(std::make_shared<SeqExprNode>(std::move(blocks), std::move(body), std::move(sinfo)));
}

Expr If(Expr condition, Expr true_branch, Expr false_branch, StructInfo sinfo) {
  return Expr(std::make_shared<IfNode>(std::move(condition), std::move(true_branch),
                                       std::move(false_branch), std::move(sinfo)));
}

Expr Function(std::vector<Var> params, Expr body, StructInfo ret_struct_info, bool is_pure,
              Attrs attrs) {
  std::vector<StructInfo> param_sinfo;
  param_sinfo.reserve(params.size());
  for (const Var& param : params) param_sinfo.push_back(param.struct_info());
  StructInfo sinfo = FuncSInfo(std::move(param_sinfo), ret_struct_info, is_pure);
  return Expr(std::make_shared<FunctionNode>(std::move(params), std::move(body),
                                             std::move(ret_struct_info), is_pure,
                                             std::move(attrs), std::move(sinfo)));
}

Expr WithStructInfo(const Expr& expr, StructInfo sinfo) {
  switch (expr.kind()) {
    case ExprKind::kVar:
    case ExprKind::kDataflowVar: {
      const auto* n = expr.as<VarNode>();
      return Var(n->name_hint, std::move(sinfo), n->is_dataflow());
    }
    case ExprKind::kConstant:
      return Expr(std::make_shared<ConstantNode>(expr.as<ConstantNode>()->data, std::move(sinfo)));
    case ExprKind::kShapeExpr:
      return Expr(std::make_shared<ShapeExprNode>(expr.as<ShapeExprNode>()->values, std::move(sinfo)));
    case ExprKind::kPrimValue:
      return Expr(std::make_shared<PrimValueNode>(expr.as<PrimValueNode>()->value, std::move(sinfo)));
    case ExprKind::kStringImm:
      return Expr(std::make_shared<StringImmNode>(expr.as<StringImmNode>()->value, std::move(sinfo)));
    case ExprKind::kTuple:
      return Tuple(expr.as<TupleNode>()->fields, std::move(sinfo));
    case ExprKind::kTupleGetItem: {
      const auto* n = expr.as<TupleGetItemNode>();
      return TupleGetItem(n->tuple, n->index, std::move(sinfo));
    }
    case ExprKind::kCall: {
      const auto* n = expr.as<CallNode>();
      return Call(n->op, n->args, n->attrs, n->sinfo_args, std::move(sinfo));
    }
    case ExprKind::kIf: {
      const auto* n = expr.as<IfNode>();
      return If(n->condition, n->true_branch, n->false_branch, std::move(sinfo));
    }
    case ExprKind::kSeqExpr: {
      const auto* n = expr.as<SeqExprNode>();
      return SeqExpr(n->blocks, n->body, std::move(sinfo));
    }
    case ExprKind::kFunction: {
      const auto* n = expr.as<FunctionNode>();
      return Expr(std::make_shared<FunctionNode>(n->params, n->body, n->ret_struct_info, n->is_pure,
                                                 n->attrs, std::move(sinfo)));
    }
    case ExprKind::kGlobalVar:
      return GlobalVar(expr.as<GlobalVarNode>()->name, std::move(sinfo));
    case ExprKind::kOp:
      return expr;  // operators carry no struct info of their own
    case ExprKind::kExternFunc:
      return ExternFunc(expr.as<ExternFuncNode>()->symbol, std::move(sinfo));
  }
  KILN_UNREACHABLE();
  return Expr();
}

}  // namespace kiln::relax
