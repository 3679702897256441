#include "codegen/hoist_index_divisions.h"

#include <string>
#include <utility>
#include <vector>

#include "codegen/loop_invariance.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::codegen {
namespace {

// Replaces floordiv/floormod(var, d) by let variables, creating one per distinct (kind, d).
class IndexDivisionHoister : public tir::StmtExprMutator {
 public:
  IndexDivisionHoister(const tir::Var& var, const std::function<bool(const tir::VarNode*)>& available)
      : var_(var), available_(available) {}

  struct Hoisted {
    tir::ExprKind kind;
    tir::PrimExpr divisor;
    tir::Var value;
  };
  const std::vector<Hoisted>& hoisted() const { return hoisted_; }

  tir::PrimExpr VisitExpr_(const tir::BinaryNode* op, const tir::PrimExpr& self) override {
    const bool division = op->kind() == tir::ExprKind::kFloorDiv || op->kind() == tir::ExprKind::kFloorMod;
    if (!division || op->a.get() != var_.get() || !UsesOnlyAvailableVars(op->b, available_)) {
      return tir::StmtExprMutator::VisitExpr_(op, self);
    }
    for (const Hoisted& h : hoisted_) {
      if (h.kind == op->kind() && tir::StructuralEqual(h.divisor, op->b)) return h.value;
    }
    const char* what = op->kind() == tir::ExprKind::kFloorDiv ? "_div" : "_mod";
    tir::Var value(var_.name() + what + std::to_string(hoisted_.size()), op->dtype());
    hoisted_.push_back({op->kind(), op->b, value});
    return value;
  }

 private:
  const tir::Var& var_;
  const std::function<bool(const tir::VarNode*)>& available_;
  std::vector<Hoisted> hoisted_;
};

}  // namespace

tir::Stmt HoistIndexDivisions(const tir::Var& var, const tir::Stmt& body,
                              const std::function<bool(const tir::VarNode*)>& available) {
  IndexDivisionHoister hoister(var, available);
  tir::Stmt result = hoister.VisitStmt(body);
  const std::vector<IndexDivisionHoister::Hoisted>& hoisted = hoister.hoisted();
  // Innermost first, so the first division found binds outermost (the order is cosmetic).
  for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it) {
    const tir::PrimExpr zero = tir::IntImm(it->divisor.dtype(), 0);
    const tir::PrimExpr one = tir::IntImm(it->divisor.dtype(), 1);
    const tir::PrimExpr divisor = tir::Select(tir::EQ(it->divisor, zero), one, it->divisor);
    const tir::PrimExpr value = it->kind == tir::ExprKind::kFloorDiv ? tir::FloorDiv(var, divisor)
                                                                     : tir::FloorMod(var, divisor);
    result = tir::LetStmt(it->value, value, result);
  }
  return result;
}

}  // namespace kiln::codegen
