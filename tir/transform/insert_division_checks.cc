#include "tir/transform/insert_division_checks.h"

#include "absl/strings/str_cat.h"
#include "tir/analyzer.h"
#include "tir/transform/data_check_inserter.h"

namespace kiln::tir::transform {
namespace {

class DivisionChecker : public DataCheckInserter {
 public:
  using DataCheckInserter::DataCheckInserter;

  // A loop variable lies in [min, min + extent - 1]; its bounds let the analyzer drop
  // checks an index cannot need (a loop variable >= 0 is never the type's minimum).
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    IntBound lo = analyzer_.ConstIntBound(op->min);
    IntBound hi = analyzer_.ConstIntBound(Sub(Add(op->min, op->extent), IntImm(op->min.dtype(), 1)));
    if (lo.min <= hi.max) analyzer_.Bind(op->loop_var, lo.min, hi.max);
    return StmtExprMutator::VisitStmt_(op, self);
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
    if (!ok.defined() || !guarded()) return visited;
    // Both branches of a select are evaluated: a division the guard skips must not trap.
    return MakeBinary(kind, a, Select(ok, b, IntImm(t, 1)));
  }

 private:
  Analyzer analyzer_;
};

}  // namespace

PrimFunc InsertDivisionChecks(const PrimFunc& func) { return DivisionChecker(func).VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
