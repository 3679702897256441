#include "relax/transform/fuse_ops.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relax/block_builder.h"
#include "relax/expr_functor.h"
#include "relax/transform/annotate_patterns.h"
#include "relax/transform/fuse_tir.h"
#include "support/status_macros.h"
#include "tir/stmt_functor.h"

namespace kiln::relax {
namespace {

// Fusion classes, ordered: a group's class is the most general of its members'.
enum class Kind { kElementwise = 0, kBroadcast = 1, kInjective = 2, kOutEwiseFusable = 3, kAlone = 4 };

Kind KindOf(const std::string& pattern) {
  if (pattern == "elementwise") return Kind::kElementwise;
  if (pattern == "broadcast") return Kind::kBroadcast;
  if (pattern == "injective") return Kind::kInjective;
  if (pattern == "out_ewise_fusable") return Kind::kOutEwiseFusable;
  return Kind::kAlone;
}

// Whether a group of class `group` may absorb a consumer of class `consumer`.
bool CanAbsorb(Kind group, Kind consumer) {
  switch (consumer) {
    case Kind::kElementwise:
    case Kind::kBroadcast: return group != Kind::kAlone;
    case Kind::kInjective: return group == Kind::kElementwise || group == Kind::kInjective;
    default: return false;
  }
}

// Whether `func` is a transpose of its input's last two axes and nothing else
// (permute_dims(k, axes=[.., 1, 0]) legalized): one block storing
// out[v0, .., a, b] = in[v0, .., b, a].
bool IsLastTwoAxesTranspose(const tir::PrimFunc& func) {
  class Blocks : public tir::StmtExprVisitor {
   public:
    void VisitStmt_(const tir::BlockNode* op, const tir::Stmt& self) override {
      blocks.push_back(op);
      tir::StmtExprVisitor::VisitStmt_(op, self);
    }
    std::vector<const tir::BlockNode*> blocks;
  } finder;
  finder.VisitStmt(func->body);
  if (finder.blocks.size() != 1 || func->params.size() != 2) return false;
  const tir::BlockNode* block = finder.blocks[0];
  const auto* store = block->body.as<tir::BufferStoreNode>();
  const auto* load = store != nullptr ? store->value.as<tir::BufferLoadNode>() : nullptr;
  if (block->init.defined() || block->predicate.defined() || load == nullptr) return false;
  const size_t rank = store->indices.size();
  if (rank < 2 || load->indices.size() != rank || block->iter_vars.size() != rank) return false;
  for (size_t d = 0; d < rank; ++d) {
    const size_t from = d + 2 < rank ? d : (d == rank - 1 ? rank - 2 : rank - 1);
    if (store->indices[d].get() != block->iter_vars[d].var.get() ||
        load->indices[from].get() != block->iter_vars[d].var.get()) {
      return false;
    }
  }
  return true;
}

const TensorStructInfoNode* KnownTensor(const StructInfo& sinfo) {
  const auto* t = sinfo.defined() ? sinfo.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || !t->shape.has_value() || !t->dtype.has_value()) return nullptr;
  return t;
}

class VarUseCounter : public ExprVisitor {
 public:
  std::unordered_map<const VarNode*, int> uses;
  void VisitExpr_(const VarNode* op, const Expr&) override { ++uses[op]; }
};

class TirVarCollector : public tir::StmtExprVisitor {
 public:
  std::vector<const tir::VarNode*> vars;
  void VisitExpr_(const tir::VarNode* op, const PrimExpr&) override { vars.push_back(op); }
};

std::vector<const tir::VarNode*> TirVarsOf(const PrimExpr& e) {
  TirVarCollector c;
  c.VisitExpr(e);
  return c.vars;
}

StructInfo SubstituteTensor(const TensorStructInfoNode& t, const tir::VarMap& vars) {
  std::vector<PrimExpr> shape;
  for (const PrimExpr& dim : *t.shape) shape.push_back(tir::Substitute(dim, vars));
  return TensorSInfo(std::move(shape), t.dtype, t.device);
}

// One call_tir binding that may join a group.
struct Candidate {
  const CallNode* call = nullptr;
  const TupleNode* args = nullptr;
  std::string callee;
  Kind kind = Kind::kAlone;
};

class Fuser {
 public:
  Fuser(const IRModule& module, const FuseOpsOptions& options, IRModule* result)
      : module_(module), options_(options), result_(result) {}

  absl::StatusOr<Expr> RewriteFunction(const std::string& name, const Expr& self) {
    const auto* func = self.as<FunctionNode>();
    auto it = func->attrs.find("primitive");
    if (it != func->attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second)) {
      return self;
    }
    function_ = name;
    VarUseCounter counter;
    counter.VisitExpr(self);
    uses_ = std::move(counter.uses);
    KILN_ASSIGN_OR_RETURN(Expr body, RewriteSeq(func->body));
    if (body.same_as(func->body)) return self;
    return Expr(std::make_shared<FunctionNode>(func->params, body, func->ret_struct_info, func->is_pure, func->attrs,
                                               self.struct_info()));
  }

 private:
  absl::StatusOr<Expr> RewriteSeq(const Expr& expr) {
    const auto* seq = expr.as<SeqExprNode>();
    if (seq == nullptr) return expr;
    bool changed = false;
    std::vector<BindingBlock> blocks;
    for (const BindingBlock& block : seq->blocks) {
      KILN_ASSIGN_OR_RETURN(BindingBlock out, RewriteBlock(block, &changed));
      blocks.push_back(std::move(out));
    }
    if (!changed) return expr;
    return Expr(std::make_shared<SeqExprNode>(std::move(blocks), seq->body, expr.struct_info()));
  }

  absl::StatusOr<BindingBlock> RewriteBlock(const BindingBlock& block, bool* changed) {
    if (!block.dataflow) {
      BindingBlock out{{}, false};
      for (const Binding& b : block.bindings) {
        Binding nb = b;
        if (const auto* if_node = b.value.as<IfNode>(); if_node != nullptr && !b.is_match_cast()) {
          KILN_ASSIGN_OR_RETURN(Expr t, RewriteSeq(if_node->true_branch));
          KILN_ASSIGN_OR_RETURN(Expr f, RewriteSeq(if_node->false_branch));
          if (!t.same_as(if_node->true_branch) || !f.same_as(if_node->false_branch)) {
            nb.value = Expr(std::make_shared<IfNode>(if_node->condition, t, f, b.value.struct_info()));
            *changed = true;
          }
        }
        out.bindings.push_back(std::move(nb));
      }
      return out;
    }
    // Groups are chains; `tail_group` maps the latest result of each group to the group.
    std::vector<std::vector<size_t>> groups;
    std::vector<Kind> group_kind;
    std::unordered_map<const VarNode*, size_t> tail_group;
    std::vector<std::optional<Candidate>> candidates(block.bindings.size());
    for (size_t i = 0; i < block.bindings.size(); ++i) {
      const Binding& b = block.bindings[i];
      candidates[i] = Eligible(b);
      if (!candidates[i].has_value()) continue;
      const Candidate& c = *candidates[i];
      bool joined = false;
      for (const Expr& field : c.args->fields) {
        const auto* v = field.as<VarNode>();
        if (v == nullptr || !v->is_dataflow()) continue;
        auto tail = tail_group.find(v);
        if (tail == tail_group.end()) continue;
        const size_t g = tail->second;
        int uses_here = 0;
        for (const Expr& f : c.args->fields) uses_here += f.get() == v ? 1 : 0;
        const bool transposed_operand = options_.transposed_operands && &field == &c.args->fields[1] &&
                                        c.kind == Kind::kOutEwiseFusable && c.args->fields.size() == 2 &&
                                        groups[g].size() == 1 && IsTransposeCall(*candidates[groups[g][0]]);
        if (uses_[v] != uses_here || !(CanAbsorb(group_kind[g], c.kind) || transposed_operand)) continue;
        groups[g].push_back(i);
        group_kind[g] = std::max(group_kind[g], c.kind);
        tail_group.erase(tail);
        tail_group[b.var.get()] = g;
        joined = true;
        break;
      }
      if (!joined && c.kind != Kind::kAlone) {
        groups.push_back({i});
        group_kind.push_back(c.kind);
        tail_group[b.var.get()] = groups.size() - 1;
      }
    }
    // Replacements: the last member's binding becomes the call of the fused function; the
    // other members disappear.
    std::unordered_map<size_t, Binding> replaced;
    std::unordered_set<size_t> dropped;
    for (const std::vector<size_t>& group : groups) {
      if (group.size() < 2) continue;
      KILN_ASSIGN_OR_RETURN(std::optional<Binding> fused, MakeFunction(block, group, candidates));
      if (!fused.has_value()) continue;
      for (size_t k = 0; k + 1 < group.size(); ++k) dropped.insert(group[k]);
      replaced.emplace(group.back(), *std::move(fused));
    }
    if (replaced.empty()) return block;
    *changed = true;
    BindingBlock out{{}, true};
    for (size_t i = 0; i < block.bindings.size(); ++i) {
      if (dropped.count(i) > 0) continue;
      auto r = replaced.find(i);
      out.bindings.push_back(r != replaced.end() ? r->second : block.bindings[i]);
    }
    return out;
  }

  bool IsTransposeCall(const Candidate& c) const {
    const IRModule::Entry* entry = module_.Find(c.callee);
    return entry != nullptr && entry->prim_func() != nullptr && IsLastTwoAxesTranspose(*entry->prim_func());
  }

  std::optional<Candidate> Eligible(const Binding& b) const {
    if (b.is_match_cast()) return std::nullopt;
    const auto* call = b.value.as<CallNode>();
    if (call == nullptr) return std::nullopt;
    // No tir_vars (a third argument): the fused kernel would have to carry them.
    if (!IsOp(call->op, "call_tir") || call->args.size() != 2 || call->sinfo_args.size() != 1) {
      return std::nullopt;
    }
    const auto* callee = call->args[0].as<GlobalVarNode>();
    const auto* args = call->args[1].as<TupleNode>();
    if (callee == nullptr || args == nullptr) return std::nullopt;
    const IRModule::Entry* entry = module_.Find(callee->name);
    if (entry == nullptr || entry->prim_func() == nullptr) return std::nullopt;
    const tir::PrimFunc& func = *entry->prim_func();
    std::vector<StructInfo> tensors;
    for (const Expr& field : args->fields) {
      const bool leaf = field.as<VarNode>() != nullptr || field.kind() == ExprKind::kConstant;
      if (!leaf || KnownTensor(field.struct_info()) == nullptr) return std::nullopt;
      tensors.push_back(field.struct_info());
    }
    if (KnownTensor(call->sinfo_args[0]) == nullptr || KnownTensor(b.var->struct_info()) == nullptr) {
      return std::nullopt;
    }
    tensors.push_back(call->sinfo_args[0]);
    if (!MatchKernelShapes(func, tensors).ok()) return std::nullopt;
    auto pattern = func->attrs.find("op_pattern");
    Candidate c;
    c.call = call;
    c.args = args;
    c.callee = callee->name;
    c.kind = KindOf(pattern != func->attrs.end() ? pattern->second : AnalyzeOpPattern(func));
    return c;
  }

  // Adds the primitive function of `group` to the module and returns the binding that calls
  // it, or nothing when the group cannot be made into a function (a symbolic variable its
  // inputs do not define).
  absl::StatusOr<std::optional<Binding>> MakeFunction(const BindingBlock& block, const std::vector<size_t>& group,
                                                      const std::vector<std::optional<Candidate>>& candidates) {
    std::unordered_set<const ExprNode*> produced;
    std::vector<Expr> inputs;
    std::unordered_set<const ExprNode*> seen;
    std::vector<std::string> names;
    for (size_t i : group) {
      for (const Expr& field : candidates[i]->args->fields) {
        if (produced.count(field.get()) > 0 || !seen.insert(field.get()).second) continue;
        inputs.push_back(field);
      }
      produced.insert(block.bindings[i].var.get());
      // Without legalization's numbering (matmul3 is a matmul): `fused_matmul_add_gelu`.
      std::string kernel = candidates[i]->callee;
      while (kernel.size() > 1 && absl::ascii_isdigit(static_cast<unsigned char>(kernel.back()))) kernel.pop_back();
      names.push_back(kernel);
    }
    // Fresh symbolic variables, defined by the inputs' plain dims.
    tir::VarMap fresh;
    for (const Expr& input : inputs) {
      for (const PrimExpr& dim : *KnownTensor(input.struct_info())->shape) {
        const auto* v = dim.as<tir::VarNode>();
        if (v == nullptr || fresh.count(v) > 0) continue;
        fresh[v] = tir::Var(v->name, v->dtype(), v->lower_bound, v->upper_bound);
      }
    }
    auto all_defined = [&](const StructInfo& sinfo) {
      for (const PrimExpr& dim : *KnownTensor(sinfo)->shape) {
        for (const tir::VarNode* v : TirVarsOf(dim)) {
          if (fresh.count(v) == 0) return false;
        }
      }
      return true;
    };
    for (const Expr& input : inputs) {
      if (!all_defined(input.struct_info())) return std::optional<Binding>();
    }
    for (size_t i : group) {
      if (!all_defined(candidates[i]->call->sinfo_args[0]) || !all_defined(block.bindings[i].var->struct_info())) {
        return std::optional<Binding>();
      }
    }

    std::string name = absl::StrCat("fused_", absl::StrJoin(names, "_"));
    const std::string base = name;
    for (int k = 1; result_->Find(name) != nullptr; ++k) name = absl::StrCat(base, k);

    BlockBuilder builder(&module_);
    std::vector<Var> params;
    std::unordered_map<const ExprNode*, Expr> inner;
    for (const Expr& input : inputs) {
      const auto* v = input.as<VarNode>();
      Var param(v != nullptr ? v->name_hint : std::string("c"), SubstituteTensor(*KnownTensor(input.struct_info()), fresh));
      params.push_back(param);
      inner[input.get()] = param;
    }
    auto error = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat("function '", function_, "': fusing ", name, ": ", s.message()));
    };
    if (absl::Status s = builder.BeginFunction(params); !s.ok()) return error(s);
    builder.BeginDataflowBlock();
    Var last;
    for (size_t k = 0; k < group.size(); ++k) {
      const Candidate& c = *candidates[group[k]];
      const Binding& b = block.bindings[group[k]];
      std::vector<Expr> fields;
      std::vector<StructInfo> field_sinfos;
      for (const Expr& field : c.args->fields) {
        fields.push_back(inner.at(field.get()));
        field_sinfos.push_back(fields.back().struct_info());
      }
      StructInfo out = SubstituteTensor(*KnownTensor(c.call->sinfo_args[0]), fresh);
      Expr call = Call(Op("call_tir"),
                       {GlobalVar(c.callee, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false)),
                        Tuple(std::move(fields), TupleSInfo(std::move(field_sinfos)))},
                       {}, {out}, out);
      absl::StatusOr<Var> v =
          k + 1 == group.size() ? builder.EmitOutput(call, b.var.name_hint()) : builder.Emit(call, b.var.name_hint());
      if (!v.ok()) return error(v.status());
      inner[b.var.get()] = *v;
      last = *v;
    }
    BindingBlock body = builder.EndBlock();
    const Var& result_var = block.bindings[group.back()].var;
    absl::StatusOr<Expr> func =
        builder.EndFunction({std::move(body)}, last, SubstituteTensor(*KnownTensor(result_var->struct_info()), fresh),
                            /*is_pure=*/true, Attrs{{"primitive", AttrValue(std::in_place_type<bool>, true)}});
    if (!func.ok()) return error(func.status());
    KILN_RETURN_IF_ERROR(result_->Add(name, *func));
    Expr call = Call(GlobalVar(name, func->struct_info()), inputs, {}, {}, result_var->struct_info());
    return std::optional<Binding>(Binding{result_var, call, StructInfo()});
  }

  const IRModule& module_;
  const FuseOpsOptions options_;
  IRModule* result_;
  std::string function_;
  std::unordered_map<const VarNode*, int> uses_;
};

}  // namespace

absl::StatusOr<IRModule> FuseOps(const IRModule& module) { return FuseOps(module, FuseOpsOptions()); }

absl::StatusOr<IRModule> FuseOps(const IRModule& module, const FuseOpsOptions& options) {
  IRModule result = module;
  Fuser fuser(module, options, &result);
  for (const IRModule::Entry& entry : module.entries()) {
    if (!entry.is_relax()) continue;
    KILN_ASSIGN_OR_RETURN(Expr func, fuser.RewriteFunction(entry.name, std::get<Expr>(entry.func)));
    if (!func.same_as(std::get<Expr>(entry.func))) result.Update(entry.name, func);
  }
  return result;
}

}  // namespace kiln::relax
