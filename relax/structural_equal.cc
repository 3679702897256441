#include "relax/structural_equal.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/check.h"

namespace kiln::relax {

namespace {

const char* ExprKindName(ExprKind kind) {
  switch (kind) {
    case ExprKind::kVar: return "Var";
    case ExprKind::kDataflowVar: return "DataflowVar";
    case ExprKind::kConstant: return "Constant";
    case ExprKind::kShapeExpr: return "ShapeExpr";
    case ExprKind::kPrimValue: return "PrimValue";
    case ExprKind::kStringImm: return "StringImm";
    case ExprKind::kTuple: return "Tuple";
    case ExprKind::kTupleGetItem: return "TupleGetItem";
    case ExprKind::kCall: return "Call";
    case ExprKind::kIf: return "If";
    case ExprKind::kSeqExpr: return "SeqExpr";
    case ExprKind::kFunction: return "Function";
    case ExprKind::kGlobalVar: return "GlobalVar";
    case ExprKind::kOp: return "Op";
    case ExprKind::kExternFunc: return "ExternFunc";
  }
  return "?";
}

bool AttrValueEqual(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof(double)) == 0;
  }
  if (const auto* x = std::get_if<std::vector<double>>(&a)) {
    // Bitwise, as single doubles: NaN equals itself.
    const auto& y = std::get<std::vector<double>>(b);
    return x->size() == y.size() && (x->empty() || std::memcmp(x->data(), y.data(), x->size() * sizeof(double)) == 0);
  }
  return a == b;
}

// The Relax-level comparison. PrimExprs, the symbolic-variable mapping and the diff record
// live in the TIR equalizer, so one mapping spans a whole function.
class Equalizer {
 public:
  explicit Equalizer(bool record_diff) : tir_(record_diff) {}

  tir::StructuralEqualizer& tir() { return tir_; }

  bool SInfo(const StructInfo& a, const StructInfo& b, bool define) {
    if (!a.defined() || !b.defined()) {
      if (a.defined() == b.defined()) return true;
      return tir_.Mismatch([&] { return absl::StrCat("struct info ", ToString(a), " vs ", ToString(b)); });
    }
    auto differ = [&] {
      return tir_.Mismatch([&] { return absl::StrCat("struct info ", ToString(a), " vs ", ToString(b)); });
    };
    if (a.kind() != b.kind()) return differ();
    switch (a.kind()) {
      case StructInfoKind::kObject: return true;
      case StructInfoKind::kPrim: {
        const auto* x = a.as<PrimStructInfoNode>();
        const auto* y = b.as<PrimStructInfoNode>();
        if (x->dtype != y->dtype) return differ();
        return Prim(x->value, y->value, define) || tir_.At("value");
      }
      case StructInfoKind::kShape: {
        const auto* x = a.as<ShapeStructInfoNode>();
        const auto* y = b.as<ShapeStructInfoNode>();
        if (x->ndim != y->ndim || x->values.has_value() != y->values.has_value()) return differ();
        return !x->values || Prims(*x->values, *y->values, "values", define);
      }
      case StructInfoKind::kTensor: {
        const auto* x = a.as<TensorStructInfoNode>();
        const auto* y = b.as<TensorStructInfoNode>();
        if (x->ndim != y->ndim || x->shape.has_value() != y->shape.has_value() || x->dtype != y->dtype ||
            x->device != y->device) {
          return differ();
        }
        return !x->shape || Prims(*x->shape, *y->shape, "shape", define);
      }
      case StructInfoKind::kTuple:
        return SInfos(a.as<TupleStructInfoNode>()->fields, b.as<TupleStructInfoNode>()->fields, "fields", define);
      case StructInfoKind::kFunc: {
        const auto* x = a.as<FuncStructInfoNode>();
        const auto* y = b.as<FuncStructInfoNode>();
        if (x->pure != y->pure || x->params.has_value() != y->params.has_value()) return differ();
        // A signature's parameters define the symbolic variables its result refers to, and
        // those are its own: the mapping made here ends with the signature.
        tir::StructuralEqualizer::VarScope outer = tir_.SaveVarScope();
        bool equal = (!x->params || SInfos(*x->params, *y->params, "params", true)) &&
                     (SInfo(x->ret, y->ret, define) || tir_.At("ret"));
        tir_.RestoreVarScope(std::move(outer));
        return equal;
      }
    }
    KILN_UNREACHABLE();
    return false;
  }

  bool DefineVar(const Var& a, const Var& b, bool define_sinfo) {
    const VarNode* x = a.get();
    const VarNode* y = b.get();
    auto it = lhs_to_rhs_.find(x);
    if (it != lhs_to_rhs_.end()) {
      if (it->second == y) return true;
      return tir_.Mismatch([&] {
        return absl::StrCat("variable ", x->name_hint, " is already mapped to ", it->second->name_hint,
                            ", not ", y->name_hint);
      });
    }
    if (rhs_to_lhs_.count(y) != 0) {
      return tir_.Mismatch([&] { return absl::StrCat("rhs variable ", y->name_hint, " is already mapped"); });
    }
    if (x->kind() != y->kind()) {
      return tir_.Mismatch([&] {
        return absl::StrCat(ExprKindName(x->kind()), " ", x->name_hint, " vs ", ExprKindName(y->kind()), " ",
                            y->name_hint);
      });
    }
    if (!SInfo(x->struct_info(), y->struct_info(), define_sinfo)) return tir_.At("struct_info");
    lhs_to_rhs_.emplace(x, y);
    rhs_to_lhs_.emplace(y, x);
    return true;
  }

  bool Equal(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) {
      if (a.defined() == b.defined()) return true;
      return tir_.Mismatch([&] { return std::string(a.defined() ? "defined vs undefined" : "undefined vs defined"); });
    }
    if (a.kind() != b.kind()) {
      return tir_.Mismatch([&] { return absl::StrCat(ExprKindName(a.kind()), " vs ", ExprKindName(b.kind())); });
    }
    if (a.kind() == ExprKind::kVar || a.kind() == ExprKind::kDataflowVar) {
      return VarUse(a.as<VarNode>(), b.as<VarNode>());
    }
    if (!Children(a, b)) return false;
    // After the children: a function's signature mentions variables its parameters define.
    return SInfo(a.struct_info(), b.struct_info(), false) || tir_.At("struct_info");
  }

  bool BlockEqual(const BindingBlock& a, const BindingBlock& b) {
    if (a.dataflow != b.dataflow) {
      return tir_.Mismatch([&] { return std::string(a.dataflow ? "dataflow block vs block" : "block vs dataflow block"); });
    }
    if (a.bindings.size() != b.bindings.size()) {
      tir_.At("bindings");
      return tir_.Mismatch([&] { return absl::StrCat("length ", a.bindings.size(), " vs ", b.bindings.size()); });
    }
    for (size_t i = 0; i < a.bindings.size(); ++i) {
      if (!BindingEqual(a.bindings[i], b.bindings[i])) return tir_.At("bindings", static_cast<int>(i));
    }
    return true;
  }

 private:
  bool BindingEqual(const Binding& a, const Binding& b) {
    if (a.is_match_cast() != b.is_match_cast()) {
      return tir_.Mismatch([] { return std::string("match_cast vs plain binding"); });
    }
    if (!Equal(a.value, b.value)) return tir_.At("value");
    if (a.is_match_cast() && !SInfo(a.match_cast_sinfo, b.match_cast_sinfo, true)) {
      return tir_.At("match_cast_sinfo");
    }
    return DefineVar(a.var, b.var, false) || tir_.At("var");
  }

  bool VarUse(const VarNode* x, const VarNode* y) {
    auto it = lhs_to_rhs_.find(x);
    if (it != lhs_to_rhs_.end()) {
      if (it->second == y) return true;
      return tir_.Mismatch([&] {
        return absl::StrCat("variable ", x->name_hint, " is mapped to ", it->second->name_hint, ", but meets ",
                            y->name_hint);
      });
    }
    if (rhs_to_lhs_.count(y) != 0) {
      return tir_.Mismatch([&] { return absl::StrCat("free variable ", x->name_hint, " meets bound ", y->name_hint); });
    }
    if (x == y) return true;
    return tir_.Mismatch([&] { return absl::StrCat("free variables differ: ", x->name_hint, " vs ", y->name_hint); });
  }

  bool Prim(const PrimExpr& a, const PrimExpr& b, bool define) {
    return define ? tir_.DefExprEqual(a, b) : tir_.ExprEqual(a, b);
  }

  bool Prims(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b, const char* field, bool define) {
    if (a.size() != b.size()) {
      tir_.At(field);
      return tir_.Mismatch([&] { return absl::StrCat("length ", a.size(), " vs ", b.size()); });
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Prim(a[i], b[i], define)) return tir_.At(field, static_cast<int>(i));
    }
    return true;
  }

  bool SInfos(const std::vector<StructInfo>& a, const std::vector<StructInfo>& b, const char* field, bool define) {
    if (a.size() != b.size()) {
      tir_.At(field);
      return tir_.Mismatch([&] { return absl::StrCat("length ", a.size(), " vs ", b.size()); });
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SInfo(a[i], b[i], define)) return tir_.At(field, static_cast<int>(i));
    }
    return true;
  }

  bool Exprs(const std::vector<Expr>& a, const std::vector<Expr>& b, const char* field) {
    if (a.size() != b.size()) {
      tir_.At(field);
      return tir_.Mismatch([&] { return absl::StrCat("length ", a.size(), " vs ", b.size()); });
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Equal(a[i], b[i])) return tir_.At(field, static_cast<int>(i));
    }
    return true;
  }

  bool AttrsEqual(const Attrs& a, const Attrs& b) {
    auto x = a.begin();
    auto y = b.begin();
    for (; x != a.end() && y != b.end(); ++x, ++y) {
      if (x->first != y->first) {
        return tir_.Mismatch([&] { return absl::StrCat("attribute ", x->first, " vs ", y->first); });
      }
      if (!AttrValueEqual(x->second, y->second)) {
        return tir_.Mismatch([&] { return absl::StrCat("attribute ", x->first, " has different values"); });
      }
    }
    if (x != a.end() || y != b.end()) {
      return tir_.Mismatch([&] {
        return absl::StrCat("attribute ", x != a.end() ? x->first : y->first, " only on the ",
                            x != a.end() ? "lhs" : "rhs");
      });
    }
    return true;
  }

  bool Children(const Expr& a, const Expr& b) {
    switch (a.kind()) {
      case ExprKind::kConstant: {
        const ConstantData& x = a.as<ConstantNode>()->data;
        const ConstantData& y = b.as<ConstantNode>()->data;
        if (x.dtype != y.dtype || x.shape != y.shape) {
          return tir_.Mismatch([] { return std::string("constant dtype or shape"); });
        }
        if (x.external_name != y.external_name) {
          return tir_.Mismatch([] { return std::string("external constant name"); });
        }
        if (x.bytes != y.bytes && (x.bytes == nullptr || y.bytes == nullptr || *x.bytes != *y.bytes)) {
          return tir_.Mismatch([] { return std::string("constant data"); });
        }
        return true;
      }
      case ExprKind::kShapeExpr:
        return Prims(a.as<ShapeExprNode>()->values, b.as<ShapeExprNode>()->values, "values", false);
      case ExprKind::kPrimValue:
        return Prim(a.as<PrimValueNode>()->value, b.as<PrimValueNode>()->value, false) || tir_.At("value");
      case ExprKind::kStringImm: {
        const std::string& x = a.as<StringImmNode>()->value;
        const std::string& y = b.as<StringImmNode>()->value;
        if (x == y) return true;
        return tir_.Mismatch([&] { return absl::StrCat("string \"", x, "\" vs \"", y, "\""); });
      }
      case ExprKind::kTuple:
        return Exprs(a.as<TupleNode>()->fields, b.as<TupleNode>()->fields, "fields");
      case ExprKind::kTupleGetItem: {
        const auto* x = a.as<TupleGetItemNode>();
        const auto* y = b.as<TupleGetItemNode>();
        if (x->index != y->index) {
          return tir_.Mismatch([&] { return absl::StrCat("tuple index ", x->index, " vs ", y->index); });
        }
        return Equal(x->tuple, y->tuple) || tir_.At("tuple");
      }
      case ExprKind::kCall: {
        const auto* x = a.as<CallNode>();
        const auto* y = b.as<CallNode>();
        if (!Equal(x->op, y->op)) return tir_.At("op");
        if (!Exprs(x->args, y->args, "args")) return false;
        if (!AttrsEqual(x->attrs, y->attrs)) return tir_.At("attrs");
        return SInfos(x->sinfo_args, y->sinfo_args, "sinfo_args", false);
      }
      case ExprKind::kIf: {
        const auto* x = a.as<IfNode>();
        const auto* y = b.as<IfNode>();
        if (!Equal(x->condition, y->condition)) return tir_.At("condition");
        if (!Equal(x->true_branch, y->true_branch)) return tir_.At("true_branch");
        return Equal(x->false_branch, y->false_branch) || tir_.At("false_branch");
      }
      case ExprKind::kSeqExpr: {
        const auto* x = a.as<SeqExprNode>();
        const auto* y = b.as<SeqExprNode>();
        if (x->blocks.size() != y->blocks.size()) {
          tir_.At("blocks");
          return tir_.Mismatch([&] { return absl::StrCat("length ", x->blocks.size(), " vs ", y->blocks.size()); });
        }
        for (size_t i = 0; i < x->blocks.size(); ++i) {
          if (!BlockEqual(x->blocks[i], y->blocks[i])) return tir_.At("blocks", static_cast<int>(i));
        }
        return Equal(x->body, y->body) || tir_.At("body");
      }
      case ExprKind::kFunction: {
        const auto* x = a.as<FunctionNode>();
        const auto* y = b.as<FunctionNode>();
        if (x->params.size() != y->params.size()) {
          tir_.At("params");
          return tir_.Mismatch([&] { return absl::StrCat("length ", x->params.size(), " vs ", y->params.size()); });
        }
        for (size_t i = 0; i < x->params.size(); ++i) {
          if (!DefineVar(x->params[i], y->params[i], true)) return tir_.At("params", static_cast<int>(i));
        }
        if (x->is_pure != y->is_pure) return tir_.Mismatch([] { return std::string("purity"); });
        if (!AttrsEqual(x->attrs, y->attrs)) return tir_.At("attrs");
        if (!SInfo(x->ret_struct_info, y->ret_struct_info, false)) return tir_.At("ret_struct_info");
        return Equal(x->body, y->body) || tir_.At("body");
      }
      case ExprKind::kGlobalVar: {
        const std::string& x = a.as<GlobalVarNode>()->name;
        const std::string& y = b.as<GlobalVarNode>()->name;
        if (x == y) return true;
        return tir_.Mismatch([&] { return absl::StrCat("global @", x, " vs @", y); });
      }
      case ExprKind::kOp: {
        const std::string& x = a.as<OpNode>()->name;
        const std::string& y = b.as<OpNode>()->name;
        if (x == y) return true;
        return tir_.Mismatch([&] { return absl::StrCat("op ", x, " vs ", y); });
      }
      case ExprKind::kExternFunc: {
        const std::string& x = a.as<ExternFuncNode>()->symbol;
        const std::string& y = b.as<ExternFuncNode>()->symbol;
        if (x == y) return true;
        return tir_.Mismatch([&] { return absl::StrCat("extern ", x, " vs ", y); });
      }
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: break;
    }
    KILN_UNREACHABLE();
    return false;
  }

  tir::StructuralEqualizer tir_;
  std::unordered_map<const VarNode*, const VarNode*> lhs_to_rhs_;
  std::unordered_map<const VarNode*, const VarNode*> rhs_to_lhs_;
};

std::vector<const IRModule::Entry*> SortedEntries(const IRModule& module) {
  std::vector<const IRModule::Entry*> entries;
  for (const IRModule::Entry& entry : module.entries()) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const IRModule::Entry* x, const IRModule::Entry* y) { return x->name < y->name; });
  return entries;
}

// Compares two modules; on a difference, *diff (when given) says where.
bool ModuleEqual(const IRModule& a, const IRModule& b, std::string* diff) {
  std::vector<const IRModule::Entry*> x = SortedEntries(a);
  std::vector<const IRModule::Entry*> y = SortedEntries(b);
  for (size_t i = 0; i < x.size() || i < y.size(); ++i) {
    if (i >= x.size() || i >= y.size() || x[i]->name != y[i]->name) {
      if (diff) {
        // The first name (in order) present on one side only.
        bool lhs_only = i < x.size() && (i >= y.size() || x[i]->name < y[i]->name);
        *diff = absl::StrCat("module: '", lhs_only ? x[i]->name : y[i]->name, "' only in the ",
                             lhs_only ? "lhs" : "rhs");
      }
      return false;
    }
    Equalizer eq(diff != nullptr);
    bool equal = false;
    if (x[i]->is_relax() != y[i]->is_relax()) {
      eq.tir().Mismatch([] { return std::string("Relax function vs PrimFunc"); });
    } else if (x[i]->is_relax()) {
      equal = eq.Equal(std::get<Expr>(x[i]->func), std::get<Expr>(y[i]->func));
    } else {
      equal = eq.tir().PrimFuncEqual(std::get<tir::PrimFunc>(x[i]->func), std::get<tir::PrimFunc>(y[i]->func));
    }
    if (!equal) {
      if (diff) *diff = eq.tir().Diff(absl::StrCat("module['", x[i]->name, "']"));
      return false;
    }
  }
  return true;
}

}  // namespace

bool StructuralEqual(const StructInfo& a, const StructInfo& b) { return Equalizer(false).SInfo(a, b, false); }
bool StructuralEqual(const Expr& a, const Expr& b) { return Equalizer(false).Equal(a, b); }
bool StructuralEqual(const IRModule& a, const IRModule& b) { return ModuleEqual(a, b, nullptr); }

std::string StructuralDiff(const StructInfo& a, const StructInfo& b) {
  Equalizer eq(true);
  return eq.SInfo(a, b, false) ? "" : eq.tir().Diff();
}

std::string StructuralDiff(const Expr& a, const Expr& b) {
  Equalizer eq(true);
  return eq.Equal(a, b) ? "" : eq.tir().Diff();
}

std::string StructuralDiff(const IRModule& a, const IRModule& b) {
  std::string diff;
  return ModuleEqual(a, b, &diff) ? "" : diff;
}

}  // namespace kiln::relax
