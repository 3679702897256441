#include "tir/transform/insert_index_checks.h"

#include <unordered_set>

#include "absl/strings/str_cat.h"
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

class IndexChecker : public StmtExprMutator {
 public:
  explicit IndexChecker(const PrimFunc& func) {
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

  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr visited = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    bool changed = false;
    std::vector<PrimExpr> indices = Checked(*load->buffer, load->indices, &changed);
    if (!changed) return visited;
    return Buffer(load->buffer).Load(std::move(indices));
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt visited = StmtExprMutator::VisitStmt_(op, self);
    const auto* store = visited.as<BufferStoreNode>();
    bool changed = false;
    std::vector<PrimExpr> indices = Checked(*store->buffer.node(), store->indices, &changed);
    if (!changed) return visited;
    return BufferStore(store->buffer, store->value, std::move(indices));
  }

 private:
  bool Depends(const PrimExpr& e) {
    DataDependence d(tainted_);
    d.VisitExpr(e);
    return d.found;
  }

  // Adds a check for each data-dependent index; under a select's guard the index is also
  // replaced by select(ok, index, 0) (sets *changed).
  std::vector<PrimExpr> Checked(const BufferNode& buffer, std::vector<PrimExpr> indices, bool* changed) {
    if (indices.size() != buffer.shape.size()) return indices;  // flattened or unusual access
    for (size_t d = 0; d < indices.size(); ++d) {
      PrimExpr& i = indices[d];
      if (!i.dtype().is_integer() || !i.dtype().is_scalar() || !Depends(i)) continue;
      // Compared in int64, the type of extents: a narrower index widens without loss.
      PrimExpr wide = i.dtype() == DataType::Int64() ? i : Cast(DataType::Int64(), i);
      PrimExpr extent = buffer.shape[d];
      if (extent.dtype() != DataType::Int64()) extent = Cast(DataType::Int64(), extent);
      PrimExpr ok = And(GE(wide, IntImm(DataType::Int64(), 0)), LT(wide, extent));
      AddCheck(ok, absl::StrCat("index {} is out of range for dim ", d, " of '", EscapeAssertText(buffer.name),
                                "' (extent {})"),
               {wide, extent});
      if (!guards_.empty()) {
        i = Select(ok, i, IntImm(i.dtype(), 0));
        *changed = true;
      }
    }
    return indices;
  }

  void AddCheck(PrimExpr ok, const std::string& message, std::vector<PrimExpr> values) {
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

  std::unordered_set<const VarNode*> tainted_;
  std::vector<Stmt> pending_;
  std::vector<PrimExpr> guards_;
  std::vector<std::pair<Var, PrimExpr>> lets_;
};

}  // namespace

PrimFunc InsertIndexChecks(const PrimFunc& func) { return IndexChecker(func).VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
