#include "relax/transform/insert_shape_checks.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/op/assumed_relations.h"
#include "relax/op_registry.h"
#include "relax/struct_info_functions.h"
#include "relax/transform/function_pass.h"
#include "tir/analyzer.h"

namespace kiln::relax {
namespace {

using op::AssumedRelation;

// The names of the symbolic variables that matching a value against `sinfo` binds in the VM
// (codegen/vm_codegen.cc binds bare-variable dims of a Tensor or Shape and a Prim's bare
// variable value; nothing inside tuples).
std::set<std::string> VmBoundVars(const StructInfo& sinfo) {
  std::set<std::string> out;
  if (!sinfo.defined() || sinfo.as<TupleStructInfoNode>() != nullptr) return out;
  for (const tir::Var& v : DefinableVars(sinfo)) out.insert(v->name);
  return out;
}

std::set<std::string> VarNames(const PrimExpr& a, const PrimExpr& b) {
  std::vector<tir::Var> vars;
  CollectVars(a, &vars);
  CollectVars(b, &vars);
  std::set<std::string> out;
  for (const tir::Var& v : vars) out.insert(v->name);
  return out;
}

bool AllBound(const std::set<std::string>& vars, const std::set<std::string>& bound) {
  for (const std::string& v : vars) {
    if (bound.count(v) == 0) return false;
  }
  return true;
}

const char* RelationName(AssumedRelation::Kind kind) {
  switch (kind) {
    case AssumedRelation::Kind::kEqual: return "equal";
    case AssumedRelation::Kind::kAtMost: return "at_most";
    case AssumedRelation::Kind::kDivisible: return "divisible";
  }
  return "equal";
}

// The relations the call's inference assumes; none for what is not an operator call.
std::vector<AssumedRelation> AssumedBy(const Expr& value) {
  const auto* call = value.as<CallNode>();
  const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
  if (op == nullptr) return {};
  const OpInfo* info = OpRegistry::Global().Find(op->name);
  if (info == nullptr || info->kept_when_unused) return {};
  op::AssumedRelationRecorder recorder;
  tir::Analyzer analyzer;
  // The module is normalized, so inference succeeded once; if it fails now there is nothing
  // it assumed (the error surfaces where the call is used).
  if (!InferCallStructInfo(*call, analyzer).ok()) return {};
  return recorder.relations();
}

class ShapeCheckInserter {
 public:
  Expr RewriteFunction(const FunctionNode& function) {
    std::set<std::string> bound;
    for (const Var& p : function.params) {
      std::set<std::string> vars = VmBoundVars(p->struct_info());
      bound.insert(vars.begin(), vars.end());
    }
    return RewriteBody(function.body, bound);
  }

 private:
  struct Check {
    size_t position;  // emitted before the binding with this index (counted over all blocks)
    Binding binding;
  };

  Expr RewriteBody(const Expr& body, const std::set<std::string>& outer_bound) {
    const auto* seq = body.as<SeqExprNode>();
    if (seq == nullptr) return body;
    std::set<std::string> bound = outer_bound;
    // bound_before[i]: the variables bound before binding i runs.
    std::vector<std::set<std::string>> bound_before;
    std::vector<BindingBlock> blocks = seq->blocks;
    bool changed = false;
    for (BindingBlock& block : blocks) {
      for (Binding& binding : block.bindings) {
        if (const auto* if_node = binding.value.as<IfNode>()) {
          Expr t = RewriteBody(if_node->true_branch, bound);
          Expr f = RewriteBody(if_node->false_branch, bound);
          if (!t.same_as(if_node->true_branch) || !f.same_as(if_node->false_branch)) {
            binding.value = Expr(std::make_shared<IfNode>(if_node->condition, t, f, if_node->struct_info()));
            changed = true;
          }
        }
        bound_before.push_back(bound);
        if (binding.is_match_cast()) {
          std::set<std::string> vars = VmBoundVars(binding.match_cast_sinfo);
          bound.insert(vars.begin(), vars.end());
        }
      }
    }
    std::vector<Check> checks;
    std::set<std::tuple<int, std::string, std::string, std::string>> seen;
    size_t index = 0;
    for (const BindingBlock& block : blocks) {
      for (const Binding& binding : block.bindings) {
        for (const AssumedRelation& r : AssumedBy(binding.value)) {
          std::set<std::string> vars = VarNames(r.lhs, r.rhs);
          if (!AllBound(vars, bound_before[index])) continue;
          const std::string message = absl::StrCat("binding '", binding.var.name_hint(), "': ", r.message);
          if (!seen.emplace(static_cast<int>(r.kind), tir::ToString(r.lhs), tir::ToString(r.rhs), message).second) {
            continue;
          }
          size_t position = 0;
          while (!AllBound(vars, bound_before[position])) ++position;
          Expr check = Call(Op("check_dims"), {PrimValue(r.lhs), PrimValue(r.rhs)},
                            Attrs{{"relation", AttrValue(std::in_place_type<std::string>, RelationName(r.kind))},
                                  {"message", AttrValue(std::in_place_type<std::string>, message)}},
                            {}, ObjectSInfo());
          checks.push_back({position, Binding{Var(absl::StrCat("check_", binding.var.name_hint()), ObjectSInfo()),
                                              std::move(check), StructInfo()}});
        }
        ++index;
      }
    }
    if (checks.empty()) return changed ? Expr(std::make_shared<SeqExprNode>(std::move(blocks), seq->body, seq->struct_info())) : body;
    std::stable_sort(checks.begin(), checks.end(),
                     [](const Check& a, const Check& b) { return a.position < b.position; });
    std::vector<BindingBlock> out;
    size_t next_check = 0;
    index = 0;
    for (BindingBlock& block : blocks) {
      BindingBlock rebuilt;
      rebuilt.dataflow = block.dataflow;
      for (Binding& binding : block.bindings) {
        for (; next_check < checks.size() && checks[next_check].position == index; ++next_check) {
          Binding c = checks[next_check].binding;
          // Inside a dataflow block the check's (unused) variable is a DataflowVar.
          if (block.dataflow) c.var = Var(c.var.name_hint(), ObjectSInfo(), /*dataflow=*/true);
          rebuilt.bindings.push_back(std::move(c));
        }
        rebuilt.bindings.push_back(std::move(binding));
        ++index;
      }
      out.push_back(std::move(rebuilt));
    }
    return Expr(std::make_shared<SeqExprNode>(std::move(out), seq->body, seq->struct_info()));
  }
};

}  // namespace

absl::StatusOr<IRModule> InsertShapeChecks(const IRModule& module) {
  return RewriteFunctionBodies(module, [](const std::string&, const FunctionNode& function) -> absl::StatusOr<Expr> {
    return ShapeCheckInserter().RewriteFunction(function);
  });
}

}  // namespace kiln::relax
