// Visitors and mutators over Relax expressions: the traversal Relax passes build on.
//
// What they promise:
//  - ExprVisitor reaches every expression, binding and binding block, in evaluation order
//    (a binding's value before the variable it defines). Each node kind has its own
//    overridable VisitExpr_; an override that still wants the children calls the base.
//  - Definitions are reported apart from uses: VisitVarDef for function parameters and
//    binding variables (their uses arrive as VisitExpr_(VarNode)).
//  - Struct info is reached too: a defined variable's, a match_cast's, a call's sinfo_args,
//    a function's return struct info, and the annotation of every non-variable expression
//    (after its children). VisitStructInfo walks it and hands each PrimExpr (shape
//    dimensions, Prim values) to VisitPrimExpr, as do ShapeExpr and PrimValue; PrimExprs are
//    leaves here (run a tir::StmtExprVisitor from VisitPrimExpr to look inside).
//  - ExprMutator is a structural rewriter: it rebuilds a node only when a child or its
//    struct info changed, and otherwise returns the very same node (same_as). It infers
//    nothing: a rebuilt node keeps its struct info as mapped through VisitStructInfo. A
//    variable whose definition changes (VisitVarDef returns another Var) is replaced at
//    every later use.
#pragma once

#include <unordered_map>
#include <vector>

#include "relax/expr.h"
#include "relax/struct_info.h"

namespace kiln::relax {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;

  // Dispatch on the node kind; an undefined expression is skipped.
  virtual void VisitExpr(const Expr& expr);

  virtual void VisitExpr_(const VarNode* op, const Expr& self);  // a use; Var and DataflowVar
  virtual void VisitExpr_(const ConstantNode* op, const Expr& self);
  virtual void VisitExpr_(const ShapeExprNode* op, const Expr& self);
  virtual void VisitExpr_(const PrimValueNode* op, const Expr& self);
  virtual void VisitExpr_(const StringImmNode* op, const Expr& self);
  virtual void VisitExpr_(const TupleNode* op, const Expr& self);
  virtual void VisitExpr_(const TupleGetItemNode* op, const Expr& self);
  virtual void VisitExpr_(const CallNode* op, const Expr& self);
  virtual void VisitExpr_(const IfNode* op, const Expr& self);
  virtual void VisitExpr_(const SeqExprNode* op, const Expr& self);
  virtual void VisitExpr_(const FunctionNode* op, const Expr& self);
  virtual void VisitExpr_(const GlobalVarNode* op, const Expr& self);
  virtual void VisitExpr_(const OpNode* op, const Expr& self);
  virtual void VisitExpr_(const ExternFuncNode* op, const Expr& self);

  virtual void VisitBindingBlock(const BindingBlock& block);
  // The value, then (for match_cast) the struct info it checks, then VisitVarDef.
  virtual void VisitBinding(const Binding& binding);
  // A function parameter or binding variable. Default: visits its struct info.
  virtual void VisitVarDef(const Var& var);
  // Default: every nested struct info, and VisitPrimExpr on each PrimExpr.
  virtual void VisitStructInfo(const StructInfo& sinfo);
  // Default: nothing.
  virtual void VisitPrimExpr(const PrimExpr& expr);
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;

  // Dispatch on the node kind; an undefined expression comes back undefined.
  virtual Expr VisitExpr(const Expr& expr);

  // Default: the replacement recorded in var_remap_, else the variable itself.
  virtual Expr VisitExpr_(const VarNode* op, const Expr& self);
  virtual Expr VisitExpr_(const ConstantNode* op, const Expr& self);
  virtual Expr VisitExpr_(const ShapeExprNode* op, const Expr& self);
  virtual Expr VisitExpr_(const PrimValueNode* op, const Expr& self);
  virtual Expr VisitExpr_(const StringImmNode* op, const Expr& self);
  virtual Expr VisitExpr_(const TupleNode* op, const Expr& self);
  virtual Expr VisitExpr_(const TupleGetItemNode* op, const Expr& self);
  virtual Expr VisitExpr_(const CallNode* op, const Expr& self);
  virtual Expr VisitExpr_(const IfNode* op, const Expr& self);
  virtual Expr VisitExpr_(const SeqExprNode* op, const Expr& self);
  virtual Expr VisitExpr_(const FunctionNode* op, const Expr& self);
  virtual Expr VisitExpr_(const GlobalVarNode* op, const Expr& self);
  virtual Expr VisitExpr_(const OpNode* op, const Expr& self);
  virtual Expr VisitExpr_(const ExternFuncNode* op, const Expr& self);

  virtual BindingBlock VisitBindingBlock(const BindingBlock& block);
  virtual Binding VisitBinding(const Binding& binding);
  // A function parameter or binding variable. Default: maps its struct info through
  // VisitStructInfo and, when that changed, makes a new Var of the same name and kind.
  virtual Var VisitVarDef(const Var& var);
  // Default: rebuilds the struct info when a nested PrimExpr or struct info changed.
  virtual StructInfo VisitStructInfo(const StructInfo& sinfo);
  // Default: the expression itself.
  virtual PrimExpr VisitPrimExpr(const PrimExpr& expr);

 protected:
  // VisitVarDef, recording a replacement in var_remap_.
  Var DefineVar(const Var& var);
  // Mutate each element; `changed` is set when any element changed.
  std::vector<Expr> VisitExprs(const std::vector<Expr>& exprs, bool* changed);
  std::vector<PrimExpr> VisitPrimExprs(const std::vector<PrimExpr>& exprs, bool* changed);
  std::vector<StructInfo> VisitStructInfos(const std::vector<StructInfo>& sinfos, bool* changed);

  // Uses of a variable are replaced by the mapped expression.
  std::unordered_map<const VarNode*, Expr> var_remap_;
};

}  // namespace kiln::relax
