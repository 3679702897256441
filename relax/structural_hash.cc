#include "relax/structural_hash.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <unordered_map>
#include <vector>

#include "support/check.h"
#include "support/hash.h"

namespace kiln::relax {

namespace {

enum Tag : uint64_t {
  kUndefined = 0x7e1a0001,
  kSInfoTag,
  kExprTag,
  kBoundVar,
  kDefVar,
  kFreeVar,
  kBindingTag,
  kBlockTag,
  kAttrTag,
  kModuleTag,
  kRelaxEntry,
  kPrimEntry,
};

uint64_t Mix(std::initializer_list<uint64_t> values) {
  uint64_t seed = 0;
  for (uint64_t v : values) seed = support::HashCombine(seed, v);
  return seed;
}

uint64_t Str(std::string_view text) { return tir::StructuralHasher::HashString(text); }

uint64_t AttrValueHash(const AttrValue& value) {
  uint64_t index = value.index();
  if (const auto* v = std::get_if<int64_t>(&value)) return Mix({index, static_cast<uint64_t>(*v)});
  if (const auto* v = std::get_if<double>(&value)) {
    uint64_t bits;
    std::memcpy(&bits, v, sizeof(bits));
    return Mix({index, bits});
  }
  if (const auto* v = std::get_if<bool>(&value)) return Mix({index, static_cast<uint64_t>(*v)});
  if (const auto* v = std::get_if<std::string>(&value)) return Mix({index, Str(*v)});
  if (const auto* v = std::get_if<DataType>(&value)) return Mix({index, tir::StructuralHasher::HashDataType(*v)});
  uint64_t h = index;
  if (const auto* v = std::get_if<std::vector<double>>(&value)) {
    for (double x : *v) {
      uint64_t bits;
      std::memcpy(&bits, &x, sizeof(bits));
      h = support::HashCombine(h, bits);
    }
    return h;
  }
  for (int64_t x : std::get<std::vector<int64_t>>(value)) h = support::HashCombine(h, static_cast<uint64_t>(x));
  return h;
}

uint64_t AttrsHash(const Attrs& attrs) {
  uint64_t h = Mix({kAttrTag, attrs.size()});
  for (const auto& [key, value] : attrs) h = Mix({h, Str(key), AttrValueHash(value)});
  return h;
}

// Mirrors the Equalizer of structural_equal.cc step for step, so that definitions are
// numbered in the order the comparison maps them.
class Hasher {
 public:
  tir::StructuralHasher& tir() { return tir_; }

  uint64_t SInfo(const StructInfo& sinfo, bool define) {
    if (!sinfo.defined()) return kUndefined;
    uint64_t head = Mix({kSInfoTag, static_cast<uint64_t>(sinfo.kind())});
    switch (sinfo.kind()) {
      case StructInfoKind::kObject: return head;
      case StructInfoKind::kPrim: {
        const auto* x = sinfo.as<PrimStructInfoNode>();
        return Mix({head, tir::StructuralHasher::HashDataType(x->dtype), Prim(x->value, define)});
      }
      case StructInfoKind::kShape: {
        const auto* x = sinfo.as<ShapeStructInfoNode>();
        uint64_t h = Mix({head, static_cast<uint64_t>(x->ndim), x->values.has_value()});
        return x->values ? Mix({h, Prims(*x->values, define)}) : h;
      }
      case StructInfoKind::kTensor: {
        const auto* x = sinfo.as<TensorStructInfoNode>();
        uint64_t h = Mix({head, static_cast<uint64_t>(x->ndim), x->shape.has_value(), x->dtype.has_value(),
                          x->dtype ? tir::StructuralHasher::HashDataType(*x->dtype) : 0, Str(x->device)});
        return x->shape ? Mix({h, Prims(*x->shape, define)}) : h;
      }
      case StructInfoKind::kTuple:
        return Mix({head, SInfos(sinfo.as<TupleStructInfoNode>()->fields, define)});
      case StructInfoKind::kFunc: {
        const auto* x = sinfo.as<FuncStructInfoNode>();
        tir::StructuralHasher::VarScope outer = tir_.SaveVarScope();
        uint64_t h = Mix({head, x->pure, x->params.has_value()});
        if (x->params) h = Mix({h, SInfos(*x->params, true)});
        h = Mix({h, SInfo(x->ret, define)});
        tir_.RestoreVarScope(std::move(outer));
        return h;
      }
    }
    KILN_UNREACHABLE();
    return 0;
  }

  uint64_t DefineVar(const Var& var, bool define_sinfo) {
    auto it = var_index_.find(var.get());
    if (it != var_index_.end()) return Mix({kBoundVar, it->second});
    uint64_t sinfo = SInfo(var.struct_info(), define_sinfo);
    uint64_t index = var_index_.size();
    var_index_.emplace(var.get(), index);
    return Mix({kDefVar, index, static_cast<uint64_t>(var.kind()), sinfo});
  }

  uint64_t Hash(const Expr& expr) {
    if (!expr.defined()) return kUndefined;
    uint64_t head = Mix({kExprTag, static_cast<uint64_t>(expr.kind())});
    if (expr.kind() == ExprKind::kVar || expr.kind() == ExprKind::kDataflowVar) {
      auto it = var_index_.find(expr.as<VarNode>());
      if (it != var_index_.end()) return Mix({head, kBoundVar, it->second});
      return Mix({head, kFreeVar, Str(expr.as<VarNode>()->name_hint)});
    }
    uint64_t children = Children(expr);
    return Mix({head, children, SInfo(expr.struct_info(), false)});
  }

  uint64_t Block(const BindingBlock& block) {
    uint64_t h = Mix({kBlockTag, block.dataflow, block.bindings.size()});
    for (const Binding& binding : block.bindings) {
      uint64_t value = Hash(binding.value);
      uint64_t cast = binding.is_match_cast() ? SInfo(binding.match_cast_sinfo, true) : kUndefined;
      uint64_t var = DefineVar(binding.var, false);
      h = Mix({h, kBindingTag, binding.is_match_cast(), value, cast, var});
    }
    return h;
  }

 private:
  uint64_t Prim(const PrimExpr& expr, bool define) {
    return define ? tir_.HashDefExpr(expr) : tir_.HashExpr(expr);
  }

  uint64_t Prims(const std::vector<PrimExpr>& exprs, bool define) {
    uint64_t h = exprs.size();
    for (const PrimExpr& e : exprs) h = support::HashCombine(h, Prim(e, define));
    return h;
  }

  uint64_t SInfos(const std::vector<StructInfo>& sinfos, bool define) {
    uint64_t h = sinfos.size();
    for (const StructInfo& s : sinfos) h = support::HashCombine(h, SInfo(s, define));
    return h;
  }

  uint64_t Exprs(const std::vector<Expr>& exprs) {
    uint64_t h = exprs.size();
    for (const Expr& e : exprs) h = support::HashCombine(h, Hash(e));
    return h;
  }

  uint64_t Children(const Expr& expr) {
    switch (expr.kind()) {
      case ExprKind::kConstant: {
        const ConstantData& data = expr.as<ConstantNode>()->data;
        uint64_t h = Mix({tir::StructuralHasher::HashDataType(data.dtype), data.shape.size()});
        for (int64_t d : data.shape) h = support::HashCombine(h, static_cast<uint64_t>(d));
        if (data.is_external()) return Mix({h, Str(data.external_name)});
        const std::vector<uint8_t>& bytes = *data.bytes;
        return Mix({h, support::Fnv1a64(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
      }
      case ExprKind::kShapeExpr: return Prims(expr.as<ShapeExprNode>()->values, false);
      case ExprKind::kPrimValue: return Prim(expr.as<PrimValueNode>()->value, false);
      case ExprKind::kStringImm: return Str(expr.as<StringImmNode>()->value);
      case ExprKind::kTuple: return Exprs(expr.as<TupleNode>()->fields);
      case ExprKind::kTupleGetItem: {
        const auto* x = expr.as<TupleGetItemNode>();
        return Mix({static_cast<uint64_t>(x->index), Hash(x->tuple)});
      }
      case ExprKind::kCall: {
        const auto* x = expr.as<CallNode>();
        uint64_t op = Hash(x->op);
        uint64_t args = Exprs(x->args);
        return Mix({op, args, AttrsHash(x->attrs), SInfos(x->sinfo_args, false)});
      }
      case ExprKind::kIf: {
        const auto* x = expr.as<IfNode>();
        uint64_t condition = Hash(x->condition);
        uint64_t true_branch = Hash(x->true_branch);
        return Mix({condition, true_branch, Hash(x->false_branch)});
      }
      case ExprKind::kSeqExpr: {
        const auto* x = expr.as<SeqExprNode>();
        uint64_t h = x->blocks.size();
        for (const BindingBlock& block : x->blocks) h = Mix({h, Block(block)});
        return Mix({h, Hash(x->body)});
      }
      case ExprKind::kFunction: {
        const auto* x = expr.as<FunctionNode>();
        uint64_t h = x->params.size();
        for (const Var& param : x->params) h = Mix({h, DefineVar(param, true)});
        h = Mix({h, x->is_pure, AttrsHash(x->attrs)});
        uint64_t ret = SInfo(x->ret_struct_info, false);
        return Mix({h, ret, Hash(x->body)});
      }
      case ExprKind::kGlobalVar: return Str(expr.as<GlobalVarNode>()->name);
      case ExprKind::kOp: return Str(expr.as<OpNode>()->name);
      case ExprKind::kExternFunc: return Str(expr.as<ExternFuncNode>()->symbol);
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: break;
    }
    KILN_UNREACHABLE();
    return 0;
  }

  tir::StructuralHasher tir_;
  std::unordered_map<const VarNode*, uint64_t> var_index_;
};

}  // namespace

uint64_t StructuralHash(const StructInfo& sinfo) { return Hasher().SInfo(sinfo, false); }
uint64_t StructuralHash(const Expr& expr) { return Hasher().Hash(expr); }

uint64_t StructuralHash(const IRModule& module) {
  std::vector<const IRModule::Entry*> entries;
  for (const IRModule::Entry& entry : module.entries()) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const IRModule::Entry* x, const IRModule::Entry* y) { return x->name < y->name; });
  uint64_t h = Mix({kModuleTag, entries.size()});
  for (const IRModule::Entry* entry : entries) {
    Hasher hasher;
    uint64_t func = entry->is_relax()
                        ? Mix({kRelaxEntry, hasher.Hash(std::get<Expr>(entry->func))})
                        : Mix({kPrimEntry, hasher.tir().HashPrimFunc(std::get<tir::PrimFunc>(entry->func))});
    h = Mix({h, Str(entry->name), func});
  }
  return h;
}

}  // namespace kiln::relax
