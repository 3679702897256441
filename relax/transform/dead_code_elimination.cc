#include "relax/transform/dead_code_elimination.h"

#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "relax/expr_functor.h"
#include "relax/op_registry.h"

namespace kiln::relax {
namespace {

// Every variable used (not defined) in what it visits.
class UseCollector : public ExprVisitor {
 public:
  explicit UseCollector(std::unordered_set<const VarNode*>* uses) : uses_(uses) {}
  void VisitExpr_(const VarNode* op, const Expr&) override { uses_->insert(op); }

 private:
  std::unordered_set<const VarNode*>* uses_;
};

// Every module function named by a GlobalVar in what it visits.
class GlobalCollector : public ExprVisitor {
 public:
  explicit GlobalCollector(std::vector<std::string>* names) : names_(names) {}
  void VisitExpr_(const GlobalVarNode* op, const Expr&) override { names_->push_back(op->name); }

 private:
  std::vector<std::string>* names_;
};

bool FlagSet(const Attrs& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return false;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  return true;
}

class DeadCodeRemover : public ExprMutator {
 public:
  explicit DeadCodeRemover(const IRModule& module) : module_(module) {}

  Expr VisitExpr_(const SeqExprNode* op, const Expr& self) override {
    // Nested bodies first (If branches, functions), so that what they still use is known.
    bool changed = false;
    std::vector<BindingBlock> blocks;
    blocks.reserve(op->blocks.size());
    for (const BindingBlock& block : op->blocks) {
      BindingBlock visited = ExprMutator::VisitBindingBlock(block);
      for (size_t i = 0; i < block.bindings.size(); ++i) {
        changed |= !visited.bindings[i].value.same_as(block.bindings[i].value) ||
                   !visited.bindings[i].var.same_as(block.bindings[i].var);
      }
      blocks.push_back(std::move(visited));
    }
    Expr body = VisitExpr(op->body);
    changed |= !body.same_as(op->body);

    // One backward sweep reaches the fixed point: bindings are in SSA order, so when a
    // binding is judged every later use of its variable has been judged already.
    std::unordered_set<const VarNode*> used;
    UseCollector collect(&used);
    collect.VisitExpr(body);
    std::vector<std::vector<bool>> keep(blocks.size());
    for (size_t b = blocks.size(); b-- > 0;) {
      const BindingBlock& block = blocks[b];
      keep[b].assign(block.bindings.size(), true);
      for (size_t i = block.bindings.size(); i-- > 0;) {
        const Binding& binding = block.bindings[i];
        if (used.count(binding.var.get()) == 0 && Removable(binding, block.dataflow)) {
          keep[b][i] = false;
          changed = true;
          continue;
        }
        collect.VisitExpr(binding.value);
      }
    }
    if (!changed) return self;
    std::vector<BindingBlock> live;
    for (size_t b = 0; b < blocks.size(); ++b) {
      BindingBlock block;
      block.dataflow = blocks[b].dataflow;
      for (size_t i = 0; i < blocks[b].bindings.size(); ++i) {
        if (keep[b][i]) block.bindings.push_back(std::move(blocks[b].bindings[i]));
      }
      if (block.bindings.empty()) continue;
      live.push_back(std::move(block));
    }
    return Expr(std::make_shared<SeqExprNode>(std::move(live), std::move(body), op->struct_info()));
  }

 private:
  bool Removable(const Binding& binding, bool dataflow) const {
    if (binding.is_match_cast()) return false;
    if (const auto* call = binding.value.as<CallNode>()) {  // run-time checks are never dead
      const auto* op = call->op.as<OpNode>();
      const OpInfo* info = op != nullptr ? OpRegistry::Global().Find(op->name) : nullptr;
      if (info != nullptr && info->kept_when_unused) return false;
    }
    return dataflow || IsPure(binding.value);
  }

  bool IsPure(const Expr& expr) const {
    if (!expr.defined()) return true;
    switch (expr.kind()) {
      case ExprKind::kCall: {
        const auto* call = expr.as<CallNode>();
        if (!CalleeIsPure(call->op)) return false;
        for (const Expr& arg : call->args) {
          if (!IsPure(arg)) return false;
        }
        return true;
      }
      case ExprKind::kIf: {
        const auto* node = expr.as<IfNode>();
        return IsPure(node->condition) && IsPure(node->true_branch) && IsPure(node->false_branch);
      }
      case ExprKind::kSeqExpr: {
        const auto* seq = expr.as<SeqExprNode>();
        for (const BindingBlock& block : seq->blocks) {
          for (const Binding& binding : block.bindings) {
            if (binding.is_match_cast() || !IsPure(binding.value)) return false;
          }
        }
        return IsPure(seq->body);
      }
      case ExprKind::kTuple:
        for (const Expr& field : expr.as<TupleNode>()->fields) {
          if (!IsPure(field)) return false;
        }
        return true;
      case ExprKind::kTupleGetItem: return IsPure(expr.as<TupleGetItemNode>()->tuple);
      default: return true;  // leaves and functions: evaluating them has no effect
    }
  }

  bool CalleeIsPure(const Expr& callee) const {
    switch (callee.kind()) {
      case ExprKind::kOp: {
        const OpInfo* info = OpRegistry::Global().Find(callee.as<OpNode>()->name);
        return info != nullptr && info->pure;
      }
      case ExprKind::kGlobalVar: {
        const IRModule::Entry* entry = module_.Find(callee.as<GlobalVarNode>()->name);
        return entry != nullptr && entry->is_relax() && entry->relax_function()->is_pure;
      }
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        const StructInfo& sinfo = callee.struct_info();
        const auto* func = sinfo.defined() ? sinfo.as<FuncStructInfoNode>() : nullptr;
        return func != nullptr && func->pure;
      }
      default: return false;  // extern functions may do anything
    }
  }

  const IRModule& module_;
};

}  // namespace

absl::StatusOr<IRModule> DeadCodeElimination(const IRModule& module) {
  IRModule result = module;
  bool changed = false;
  DeadCodeRemover remover(module);
  for (const IRModule::Entry& entry : module.entries()) {
    if (!entry.is_relax()) continue;
    const Expr& func = std::get<Expr>(entry.func);
    Expr pruned = remover.VisitExpr(func);
    if (!pruned.same_as(func)) {
      result.Update(entry.name, pruned);
      changed = true;
    }
  }

  // Reachability from the entry points, over the pruned functions.
  std::set<std::string> reached;
  std::vector<std::string> work;
  for (const IRModule::Entry& entry : result.entries()) {
    const FunctionNode* func = entry.relax_function();
    if (func != nullptr && !FlagSet(func->attrs, "primitive") && !FlagSet(func->attrs, "private")) {
      work.push_back(entry.name);
    }
  }
  while (!work.empty()) {
    std::string name = std::move(work.back());
    work.pop_back();
    if (!reached.insert(name).second) continue;
    const IRModule::Entry* entry = result.Find(name);
    if (entry == nullptr || !entry->is_relax()) continue;
    std::vector<std::string> names;
    GlobalCollector collect(&names);
    collect.VisitExpr(std::get<Expr>(entry->func));
    for (std::string& callee : names) {
      if (reached.count(callee) == 0) work.push_back(std::move(callee));
    }
  }
  std::vector<std::string> unreached;
  for (const IRModule::Entry& entry : result.entries()) {
    if (reached.count(entry.name) == 0) unreached.push_back(entry.name);
  }
  for (const std::string& name : unreached) result.Remove(name);
  changed |= !unreached.empty();
  return changed ? result : module;
}

}  // namespace kiln::relax
