#include "tir/transform/lower_blocks.h"

#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

class BlockLowerer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const BlockNode* op, const Stmt&) override {
    VarMap bindings;
    PrimExpr first_visit;  // every reduction variable is 0
    for (const IterVar& iv : op->iter_vars) {
      PrimExpr value = VisitExpr(iv.value);
      if (value.dtype() != iv.var.dtype()) value = Cast(iv.var.dtype(), value);
      bindings[iv.var.get()] = value;
      if (iv.type == IterType::kReduction) {
        PrimExpr zero = EQ(iv.var, IntImm(iv.var.dtype(), 0));
        first_visit = first_visit.defined() ? And(first_visit, zero) : zero;
      }
    }
    Stmt body = VisitStmt(op->body);
    if (op->init.defined()) {
      Stmt init = VisitStmt(op->init);
      if (first_visit.defined()) init = IfThenElse(first_visit, init);
      body = SeqStmt({init, body});
    }
    for (auto it = op->alloc_buffers.rbegin(); it != op->alloc_buffers.rend(); ++it) body = Allocate(*it, body);
    if (op->predicate.defined()) body = IfThenElse(VisitExpr(op->predicate), body);
    // One substitution over the whole result, so that a buffer whose shape used an
    // iteration variable is rebuilt once, consistently at its definition and every use.
    return Substitute(body, bindings);
  }
};

}  // namespace

PrimFunc LowerBlocks(const PrimFunc& func) { return BlockLowerer().VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
