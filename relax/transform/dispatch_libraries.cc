#include "relax/transform/dispatch_libraries.h"

#include <optional>
#include <vector>

#include "relax/transform/function_pass.h"
#include "support/status_macros.h"

namespace kiln::relax {
namespace {

const TensorStructInfoNode* F32Rank2(const StructInfo& s) {
  const auto* t = s.defined() ? s.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || t->ndim != 2 || !t->dtype || *t->dtype != tir::DataType::Float32()) return nullptr;
  return t;
}

class Dispatcher {
 public:
  explicit Dispatcher(const LibraryOptions& options) : options_(options) {}

  Expr RewriteSeq(const Expr& expr) {
    const auto* seq = expr.as<SeqExprNode>();
    if (seq == nullptr) return expr;
    bool changed = false;
    std::vector<BindingBlock> blocks;
    for (const BindingBlock& block : seq->blocks) {
      BindingBlock out{{}, block.dataflow};
      for (const Binding& b : block.bindings) {
        Binding nb = RewriteBinding(b);
        changed = changed || !nb.value.same_as(b.value);
        out.bindings.push_back(std::move(nb));
      }
      blocks.push_back(std::move(out));
    }
    if (!changed) return expr;
    return Expr(std::make_shared<SeqExprNode>(std::move(blocks), seq->body, expr.struct_info()));
  }

 private:
  Binding RewriteBinding(const Binding& b) {
    if (b.is_match_cast()) return b;
    if (const auto* if_node = b.value.as<IfNode>()) {
      Expr t = RewriteSeq(if_node->true_branch);
      Expr f = RewriteSeq(if_node->false_branch);
      if (t.same_as(if_node->true_branch) && f.same_as(if_node->false_branch)) return b;
      return {b.var, Expr(std::make_shared<IfNode>(if_node->condition, t, f, b.value.struct_info())), StructInfo()};
    }
    const auto* call = b.value.as<CallNode>();
    if (call != nullptr && IsOp(call->op, "quantized_matmul") && options_.quantized) return QuantizedMatmul(b, *call);
    if (call == nullptr || !IsOp(call->op, "matmul") || call->args.size() != 2 || !options_.openblas) return b;
    const StructInfo& out_sinfo = b.value.struct_info();
    const TensorStructInfoNode* lhs = F32Rank2(call->args[0].struct_info());
    const TensorStructInfoNode* rhs = F32Rank2(call->args[1].struct_info());
    const TensorStructInfoNode* out = F32Rank2(out_sinfo);
    if (lhs == nullptr || rhs == nullptr || out == nullptr || !out->shape || !rhs->shape) return b;
    std::optional<int64_t> k = (*rhs->shape)[0].as_int();
    std::optional<int64_t> n = (*rhs->shape)[1].as_int();
    if (!k || !n || *k * *n < options_.min_row_work) return b;
    Expr args = Tuple({call->args[0], call->args[1]},
                      TupleSInfo({call->args[0].struct_info(), call->args[1].struct_info()}));
    Expr callee = ExternFunc(kOpenBlasSgemm, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    return {b.var, Call(Op("call_dps_library"), {callee, args}, {}, {out_sinfo}, out_sinfo), StructInfo()};
  }

  // Every quantized_matmul whose result is a float32 tensor goes to the CPU library kernel of
  // its format (builtins/quantized_matmul_kernels.h).
  Binding QuantizedMatmul(const Binding& b, const CallNode& call) {
    auto format = call.attrs.find("format");
    const auto* name = format == call.attrs.end() ? nullptr : std::get_if<std::string>(&format->second);
    const StructInfo& out_sinfo = b.value.struct_info();
    const auto* out = out_sinfo.defined() ? out_sinfo.as<TensorStructInfoNode>() : nullptr;
    if (name == nullptr || out == nullptr || !out->shape || call.args.size() != 2) return b;
    Expr args = Tuple({call.args[0], call.args[1]}, TupleSInfo({call.args[0].struct_info(), call.args[1].struct_info()}));
    const std::string prefix = options_.quantize_activations ? kQuantizedMatmulPrefix : kQuantizedMatmulFloatActivationsPrefix;
    Expr callee = ExternFunc(prefix + *name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    return {b.var, Call(Op("call_dps_library"), {callee, args}, {}, {out_sinfo}, out_sinfo), StructInfo()};
  }

  const LibraryOptions& options_;
};

}  // namespace

absl::StatusOr<IRModule> DispatchLibraries(const IRModule& module, const LibraryOptions& options) {
  if (!options.openblas && !options.quantized) return module;
  Dispatcher dispatcher(options);
  return RewriteFunctionBodies(module, [&](const std::string&, const FunctionNode& fn) -> absl::StatusOr<Expr> {
    return dispatcher.RewriteSeq(fn.body);
  });
}

}  // namespace kiln::relax
