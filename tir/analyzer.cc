// The Analyzer facade: keeps the variable bounds added with Bind and answers each query
// with a fresh CanonicalSimplifier (tir/canonical_simplify.h) and the interval walk
// (tir/const_int_bound.h). A fresh simplifier per query keeps answers independent of the
// order of earlier queries.
#include "tir/analyzer.h"

#include <optional>
#include <utility>

#include "tir/canonical_simplify.h"

namespace kiln::tir {
namespace {

bool IsIntScalar(const PrimExpr& e) { return e.dtype().is_integer() && e.dtype().is_scalar(); }

// Two integer operands brought to one dtype (int64 when they differ), or nothing when the
// comparison is not an integer one.
std::optional<std::pair<PrimExpr, PrimExpr>> IntegerOperands(const PrimExpr& a, const PrimExpr& b) {
  if (!a.defined() || !b.defined() || !IsIntScalar(a) || !IsIntScalar(b)) return std::nullopt;
  if (a.dtype() == b.dtype()) return std::make_pair(a, b);
  auto widen = [](const PrimExpr& e) {
    return e.dtype() == DataType::Int64() ? e : Cast(DataType::Int64(), e);
  };
  return std::make_pair(widen(a), widen(b));
}

}  // namespace

struct Analyzer::Impl {
  VarBoundMap bounds;

  bool Prove(ExprKind kind, const PrimExpr& a, const PrimExpr& b) {
    auto operands = IntegerOperands(a, b);
    if (!operands) return false;
    CanonicalSimplifier simplifier(bounds);
    PrimExpr fact = simplifier.Simplify(MakeBinary(kind, operands->first, operands->second));
    auto v = fact.as_int();
    return v && *v != 0;
  }
};

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;

void Analyzer::Bind(const Var& var, int64_t min, int64_t max) {
  IntBound bound = MakeBound(min, max);
  auto [it, inserted] = impl_->bounds.emplace(var.get(), bound);
  if (!inserted) it->second = IntersectBounds(it->second, bound);
}

PrimExpr Analyzer::Simplify(const PrimExpr& expr) {
  if (!expr.defined()) return expr;
  return CanonicalSimplifier(impl_->bounds).Simplify(expr);
}

IntBound Analyzer::ConstIntBound(const PrimExpr& expr) {
  if (!expr.defined()) return IntBound{};
  IntBound structural = ComputeConstIntBound(expr, impl_->bounds);
  CanonicalSimplifier simplifier(impl_->bounds);
  if (IsIntScalar(expr)) return IntersectBounds(structural, simplifier.CanonicalBound(expr));
  if (expr.dtype().is_bool()) {
    return IntersectBounds(structural, ComputeConstIntBound(simplifier.Simplify(expr), impl_->bounds));
  }
  return structural;
}

bool Analyzer::CanProve(const PrimExpr& condition) {
  if (!condition.defined() || !condition.dtype().is_scalar()) return false;
  PrimExpr fact = Simplify(condition);
  if (auto v = fact.as_int()) return *v != 0;
  return BoundTruth(ComputeConstIntBound(fact, impl_->bounds)) == 1;
}

bool Analyzer::CanProveEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  if (IntegerOperands(a, b)) return impl_->Prove(ExprKind::kEQ, a, b);
  if (!a.defined() || !b.defined() || a.dtype() != b.dtype()) return false;
  // Not integers: only identical structure after simplification counts.
  return CanonicalSimplifier(impl_->bounds).SameAfterSimplify(a, b);
}

bool Analyzer::CanProveLE(const PrimExpr& a, const PrimExpr& b) { return impl_->Prove(ExprKind::kLE, a, b); }

bool Analyzer::CanProveLT(const PrimExpr& a, const PrimExpr& b) { return impl_->Prove(ExprKind::kLT, a, b); }

bool Analyzer::CanProveNotEqual(const PrimExpr& a, const PrimExpr& b) {
  return impl_->Prove(ExprKind::kNE, a, b);
}

}  // namespace kiln::tir
