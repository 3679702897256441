// Visitors and mutators over TIR: the traversal every TIR analysis and rewrite builds on.
//
// What they promise:
//  - StmtExprVisitor reaches every statement and every PrimExpr of a tree: operands, loop
//    bounds, block iteration extents and bindings, predicates, indices, and the shapes and
//    strides of buffers where they are defined (PrimFunc parameters, Allocate, DeclBuffer, a
//    block's alloc_buffers). Children are visited in scope order: a definition's value or range
//    before the definition, the definition before the body it scopes, otherwise in field
//    order. Each node kind has its own overridable VisitExpr_/VisitStmt_; an override that
//    still wants the children calls the base version.
//  - Definitions are reported separately from uses: VisitVarDef for loop, let, block
//    iteration and scalar parameter variables (their uses arrive as VisitExpr_(VarNode));
//    VisitBufferDef / VisitBufferUse for buffers.
//  - StmtExprMutator rebuilds a node only when a child changed; an unchanged subtree is
//    returned as the very same node (same_as), so an identity mutator copies nothing.
//    Rebuilt nodes go through the checked constructors of expr.h / stmt.h.
//  - The mutator keeps buffers consistent: a buffer is mutated once (its shape and strides),
//    and if it changed, the new buffer replaces the old one at every definition and use.
//    A variable definition that VisitVarDef replaces is replaced at every later use too.
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::tir {

class StmtExprVisitor {
 public:
  virtual ~StmtExprVisitor() = default;

  // Dispatch on the node kind; an undefined expression or statement is skipped.
  virtual void VisitExpr(const PrimExpr& expr);
  virtual void VisitStmt(const Stmt& stmt);
  // Parameters (VisitBufferDef / VisitVarDef), then the body.
  virtual void VisitPrimFunc(const PrimFunc& func);

  virtual void VisitExpr_(const IntImmNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const FloatImmNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const VarNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const BinaryNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const NotNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const BitNotNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const ReinterpretNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const SelectNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const CastNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const CallNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const RampNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const BroadcastNode* op, const PrimExpr& self);
  virtual void VisitExpr_(const LetNode* op, const PrimExpr& self);

  virtual void VisitStmt_(const BufferStoreNode* op, const Stmt& self);
  virtual void VisitStmt_(const ForNode* op, const Stmt& self);
  virtual void VisitStmt_(const BlockNode* op, const Stmt& self);
  virtual void VisitStmt_(const IfThenElseNode* op, const Stmt& self);
  virtual void VisitStmt_(const SeqStmtNode* op, const Stmt& self);
  virtual void VisitStmt_(const AllocateNode* op, const Stmt& self);
  virtual void VisitStmt_(const LetStmtNode* op, const Stmt& self);
  virtual void VisitStmt_(const EvaluateNode* op, const Stmt& self);
  virtual void VisitStmt_(const AssertNode* op, const Stmt& self);
  virtual void VisitStmt_(const DeclBufferNode* op, const Stmt& self);

  // A variable's definition (loop, let, block iteration variable, scalar parameter).
  // Default: nothing.
  virtual void VisitVarDef(const Var& var);
  // A buffer's definition. Default: visits its shape and strides.
  virtual void VisitBufferDef(const Buffer& buffer);
  // A buffer read or written (BufferLoad, BufferStore). Default: nothing.
  virtual void VisitBufferUse(const Buffer& buffer);
};

class StmtExprMutator {
 public:
  virtual ~StmtExprMutator() = default;

  // Dispatch on the node kind; an undefined expression or statement comes back undefined.
  virtual PrimExpr VisitExpr(const PrimExpr& expr);
  virtual Stmt VisitStmt(const Stmt& stmt);
  virtual PrimFunc VisitPrimFunc(const PrimFunc& func);

  virtual PrimExpr VisitExpr_(const IntImmNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const FloatImmNode* op, const PrimExpr& self);
  // Default: the replacement recorded in var_remap_, else the variable itself.
  virtual PrimExpr VisitExpr_(const VarNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const BinaryNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const NotNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const BitNotNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const ReinterpretNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const SelectNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const CastNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const CallNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const RampNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const BroadcastNode* op, const PrimExpr& self);
  virtual PrimExpr VisitExpr_(const LetNode* op, const PrimExpr& self);

  virtual Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const ForNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const BlockNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const IfThenElseNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const SeqStmtNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const AllocateNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const LetStmtNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const EvaluateNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const AssertNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const DeclBufferNode* op, const Stmt& self);

  // A variable's definition. Default: the variable itself. Returning a different Var
  // records it in var_remap_, so the uses that follow are renamed with it.
  virtual Var VisitVarDef(const Var& var);
  // A buffer, wherever met. Default: mutates shape and strides the first time and
  // remembers the result, so every definition and use of one buffer gets the same answer.
  virtual Buffer VisitBuffer(const Buffer& buffer);

 protected:
  // Helpers for overrides: mutate each element; `changed` is set when any element changed.
  std::vector<PrimExpr> VisitExprs(const std::vector<PrimExpr>& exprs, bool* changed);
  // VisitVarDef, recording a replacement in var_remap_.
  Var DefineVar(const Var& var);

  // Uses of a variable are replaced by the mapped expression.
  std::unordered_map<const VarNode*, PrimExpr> var_remap_;
  std::unordered_map<const BufferNode*, Buffer> buffer_remap_;
};

// Collects the variables that what it visits uses (VisitExpr_(VarNode): uses, not
// definitions), each once, in the order first met.
class VarUseCollector : public StmtExprVisitor {
 public:
  void VisitExpr_(const VarNode* op, const PrimExpr& self) override;
  // Records `var` as used, if it is not yet.
  void Add(const Var& var);
  const std::vector<Var>& vars() const { return vars_; }

 private:
  std::unordered_set<const VarNode*> seen_;
  std::vector<Var> vars_;
};

// Replaces every use of a variable in `vmap` by its mapped expression (definitions are left
// alone). Buffers whose shapes mention a mapped variable are rebuilt consistently. Nodes
// without a mapped variable are shared with the input.
using VarMap = std::unordered_map<const VarNode*, PrimExpr>;
PrimExpr Substitute(const PrimExpr& expr, const VarMap& vmap);
Stmt Substitute(const Stmt& stmt, const VarMap& vmap);

}  // namespace kiln::tir
