#include "tir/transform/data_check_inserter.h"

namespace kiln::tir::transform {
namespace {

class DataDependence : public StmtExprVisitor {
 public:
  explicit DataDependence(const std::unordered_set<const VarNode*>& tainted) : tainted_(tainted) {}
  void VisitExpr_(const BufferLoadNode*, const PrimExpr&) override { found = true; }
  void VisitExpr_(const VarNode* op, const PrimExpr&) override { found = found || tainted_.count(op) > 0; }
  bool found = false;

 private:
  const std::unordered_set<const VarNode*>& tainted_;
};

class DimVars : public StmtExprVisitor {
 public:
  explicit DimVars(std::unordered_set<const VarNode*>* out) : out_(out) {}
  void VisitExpr_(const VarNode* op, const PrimExpr&) override { out_->insert(op); }

 private:
  std::unordered_set<const VarNode*>* out_;
};

}  // namespace

DataCheckInserter::DataCheckInserter(const PrimFunc& func) {
  std::unordered_set<const VarNode*> dims;
  DimVars dim_vars(&dims);
  for (const PrimFuncParam& p : func->params) {
    if (p.is_buffer()) dim_vars.VisitBufferDef(p.buffer);
  }
  for (const PrimFuncParam& p : func->params) {
    if (!p.is_buffer() && dims.count(p.var.get()) == 0) tainted_.insert(p.var.get());
  }
}

Stmt DataCheckInserter::VisitStmt(const Stmt& stmt) {
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

Stmt DataCheckInserter::VisitStmt_(const LetStmtNode* op, const Stmt& self) {
  if (Depends(op->value)) tainted_.insert(op->var.get());
  return StmtExprMutator::VisitStmt_(op, self);
}

PrimExpr DataCheckInserter::VisitExpr_(const LetNode* op, const PrimExpr& self) {
  if (Depends(op->value)) tainted_.insert(op->var.get());
  PrimExpr value = VisitExpr(op->value);
  lets_.emplace_back(Var(op->var), value);
  PrimExpr body = VisitExpr(op->body);
  lets_.pop_back();
  if (value.same_as(op->value) && body.same_as(op->body)) return self;
  return Let(Var(op->var), value, body);
}

PrimExpr DataCheckInserter::VisitExpr_(const SelectNode* op, const PrimExpr& self) {
  PrimExpr c = VisitExpr(op->condition);
  guards_.push_back(c);
  PrimExpr t = VisitExpr(op->true_value);
  guards_.back() = Not(c);
  PrimExpr f = VisitExpr(op->false_value);
  guards_.pop_back();
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return Select(c, t, f);
}

bool DataCheckInserter::Depends(const PrimExpr& e) const {
  DataDependence d(tainted_);
  d.VisitExpr(e);
  return d.found;
}

void DataCheckInserter::AddCheck(PrimExpr ok, const std::string& message, std::vector<PrimExpr> values) {
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
  for (PrimExpr& v : values) v = Substitute(v, fresh);
  for (auto it = rebound.rbegin(); it != rebound.rend(); ++it) {
    ok = Let(it->first, it->second, ok);
    for (PrimExpr& v : values) v = Let(it->first, it->second, v);
  }
  pending_.push_back(Assert(ok, message, std::move(values)));
}

}  // namespace kiln::tir::transform
