#include "tir/transform/lower_blocks.h"

#include <vector>

#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

// Whether `e` divides (a fused or split loop's index: `floordiv(f, n)`, `floormod(f, n)`).
bool Divides(const PrimExpr& e) {
  class Finder : public StmtExprVisitor {
   public:
    void VisitExpr_(const BinaryNode* op, const PrimExpr& self) override {
      ExprKind k = op->kind();
      found |= k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod || k == ExprKind::kDiv;
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool found = false;
  } finder;
  finder.VisitExpr(e);
  return finder.found;
}

// Whether `e` uses one of `vars`.
bool UsesAny(const PrimExpr& e, const std::vector<const VarNode*>& vars) {
  class Finder : public StmtExprVisitor {
   public:
    explicit Finder(const std::vector<const VarNode*>& vars) : vars_(vars) {}
    void VisitExpr_(const VarNode* op, const PrimExpr& self) override {
      for (const VarNode* v : vars_) found |= v == op;
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool found = false;

   private:
    const std::vector<const VarNode*>& vars_;
  } finder(vars);
  finder.VisitExpr(e);
  return finder.found;
}

class BlockLowerer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    bool vector = op->for_kind == ForKind::kVectorized;
    if (vector) vector_vars_.push_back(op->loop_var.get());
    Stmt result = StmtExprMutator::VisitStmt_(op, self);
    if (vector) vector_vars_.pop_back();
    return result;
  }

  Stmt VisitStmt_(const BlockNode* op, const Stmt&) override {
    VarMap bindings;
    // Bindings that divide become variables bound before the predicate: computed on every
    // iteration, the parts of them that do not change in the inner loops are hoisted out by
    // LLVM, whereas inside the predicate's `if` a division may not be moved (it could trap),
    // so an edge tile recomputed a fused loop's divisions for every element. Bindings that
    // use a vector lane stay inline, so their loads and stores stay contiguous ramps.
    std::vector<std::pair<Var, PrimExpr>> lets;
    PrimExpr first_visit;  // every reduction variable is 0
    for (const IterVar& iv : op->iter_vars) {
      PrimExpr value = VisitExpr(iv.value);
      if (value.dtype() != iv.var.dtype()) value = Cast(iv.var.dtype(), value);
      if (Divides(value) && !UsesAny(value, vector_vars_)) {
        Var bound(iv.var->name, iv.var.dtype());
        lets.emplace_back(bound, value);
        value = bound;
      }
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
    body = Substitute(body, bindings);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = LetStmt(it->first, it->second, body);
    return body;
  }

 private:
  std::vector<const VarNode*> vector_vars_;  // the vectorized loops around the block
};

}  // namespace

PrimFunc LowerBlocks(const PrimFunc& func) { return BlockLowerer().VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
