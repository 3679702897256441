#include "codegen/loop_invariance.h"

#include "tir/stmt_functor.h"

namespace kiln::codegen {

bool UsesOnlyAvailableVars(const tir::PrimExpr& e, const std::function<bool(const tir::VarNode*)>& available) {
  class Vars : public tir::StmtExprVisitor {
   public:
    explicit Vars(const std::function<bool(const tir::VarNode*)>& available) : available_(available) {}
    void VisitExpr_(const tir::VarNode* op, const tir::PrimExpr& self) override {
      ok &= available_(op);
      tir::StmtExprVisitor::VisitExpr_(op, self);
    }
    bool ok = true;

   private:
    const std::function<bool(const tir::VarNode*)>& available_;
  } vars(available);
  vars.VisitExpr(e);
  return vars.ok;
}

}  // namespace kiln::codegen
