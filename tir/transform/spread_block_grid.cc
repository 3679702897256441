#include "tir/transform/spread_block_grid.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "tir/analyzer.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

// The thread tags bound anywhere in a kernel's nest.
class TagsIn : public StmtExprVisitor {
 public:
  void VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kThreadBinding) tags.insert(op->thread_tag);
    StmtExprVisitor::VisitStmt_(op, self);
  }
  std::set<std::string> tags;
};

class Spreader : public StmtExprMutator {
 public:
  explicit Spreader(const Target& target) : x_limit_(target.MaxGridSize(0)) {}

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return StmtExprMutator::VisitStmt_(op, self);
    if (!inside_kernel_) {
      // The outermost thread-bound loop: a kernel. Only one that uses blockIdx.x alone.
      TagsIn tags;
      tags.VisitStmt(self);
      if (tags.tags.count("blockIdx.y") > 0 || tags.tags.count("blockIdx.z") > 0) return self;
      inside_kernel_ = true;
      Stmt result = Rewrite(op, self);
      inside_kernel_ = false;
      return result;
    }
    return Rewrite(op, self);
  }

 private:
  Stmt Rewrite(const ForNode* op, const Stmt& self) {
    if (op->thread_tag != "blockIdx.x" || FitsOneAxis(op->extent)) return StmtExprMutator::VisitStmt_(op, self);
    Stmt body = VisitStmt(op->body);
    const DataType t = op->loop_var.dtype();
    const PrimExpr limit = IntImm(t, x_limit_);
    const PrimExpr extent = op->extent.dtype() == t ? op->extent : Cast(t, op->extent);
    const Var x(op->loop_var.name() + "_x", t);
    const Var y(op->loop_var.name() + "_y", t);
    const PrimExpr index = Add(op->min, Add(Mul(y, limit), x));
    Stmt guarded = LetStmt(op->loop_var, index, IfThenElse(LT(op->loop_var, Add(op->min, extent)), body));
    // ceil(E / L) as floordiv(E - 1, L) + 1 (0 for E = 0): E + L - 1 would overflow the
    // 32-bit indices narrow_gpu_indices gives kernels whose E fits them (CUDA's L is
    // 2^31 - 1). Not simplified: the simplifier merges floordiv(floordiv(n + 255, 256) - 1, L)
    // into one division by 256 * L, a constant beyond 32 bits.
    PrimExpr x_extent = Min(extent, limit);
    PrimExpr y_extent = Add(FloorDiv(Sub(extent, IntImm(t, 1)), limit), IntImm(t, 1));
    if (std::optional<int64_t> e = extent.as_int()) {
      x_extent = IntImm(t, std::min(*e, x_limit_));
      y_extent = IntImm(t, *e == 0 ? 0 : (*e - 1) / x_limit_ + 1);
    }
    Stmt inner = For(x, IntImm(t, 0), x_extent, ForKind::kThreadBinding, guarded, "blockIdx.x");
    return For(y, IntImm(t, 0), y_extent, ForKind::kThreadBinding, inner, "blockIdx.y");
  }

  // Whether the extent is certainly at most the x axis's limit.
  bool FitsOneAxis(const PrimExpr& extent) {
    return analyzer_.ConstIntBound(extent).max <= x_limit_;
  }

  const int64_t x_limit_;
  bool inside_kernel_ = false;
  Analyzer analyzer_;
};

}  // namespace

PrimFunc SpreadBlockGrid(const PrimFunc& func, const Target& target) {
  if (!target.is_gpu()) return func;
  Spreader spreader(target);
  return spreader.VisitPrimFunc(func);
}

}  // namespace kiln::tir::transform
