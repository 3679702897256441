#include "relax/transform/lower_call_tir.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/transform/function_pass.h"
#include "support/status_macros.h"

namespace kiln::relax {
namespace {

class Lowerer {
 public:
  explicit Lowerer(std::string function) : function_(std::move(function)) {}

  absl::StatusOr<Expr> LowerSeq(const Expr& expr) {
    const auto* seq = expr.as<SeqExprNode>();
    if (seq == nullptr) return expr;
    bool changed = false;
    std::vector<BindingBlock> blocks;
    for (const BindingBlock& block : seq->blocks) {
      BindingBlock out{{}, block.dataflow};
      for (const Binding& b : block.bindings) {
        KILN_RETURN_IF_ERROR(LowerBinding(b, block.dataflow, &out.bindings, &changed));
      }
      blocks.push_back(std::move(out));
    }
    if (!changed) return expr;
    return Expr(std::make_shared<SeqExprNode>(std::move(blocks), seq->body, expr.struct_info()));
  }

 private:
  absl::Status LowerBinding(const Binding& b, bool dataflow, std::vector<Binding>* out, bool* changed) {
    // A match_cast keeps its pattern around the lowered value: the symbols it defines are
    // used by later bindings.
    if (const auto* if_node = b.value.as<IfNode>()) {
      KILN_ASSIGN_OR_RETURN(Expr t, LowerSeq(if_node->true_branch));
      KILN_ASSIGN_OR_RETURN(Expr f, LowerSeq(if_node->false_branch));
      if (t.same_as(if_node->true_branch) && f.same_as(if_node->false_branch)) {
        out->push_back(b);
        return absl::OkStatus();
      }
      *changed = true;
      out->push_back({b.var, Expr(std::make_shared<IfNode>(if_node->condition, t, f, b.value.struct_info())),
                      b.match_cast_sinfo});
      return absl::OkStatus();
    }
    const auto* call = b.value.as<CallNode>();
    const bool library = call != nullptr && IsOp(call->op, "call_dps_library");
    if (call == nullptr || (!IsOp(call->op, "call_tir") && !library)) {
      out->push_back(b);
      return absl::OkStatus();
    }
    *changed = true;
    const std::string where = absl::StrCat("function '", function_, "', binding '", b.var.name_hint(), "': ");
    const char* what = library ? "call_dps_library" : "call_tir";
    if (call->sinfo_args.size() != 1 || call->args.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(where, what, " needs a callee, an argument tuple and one out_sinfo"));
    }
    std::vector<StructInfo> outputs;
    const StructInfo& out_sinfo = call->sinfo_args[0];
    if (const auto* tuple = out_sinfo.as<TupleStructInfoNode>()) {
      outputs = tuple->fields;
    } else {
      outputs.push_back(out_sinfo);
    }
    std::vector<Expr> allocated;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto* t = outputs[i].defined() ? outputs[i].as<TensorStructInfoNode>() : nullptr;
      if (t == nullptr || !t->shape || !t->dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, what, " output ", i, " (", outputs[i].defined() ? ToString(outputs[i]) : "undefined",
            ") needs a known shape and dtype to be allocated"));
      }
      Expr shape = ShapeExpr(*t->shape);
      Expr alloc = Call(Op("alloc_tensor"), {shape}, Attrs{{"dtype", *t->dtype}}, {}, outputs[i]);
      std::string name = outputs.size() == 1 ? absl::StrCat(b.var.name_hint(), "_out")
                                             : absl::StrCat(b.var.name_hint(), "_out", i);
      Var v(name, outputs[i], dataflow);
      out->push_back({v, alloc, StructInfo()});
      allocated.push_back(v);
    }
    std::vector<StructInfo> out_fields = outputs;
    Expr out_tuple = Tuple(allocated, TupleSInfo(out_fields));
    std::vector<Expr> args{call->args[0], call->args[1], out_tuple};
    if (call->args.size() > 2) args.push_back(call->args[2]);
    Expr dps = Call(Op("call_tir_dps"), std::move(args), {}, {}, b.value.struct_info());
    out->push_back({b.var, dps, b.match_cast_sinfo});
    return absl::OkStatus();
  }

  std::string function_;
};

}  // namespace

absl::StatusOr<IRModule> LowerCallTir(const IRModule& module) {
  return RewriteFunctionBodies(module, [](const std::string& name, const FunctionNode& fn) {
    return Lowerer(name).LowerSeq(fn.body);
  });
}

}  // namespace kiln::relax
