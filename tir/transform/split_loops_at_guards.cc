#include "tir/transform/split_loops_at_guards.h"

#include <optional>

#include "tir/analyzer.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

using schedule_internal::UsesVar;

// Whether `e` neither reads a buffer nor calls a function (its value then depends only on
// its variables).
bool ReadsOnlyVariables(const PrimExpr& e) {
  class Finder : public StmtExprVisitor {
   public:
    void VisitExpr_(const BufferLoadNode*, const PrimExpr&) override { impure = true; }
    void VisitExpr_(const CallNode*, const PrimExpr&) override { impure = true; }
    bool impure = false;
  } finder;
  finder.VisitExpr(e);
  return !finder.impure;
}

// The first iteration value (absolute, not clamped) at which `condition` stops holding, when
// it holds for exactly the values of `var` below it: `condition` compares integers, and
// the difference it tests for positivity falls by a positive constant with each step of var.
std::optional<PrimExpr> PrefixEnd(const PrimExpr& condition, const Var& var) {
  const auto* cmp = condition.as<BinaryNode>();
  if (!cmp || !cmp->a.dtype().is_integer() || !cmp->a.dtype().is_scalar() || !ReadsOnlyVariables(condition)) {
    return std::nullopt;
  }
  // The condition as `d > 0` (strict) or `d >= 0`.
  PrimExpr d;
  bool strict = false;
  switch (cmp->kind()) {
    case ExprKind::kLT: d = Sub(cmp->b, cmp->a), strict = true; break;
    case ExprKind::kLE: d = Sub(cmp->b, cmp->a); break;
    case ExprKind::kGT: d = Sub(cmp->a, cmp->b), strict = true; break;
    case ExprKind::kGE: d = Sub(cmp->a, cmp->b); break;
    default: return std::nullopt;
  }
  Analyzer analyzer;
  d = analyzer.Simplify(d);
  const DataType t = d.dtype();
  // d(var) = d0 - c * var exactly, with a constant c > 0.
  PrimExpr d0 = analyzer.Simplify(Substitute(d, VarMap{{var.get(), IntImm(t, 0)}}));
  std::optional<int64_t> c = analyzer.Simplify(Sub(d0, Substitute(d, VarMap{{var.get(), IntImm(t, 1)}}))).as_int();
  if (!c || *c <= 0) return std::nullopt;
  std::optional<int64_t> residue = analyzer.Simplify(Sub(d, Sub(d0, Mul(IntImm(t, *c), var)))).as_int();
  if (residue != 0) return std::nullopt;
  // strict: c * var < d0, i.e. var < ceil(d0 / c); otherwise c * var <= d0, i.e. var < floor(d0 / c) + 1.
  PrimExpr end = strict ? FloorDiv(Add(d0, IntImm(t, *c - 1)), IntImm(t, *c))
                        : Add(FloorDiv(d0, IntImm(t, *c)), IntImm(t, 1));
  return analyzer.Simplify(end);
}

// `loop` (serial, its whole body `if (cond) A else B` with cond true for a prefix) as A over
// the prefix, then B over the rest; the rest split again when B is itself such a guard
// without an else (GuardSteps' `else if`: steps past it run nothing, so they are dropped).
// nullopt when the loop does not have that form.
std::optional<Stmt> SplitAtGuard(const ForNode* loop) {
  if (loop->for_kind != ForKind::kSerial) return std::nullopt;
  const auto* guard = loop->body.as<IfThenElseNode>();
  if (!guard) return std::nullopt;
  const DataType t = loop->loop_var.dtype();
  if (guard->condition.dtype().lanes() != 1 || !t.is_integer()) return std::nullopt;
  std::optional<PrimExpr> end = PrefixEnd(guard->condition, loop->loop_var);
  if (!end || end->dtype() != t) return std::nullopt;
  Analyzer analyzer;
  const PrimExpr stop = analyzer.Simplify(Add(loop->min, loop->extent));
  const PrimExpr split = analyzer.Simplify(Min(Max(*end, loop->min), stop));
  Stmt prefix = For(loop->loop_var, loop->min, analyzer.Simplify(Sub(split, loop->min)), ForKind::kSerial,
                    guard->then_case);
  if (!guard->else_case.defined()) return prefix;
  // The rest runs the else branch under a variable of its own (each loop binds its own).
  Var rest_var(loop->loop_var.name() + "_rest", t);
  Stmt rest_body = Substitute(guard->else_case, VarMap{{loop->loop_var.get(), rest_var}});
  Stmt rest = For(rest_var, split, analyzer.Simplify(Sub(stop, split)), ForKind::kSerial, rest_body);
  if (const auto* inner = rest_body.as<IfThenElseNode>(); inner && !inner->else_case.defined()) {
    if (std::optional<Stmt> split_rest = SplitAtGuard(rest.as<ForNode>())) rest = *split_rest;
  }
  return SeqStmt({prefix, rest});
}

// `loop` (serial or unrolled, its whole body `if (cond) A else B` with cond free of the
// loop's variable) as `if (cond) { loop over A } else { loop over B }`; nullopt otherwise.
// The guard then reaches the loop whose variable it tests, which SplitAtGuard splits: a
// wide tile's column edge tests `is this vector pair whole?` under its k steps and rows.
std::optional<Stmt> HoistInvariantGuard(const ForNode* loop) {
  if (loop->for_kind != ForKind::kSerial && loop->for_kind != ForKind::kUnrolled) return std::nullopt;
  const auto* guard = loop->body.as<IfThenElseNode>();
  if (!guard || guard->condition.dtype().lanes() != 1 || !ReadsOnlyVariables(guard->condition) ||
      UsesVar(guard->condition, loop->loop_var.get())) {
    return std::nullopt;
  }
  auto over = [&](const Stmt& body) { return For(loop->loop_var, loop->min, loop->extent, loop->for_kind, body); };
  if (!guard->else_case.defined()) return IfThenElse(guard->condition, over(guard->then_case));
  // The else branch's loop binds a variable of its own (each loop binds its own).
  Var else_var(loop->loop_var.name() + "_else", loop->loop_var.dtype());
  Stmt else_loop = For(else_var, loop->min, loop->extent, loop->for_kind,
                       Substitute(guard->else_case, VarMap{{loop->loop_var.get(), else_var}}));
  return IfThenElse(guard->condition, over(guard->then_case), else_loop);
}

class GuardSplitter : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt visited = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = visited.as<ForNode>();
    if (!loop) return visited;
    if (std::optional<Stmt> hoisted = HoistInvariantGuard(loop)) return *hoisted;
    std::optional<Stmt> split = SplitAtGuard(loop);
    return split ? *split : visited;
  }
};

}  // namespace

PrimFunc SplitLoopsAtGuards(const PrimFunc& func) { return GuardSplitter().VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
