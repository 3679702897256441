// Placeholder analyzer: folds integer constants only. Being replaced by the canonical
// simplifier (see tir/analyzer.h for the contract).
#include "tir/analyzer.h"

namespace kiln::tir {

struct Analyzer::Impl {
  std::unordered_map<const VarNode*, IntBound> bounds;
};

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;

void Analyzer::Bind(const Var& var, int64_t min, int64_t max) { impl_->bounds[var.get()] = {min, max}; }

PrimExpr Analyzer::Simplify(const PrimExpr& expr) {
  const auto* bin = expr.as<BinaryNode>();
  if (bin == nullptr || !IsArithmetic(expr.kind()) || !expr.dtype().is_integer()) return expr;
  PrimExpr a = Simplify(bin->a);
  PrimExpr b = Simplify(bin->b);
  auto x = a.as_int();
  auto y = b.as_int();
  if (x && y) {
    switch (expr.kind()) {
      case ExprKind::kAdd: return IntImm(expr.dtype(), *x + *y);
      case ExprKind::kSub: return IntImm(expr.dtype(), *x - *y);
      case ExprKind::kMul: return IntImm(expr.dtype(), *x * *y);
      default: break;
    }
  }
  return MakeBinary(expr.kind(), a, b);
}

IntBound Analyzer::ConstIntBound(const PrimExpr& expr) {
  if (auto v = Simplify(expr).as_int()) return {*v, *v};
  return {};
}

bool Analyzer::CanProve(const PrimExpr& condition) {
  auto v = condition.as_int();
  return v && *v != 0;
}

bool Analyzer::CanProveEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  auto d = Simplify(Sub(a, b)).as_int();
  return d && *d == 0;
}

bool Analyzer::CanProveLE(const PrimExpr& a, const PrimExpr& b) {
  auto d = Simplify(Sub(a, b)).as_int();
  return d && *d <= 0;
}

bool Analyzer::CanProveLT(const PrimExpr& a, const PrimExpr& b) {
  auto d = Simplify(Sub(a, b)).as_int();
  return d && *d < 0;
}

bool Analyzer::CanProveNotEqual(const PrimExpr& a, const PrimExpr& b) {
  auto d = Simplify(Sub(a, b)).as_int();
  return d && *d != 0;
}

}  // namespace kiln::tir
