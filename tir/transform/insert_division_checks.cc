#include "tir/transform/insert_division_checks.h"

#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "tir/analyzer.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

// Whether an expression's value depends on the data (see the header).
class DataDependence : public StmtExprVisitor {
 public:
  explicit DataDependence(const std::unordered_set<const VarNode*>& tainted) : tainted_(tainted) {}
  void VisitExpr_(const BufferLoadNode*, const PrimExpr&) override { found = true; }
  void VisitExpr_(const VarNode* op, const PrimExpr&) override { found = found || tainted_.count(op) > 0; }
  bool found = false;

 private:
  const std::unordered_set<const VarNode*>& tainted_;
};

class DivisionChecker : public StmtExprMutator {
 public:
  explicit DivisionChecker(const PrimFunc& func) {
    std::unordered_set<const VarNode*> dims;
    class DimVars : public StmtExprVisitor {
     public:
      explicit DimVars(std::unordered_set<const VarNode*>* out) : out_(out) {}
      void VisitExpr_(const VarNode* op, const PrimExpr&) override { out_->insert(op); }
      std::unordered_set<const VarNode*>* out_;
    } dim_vars(&dims);
    for (const PrimFuncParam& p : func->params) {
      if (p.is_buffer()) dim_vars.VisitBufferDef(p.buffer);
    }
    for (const PrimFuncParam& p : func->params) {
      if (!p.is_buffer() && dims.count(p.var.get()) == 0) tainted_.insert(p.var.get());
    }
  }

  Stmt VisitStmt(const Stmt& stmt) override {
    std::vector<Stmt> saved = std::move(pending_);
    pending_.clear();
    Stmt out = StmtExprMutator::VisitStmt(stmt);
    if (!pending_.empty()) {
      pending_.push_back(out);
      out = SeqStmt(std::move(pending_));
    }
    pending_ = std::move(saved);
    return out;
  }

  // A loop variable lies in [min, min + extent - 1]; its bounds let the analyzer drop
  // checks an index cannot need (a loop variable >= 0 is never the type's minimum).
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    IntBound lo = analyzer_.ConstIntBound(op->min);
    IntBound hi = analyzer_.ConstIntBound(Sub(Add(op->min, op->extent), IntImm(op->min.dtype(), 1)));
    if (lo.min <= hi.max) analyzer_.Bind(op->loop_var, lo.min, hi.max);
    return StmtExprMutator::VisitStmt_(op, self);
  }

  Stmt VisitStmt_(const LetStmtNode* op, const Stmt& self) override {
    if (Depends(op->value)) tainted_.insert(op->var.get());
    return StmtExprMutator::VisitStmt_(op, self);
  }

  PrimExpr VisitExpr_(const LetNode* op, const PrimExpr& self) override {
    if (Depends(op->value)) tainted_.insert(op->var.get());
    PrimExpr value = VisitExpr(op->value);
    lets_.emplace_back(Var(op->var), value);
    PrimExpr body = VisitExpr(op->body);
    lets_.pop_back();
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return Let(Var(op->var), value, body);
  }

  PrimExpr VisitExpr_(const SelectNode* op, const PrimExpr& self) override {
    PrimExpr c = VisitExpr(op->condition);
    guards_.push_back(c);
    PrimExpr t = VisitExpr(op->true_value);
    guards_.back() = Not(c);
    PrimExpr f = VisitExpr(op->false_value);
    guards_.pop_back();
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    return Select(c, t, f);
  }

  PrimExpr VisitExpr_(const BinaryNode* op, const PrimExpr& self) override {
    PrimExpr visited = StmtExprMutator::VisitExpr_(op, self);
    ExprKind kind = op->kind();
    DataType t = op->a.dtype();
    if ((kind != ExprKind::kDiv && kind != ExprKind::kFloorDiv && kind != ExprKind::kFloorMod) || !t.is_integer() ||
        !t.is_scalar() || (!Depends(op->b) && !(op->b.as_int() == -1 && Depends(op->a)))) {
      return visited;
    }
    const auto* div = visited.as<BinaryNode>();
    PrimExpr a = div->a, b = div->b;
    IntBound bb = analyzer_.ConstIntBound(b);
    std::string what = EscapeAssertText(ToString(self));
    PrimExpr ok;
    if (bb.Contains(0)) {
      ok = NE(b, IntImm(t, 0));
      AddCheck(ok, absl::StrCat("division by zero in ", what));
    }
    if (t.is_int() && bb.Contains(-1)) {
      int64_t min = t.bits() == 64 ? IntBound::kNegInf : -(int64_t{1} << (t.bits() - 1));
      if (analyzer_.ConstIntBound(a).Contains(min)) {
        PrimExpr no_overflow = b.as_int() == -1 ? NE(a, IntImm(t, min))
                                                : Not(And(EQ(a, IntImm(t, min)), EQ(b, IntImm(t, -1))));
        AddCheck(no_overflow, absl::StrCat("integer overflow in ", what, ": ", min, " divided by -1"));
        ok = ok.defined() ? And(ok, no_overflow) : no_overflow;
      }
    }
    if (!ok.defined() || guards_.empty()) return visited;
    // Both branches of a select are evaluated: a division the guard skips must not trap.
    return MakeBinary(kind, a, Select(ok, b, IntImm(t, 1)));
  }

 private:
  bool Depends(const PrimExpr& e) {
    DataDependence d(tainted_);
    d.VisitExpr(e);
    return d.found;
  }

  void AddCheck(PrimExpr ok, const std::string& message) {
    if (!guards_.empty()) {
      PrimExpr guard = guards_[0];
      for (size_t i = 1; i < guards_.size(); ++i) guard = And(guard, guards_[i]);
      ok = Or(Not(guard), ok);
    }
    // The enclosing lets, re-bound to fresh variables (a variable has one definition).
    VarMap fresh;
    std::vector<std::pair<Var, PrimExpr>> rebound;
    for (const auto& [var, value] : lets_) {
      Var copy(var.name(), var.dtype());
      rebound.emplace_back(copy, Substitute(value, fresh));
      fresh[var.get()] = copy;
    }
    ok = Substitute(ok, fresh);
    for (auto it = rebound.rbegin(); it != rebound.rend(); ++it) ok = Let(it->first, it->second, ok);
    pending_.push_back(Assert(ok, message));
  }

  Analyzer analyzer_;
  std::unordered_set<const VarNode*> tainted_;
  std::vector<Stmt> pending_;
  std::vector<PrimExpr> guards_;
  std::vector<std::pair<Var, PrimExpr>> lets_;
};

}  // namespace

PrimFunc InsertDivisionChecks(const PrimFunc& func) { return DivisionChecker(func).VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
