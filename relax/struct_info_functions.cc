#include "relax/struct_info_functions.h"

#include <algorithm>
#include <optional>

#include "support/check.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::relax {

namespace {

BaseCheck Combine(BaseCheck a, BaseCheck b) { return std::min(a, b); }

const StructInfo& ObjectIfUndefined(const StructInfo& sinfo) {
  static const StructInfo* object = new StructInfo(ObjectSInfo());
  return sinfo.defined() ? sinfo : *object;
}

// Shape-like parts shared by Shape and Tensor: rank then dimensions.
BaseCheck CheckDimsBaseOf(int base_ndim, const std::optional<std::vector<PrimExpr>>& base_dims,
                          int derived_ndim,
                          const std::optional<std::vector<PrimExpr>>& derived_dims,
                          tir::Analyzer& analyzer) {
  if (base_ndim == kUnknownNdim) return BaseCheck::kYes;
  if (derived_ndim == kUnknownNdim) return BaseCheck::kMaybe;
  if (base_ndim != derived_ndim) return BaseCheck::kNo;
  if (!base_dims) return BaseCheck::kYes;
  if (!derived_dims) return BaseCheck::kMaybe;
  BaseCheck result = BaseCheck::kYes;
  for (size_t i = 0; i < base_dims->size(); ++i) {
    result = Combine(result, CompareDims((*base_dims)[i], (*derived_dims)[i], analyzer));
  }
  return result;
}

// The joined rank and dimensions of two shape-like parts.
void JoinDims(int a_ndim, const std::optional<std::vector<PrimExpr>>& a_dims, int b_ndim,
              const std::optional<std::vector<PrimExpr>>& b_dims, tir::Analyzer& analyzer,
              int* ndim, std::optional<std::vector<PrimExpr>>* dims) {
  *ndim = a_ndim == b_ndim ? a_ndim : kUnknownNdim;
  dims->reset();
  if (*ndim == kUnknownNdim || !a_dims || !b_dims) return;
  for (size_t i = 0; i < a_dims->size(); ++i) {
    if (CompareDims((*a_dims)[i], (*b_dims)[i], analyzer) != BaseCheck::kYes) return;
  }
  *dims = a_dims;
}

bool MentionsOnly(const PrimExpr& expr, const std::unordered_set<const tir::VarNode*>& defined) {
  std::vector<tir::Var> vars;
  CollectVars(expr, &vars);
  for (const tir::Var& v : vars) {
    if (!defined.count(v.get())) return false;
  }
  return true;
}

}  // namespace

BaseCheck CompareDims(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer) {
  if (tir::StructuralEqual(a, b)) return BaseCheck::kYes;
  if (analyzer.CanProveEqual(a, b)) return BaseCheck::kYes;
  auto x = analyzer.Simplify(a).as_int();
  auto y = analyzer.Simplify(b).as_int();
  if (x && y) return *x == *y ? BaseCheck::kYes : BaseCheck::kNo;
  if (analyzer.CanProveNotEqual(a, b)) return BaseCheck::kNo;
  return BaseCheck::kMaybe;
}

BaseCheck CheckBaseOf(const StructInfo& base_in, const StructInfo& derived_in,
                      tir::Analyzer& analyzer) {
  const StructInfo& base = ObjectIfUndefined(base_in);
  const StructInfo& derived = ObjectIfUndefined(derived_in);
  if (base.kind() == StructInfoKind::kObject) return BaseCheck::kYes;
  // An Object may hold anything at run time.
  if (derived.kind() == StructInfoKind::kObject) return BaseCheck::kMaybe;
  if (base.kind() != derived.kind()) return BaseCheck::kNo;
  switch (base.kind()) {
    case StructInfoKind::kObject: return BaseCheck::kYes;
    case StructInfoKind::kPrim: {
      const auto* b = base.as<PrimStructInfoNode>();
      const auto* d = derived.as<PrimStructInfoNode>();
      if (b->dtype != d->dtype) return BaseCheck::kNo;
      if (!b->value.defined()) return BaseCheck::kYes;
      if (!d->value.defined()) return BaseCheck::kMaybe;
      return CompareDims(b->value, d->value, analyzer);
    }
    case StructInfoKind::kShape: {
      const auto* b = base.as<ShapeStructInfoNode>();
      const auto* d = derived.as<ShapeStructInfoNode>();
      return CheckDimsBaseOf(b->ndim, b->values, d->ndim, d->values, analyzer);
    }
    case StructInfoKind::kTensor: {
      const auto* b = base.as<TensorStructInfoNode>();
      const auto* d = derived.as<TensorStructInfoNode>();
      BaseCheck result = BaseCheck::kYes;
      if (b->dtype) {
        if (!d->dtype) {
          result = BaseCheck::kMaybe;
        } else if (*b->dtype != *d->dtype) {
          return BaseCheck::kNo;
        }
      }
      if (!b->device.empty()) {
        if (d->device.empty()) {
          result = Combine(result, BaseCheck::kMaybe);
        } else if (b->device != d->device) {
          return BaseCheck::kNo;
        }
      }
      return Combine(result, CheckDimsBaseOf(b->ndim, b->shape, d->ndim, d->shape, analyzer));
    }
    case StructInfoKind::kTuple: {
      const auto* b = base.as<TupleStructInfoNode>();
      const auto* d = derived.as<TupleStructInfoNode>();
      if (b->fields.size() != d->fields.size()) return BaseCheck::kNo;
      BaseCheck result = BaseCheck::kYes;
      for (size_t i = 0; i < b->fields.size(); ++i) {
        result = Combine(result, CheckBaseOf(b->fields[i], d->fields[i], analyzer));
        if (result == BaseCheck::kNo) break;
      }
      return result;
    }
    case StructInfoKind::kFunc: {
      const auto* b = base.as<FuncStructInfoNode>();
      const auto* d = derived.as<FuncStructInfoNode>();
      // A pure signature promises no side effects; an impure function cannot keep it.
      if (b->pure && !d->pure) return BaseCheck::kNo;
      BaseCheck result = CheckBaseOf(b->ret, d->ret, analyzer);
      if (!b->params) return result;
      if (!d->params) return Combine(result, BaseCheck::kMaybe);
      if (b->params->size() != d->params->size()) return BaseCheck::kNo;
      // Parameters are contravariant: the derived function must accept what base accepts.
      for (size_t i = 0; i < b->params->size(); ++i) {
        result = Combine(result, CheckBaseOf((*d->params)[i], (*b->params)[i], analyzer));
      }
      return result;
    }
  }
  return BaseCheck::kNo;
}

StructInfo Join(const StructInfo& a_in, const StructInfo& b_in, tir::Analyzer& analyzer) {
  const StructInfo& a = ObjectIfUndefined(a_in);
  const StructInfo& b = ObjectIfUndefined(b_in);
  if (a.kind() != b.kind()) return ObjectSInfo();
  switch (a.kind()) {
    case StructInfoKind::kObject: return a;
    case StructInfoKind::kPrim: {
      const auto* x = a.as<PrimStructInfoNode>();
      const auto* y = b.as<PrimStructInfoNode>();
      if (x->dtype != y->dtype) return ObjectSInfo();
      if (x->value.defined() && y->value.defined() &&
          CompareDims(x->value, y->value, analyzer) == BaseCheck::kYes) {
        return a;
      }
      return PrimSInfo(x->dtype);
    }
    case StructInfoKind::kShape: {
      const auto* x = a.as<ShapeStructInfoNode>();
      const auto* y = b.as<ShapeStructInfoNode>();
      int ndim;
      std::optional<std::vector<PrimExpr>> dims;
      JoinDims(x->ndim, x->values, y->ndim, y->values, analyzer, &ndim, &dims);
      return dims ? ShapeSInfo(*dims) : ShapeSInfoOfNdim(ndim);
    }
    case StructInfoKind::kTensor: {
      const auto* x = a.as<TensorStructInfoNode>();
      const auto* y = b.as<TensorStructInfoNode>();
      std::optional<DataType> dtype = x->dtype == y->dtype ? x->dtype : std::nullopt;
      std::string device = x->device == y->device ? x->device : "";
      int ndim;
      std::optional<std::vector<PrimExpr>> dims;
      JoinDims(x->ndim, x->shape, y->ndim, y->shape, analyzer, &ndim, &dims);
      return dims ? TensorSInfo(*dims, dtype, device) : TensorSInfoOfNdim(ndim, dtype, device);
    }
    case StructInfoKind::kTuple: {
      const auto* x = a.as<TupleStructInfoNode>();
      const auto* y = b.as<TupleStructInfoNode>();
      if (x->fields.size() != y->fields.size()) return ObjectSInfo();
      std::vector<StructInfo> fields;
      for (size_t i = 0; i < x->fields.size(); ++i) {
        fields.push_back(Join(x->fields[i], y->fields[i], analyzer));
      }
      return TupleSInfo(std::move(fields));
    }
    case StructInfoKind::kFunc: {
      const auto* x = a.as<FuncStructInfoNode>();
      const auto* y = b.as<FuncStructInfoNode>();
      StructInfo ret = Join(x->ret, y->ret, analyzer);
      bool pure = x->pure && y->pure;
      // Keep the signature only when both accept exactly the same parameters.
      if (x->params && y->params && x->params->size() == y->params->size()) {
        bool same = true;
        for (size_t i = 0; i < x->params->size() && same; ++i) {
          same = IsBaseOf((*x->params)[i], (*y->params)[i], analyzer) &&
                 IsBaseOf((*y->params)[i], (*x->params)[i], analyzer);
        }
        if (same) return FuncSInfo(*x->params, ret, pure);
      }
      return OpaqueFuncSInfo(ret, pure);
    }
  }
  return ObjectSInfo();
}

StructInfo Substitute(const StructInfo& sinfo, const VarMap& map, tir::Analyzer& analyzer) {
  if (!sinfo.defined()) return sinfo;
  auto dims = [&](const std::vector<PrimExpr>& in) {
    std::vector<PrimExpr> out;
    for (const PrimExpr& d : in) out.push_back(analyzer.Simplify(tir::Substitute(d, map)));
    return out;
  };
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: return sinfo;
    case StructInfoKind::kPrim: {
      const auto* n = sinfo.as<PrimStructInfoNode>();
      if (!n->value.defined()) return sinfo;
      return PrimSInfo(n->dtype, analyzer.Simplify(tir::Substitute(n->value, map)));
    }
    case StructInfoKind::kShape: {
      const auto* n = sinfo.as<ShapeStructInfoNode>();
      return n->values ? ShapeSInfo(dims(*n->values)) : sinfo;
    }
    case StructInfoKind::kTensor: {
      const auto* n = sinfo.as<TensorStructInfoNode>();
      return n->shape ? TensorSInfo(dims(*n->shape), n->dtype, n->device) : sinfo;
    }
    case StructInfoKind::kTuple: {
      std::vector<StructInfo> fields;
      for (const StructInfo& f : sinfo.as<TupleStructInfoNode>()->fields) {
        fields.push_back(Substitute(f, map, analyzer));
      }
      return TupleSInfo(std::move(fields));
    }
    case StructInfoKind::kFunc: {
      const auto* n = sinfo.as<FuncStructInfoNode>();
      StructInfo ret = Substitute(n->ret, map, analyzer);
      if (!n->params) return OpaqueFuncSInfo(ret, n->pure);
      std::vector<StructInfo> params;
      for (const StructInfo& p : *n->params) params.push_back(Substitute(p, map, analyzer));
      return FuncSInfo(std::move(params), ret, n->pure);
    }
  }
  return sinfo;
}

namespace {

// Free variables in first-occurrence order; a let-bound variable is not free.
class FreeVarCollector : public tir::StmtExprVisitor {
 public:
  explicit FreeVarCollector(std::vector<tir::Var>* out) : out_(out) {}
  void VisitExpr_(const tir::VarNode* op, const PrimExpr& self) override {
    if (bound_.count(op)) return;
    for (const tir::Var& seen : *out_) {
      if (seen.get() == op) return;
    }
    out_->push_back(tir::Var(std::static_pointer_cast<const tir::VarNode>(self.node())));
  }
  void VisitVarDef(const tir::Var& var) override { bound_.insert(var.get()); }

 private:
  std::vector<tir::Var>* out_;
  std::unordered_set<const tir::VarNode*> bound_;
};

}  // namespace

void CollectVars(const PrimExpr& expr, std::vector<tir::Var>* out) {
  FreeVarCollector collector(out);
  collector.VisitExpr(expr);
}

namespace {

void CollectSInfoVars(const StructInfo& sinfo, bool definable_only, std::vector<tir::Var>* out) {
  if (!sinfo.defined()) return;
  auto visit = [&](const PrimExpr& e) {
    if (!definable_only || e.kind() == tir::ExprKind::kVar) CollectVars(e, out);
  };
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: return;
    case StructInfoKind::kPrim:
      if (sinfo.as<PrimStructInfoNode>()->value.defined()) visit(sinfo.as<PrimStructInfoNode>()->value);
      return;
    case StructInfoKind::kShape:
      if (const auto& v = sinfo.as<ShapeStructInfoNode>()->values) {
        for (const PrimExpr& d : *v) visit(d);
      }
      return;
    case StructInfoKind::kTensor:
      if (const auto& s = sinfo.as<TensorStructInfoNode>()->shape) {
        for (const PrimExpr& d : *s) visit(d);
      }
      return;
    case StructInfoKind::kTuple:
      for (const StructInfo& f : sinfo.as<TupleStructInfoNode>()->fields) {
        CollectSInfoVars(f, definable_only, out);
      }
      return;
    case StructInfoKind::kFunc:
      // A signature's variables are its own (bound afresh at each call), never free here.
      return;
  }
}

}  // namespace

std::vector<tir::Var> CollectVars(const StructInfo& sinfo) {
  std::vector<tir::Var> out;
  CollectSInfoVars(sinfo, false, &out);
  return out;
}

std::vector<tir::Var> DefinableVars(const StructInfo& sinfo) {
  std::vector<tir::Var> out;
  CollectSInfoVars(sinfo, true, &out);
  return out;
}

StructInfo EraseUndefinedVars(const StructInfo& sinfo,
                              const std::unordered_set<const tir::VarNode*>& defined) {
  if (!sinfo.defined()) return sinfo;
  auto all_defined = [&](const std::vector<PrimExpr>& dims) {
    for (const PrimExpr& d : dims) {
      if (!MentionsOnly(d, defined)) return false;
    }
    return true;
  };
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: return sinfo;
    case StructInfoKind::kPrim: {
      const auto* n = sinfo.as<PrimStructInfoNode>();
      if (!n->value.defined() || MentionsOnly(n->value, defined)) return sinfo;
      return PrimSInfo(n->dtype);
    }
    case StructInfoKind::kShape: {
      const auto* n = sinfo.as<ShapeStructInfoNode>();
      if (!n->values || all_defined(*n->values)) return sinfo;
      return ShapeSInfoOfNdim(n->ndim);
    }
    case StructInfoKind::kTensor: {
      const auto* n = sinfo.as<TensorStructInfoNode>();
      if (!n->shape || all_defined(*n->shape)) return sinfo;
      return TensorSInfoOfNdim(n->ndim, n->dtype, n->device);
    }
    case StructInfoKind::kTuple: {
      std::vector<StructInfo> fields;
      for (const StructInfo& f : sinfo.as<TupleStructInfoNode>()->fields) {
        fields.push_back(EraseUndefinedVars(f, defined));
      }
      return TupleSInfo(std::move(fields));
    }
    case StructInfoKind::kFunc: return sinfo;  // a signature's variables are its own
  }
  return sinfo;
}

}  // namespace kiln::relax
