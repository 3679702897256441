#include "relax/transform/dispatch_libraries.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "relax/op/op_common.h"
#include "relax/transform/function_pass.h"
#include "relax/transform/library_dispatch_evidence.h"
#include "support/status_macros.h"
#include "tir/structural_equal.h"

namespace kiln::relax {
namespace {

const TensorStructInfoNode* F32Rank2(const StructInfo& s) {
  const auto* t = s.defined() ? s.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || t->ndim != 2 || !t->dtype || *t->dtype != tir::DataType::Float32()) return nullptr;
  return t;
}

const TensorStructInfoNode* ShapedTensor(const StructInfo& s) {
  const auto* t = s.defined() ? s.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || !t->shape || !t->dtype || t->ndim < 2) return nullptr;
  return t;
}

class Dispatcher {
 public:
  Dispatcher(const LibraryOptions& options, const tir::Target& target) : options_(options), target_(target) {}

  Expr RewriteSeq(const Expr& expr) {
    const auto* seq = expr.as<SeqExprNode>();
    if (seq == nullptr) return expr;
    bool changed = false;
    std::vector<BindingBlock> blocks;
    for (const BindingBlock& block : seq->blocks) {
      BindingBlock out{{}, block.dataflow};
      for (const Binding& b : block.bindings) {
        if (!b.is_match_cast()) bound_[b.var.get()] = b.value;
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
    // Per target: cuda functions' matmuls go to cuBLAS; the CPU rules below are for cpu only.
    if (target_.kind == tir::TargetKind::kCuda) {
      if (call != nullptr && IsOp(call->op, "matmul") && options_.cublas) return CublasMatmul(b, *call);
      return b;
    }
    if (target_.kind != tir::TargetKind::kCpu) return b;
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
    if (options_.openblas_by_evidence) {
      std::optional<int64_t> m = (*out->shape)[0].as_int();
      const MatmulShapeClass shape{.vector_bits = target_.vector_bits,
                                   .num_threads = target_.num_threads,
                                   .few_rows = m && *m <= kFewRows,
                                   .weight = *k * *n};
      if (!OpenBlasMeasuredFaster(shape)) return b;
    }
    Expr args = Tuple({call->args[0], call->args[1]},
                      TupleSInfo({call->args[0].struct_info(), call->args[1].struct_info()}));
    Expr callee = ExternFunc(kOpenBlasSgemm, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    return {b.var, Call(Op("call_dps_library"), {callee, args}, {}, {out_sinfo}, out_sinfo), StructInfo()};
  }

  // Every quantized_matmul whose result is a float32 tensor goes to the CPU library kernel of
  // its format (builtins/quantized_matmul_kernels.h), with 8-bit or float32 activations as
  // the call's activations attribute says, else as the options do, and 8-bit ones summed
  // in the order of its summation attribute.
  Binding QuantizedMatmul(const Binding& b, const CallNode& call) {
    auto format = call.attrs.find("format");
    const auto* name = format == call.attrs.end() ? nullptr : std::get_if<std::string>(&format->second);
    const StructInfo& out_sinfo = b.value.struct_info();
    const auto* out = out_sinfo.defined() ? out_sinfo.as<TensorStructInfoNode>() : nullptr;
    if (name == nullptr || out == nullptr || !out->shape || call.args.size() != 2) return b;
    Expr args = Tuple({call.args[0], call.args[1]}, TupleSInfo({call.args[0].struct_info(), call.args[1].struct_info()}));
    // The call's own activations attribute, where it has one, over the pipeline's choice.
    bool quantize = options_.quantize_activations;
    auto activations = call.attrs.find("activations");
    if (activations != call.attrs.end()) {
      const auto* value = std::get_if<std::string>(&activations->second);
      quantize = value != nullptr && *value == "q8";
    }
    auto summation = call.attrs.find("summation");
    const std::string* order = summation == call.attrs.end() ? nullptr : std::get_if<std::string>(&summation->second);
    const std::string prefix = !quantize                           ? kQuantizedMatmulFloatActivationsPrefix
                               : order != nullptr && *order == "blocks" ? kQuantizedMatmulByBlockPrefix
                               : order != nullptr && *order == "tiles"  ? kQuantizedMatmulTiledPrefix
                                                                        : kQuantizedMatmulPrefix;
    Expr callee = ExternFunc(prefix + *name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    return {b.var, Call(Op("call_dps_library"), {callee, args}, {}, {out_sinfo}, out_sinfo), StructInfo()};
  }

  // The operand the cuBLAS call reads and whether it is transposed: `operand` itself, or the
  // tensor a permute_dims binding of this function swapped the last two axes of (cuBLAS
  // reads it transposed; the permute_dims goes if nothing else uses it).
  std::pair<Expr, bool> CublasOperand(const Expr& operand) const {
    const auto* var = operand.as<VarNode>();
    auto it = var == nullptr ? bound_.end() : bound_.find(var);
    if (it == bound_.end()) return {operand, false};
    const auto* permute = it->second.as<CallNode>();
    if (permute == nullptr || permute->args.size() != 1) return {operand, false};
    const TensorStructInfoNode* source = ShapedTensor(permute->args[0].struct_info());
    if (source == nullptr || !op::SwapsLastTwoAxes(*permute, source->ndim)) return {operand, false};
    return {permute->args[0], true};
  }

  // An operand repeats across the batch (rank 2, or leading extents all 1) or has out's
  // leading extents: one strided batched GEMM (builtins/cublas_kernels.cc).
  static bool BatchesLikeOut(const TensorStructInfoNode& t, const TensorStructInfoNode& out) {
    bool all_ones = true;
    for (int i = 0; i + 2 < t.ndim; ++i) all_ones = all_ones && (*t.shape)[static_cast<size_t>(i)].as_int() == 1;
    if (all_ones) return true;
    if (t.ndim != out.ndim) return false;
    for (int i = 0; i + 2 < t.ndim; ++i) {
      if (!tir::StructuralEqual((*t.shape)[static_cast<size_t>(i)], (*out.shape)[static_cast<size_t>(i)])) return false;
    }
    return true;
  }

  Binding CublasMatmul(const Binding& b, const CallNode& call) {
    if (call.args.size() != 2) return b;
    const StructInfo& out_sinfo = b.value.struct_info();
    const TensorStructInfoNode* out = ShapedTensor(out_sinfo);
    const TensorStructInfoNode* lhs = ShapedTensor(call.args[0].struct_info());
    const TensorStructInfoNode* rhs = ShapedTensor(call.args[1].struct_info());
    if (out == nullptr || lhs == nullptr || rhs == nullptr) return b;
    const tir::DataType f32 = tir::DataType::Float32(), f16 = tir::DataType::Float(16);
    if (*lhs->dtype != *rhs->dtype || (*lhs->dtype != f32 && *lhs->dtype != f16)) return b;
    if (*out->dtype != f32 && !(*lhs->dtype == f16 && *out->dtype == f16)) return b;
    // Work per output row, k * n; a symbolic extent counts as large (a sequence length).
    std::optional<int64_t> k = (*rhs->shape)[static_cast<size_t>(rhs->ndim - 2)].as_int();
    std::optional<int64_t> n = (*rhs->shape)[static_cast<size_t>(rhs->ndim - 1)].as_int();
    if (k && n && *k * *n < options_.min_row_work) return b;
    auto [a, trans_a] = CublasOperand(call.args[0]);
    auto [w, trans_b] = CublasOperand(call.args[1]);
    if (!BatchesLikeOut(*ShapedTensor(a.struct_info()), *out) || !BatchesLikeOut(*ShapedTensor(w.struct_info()), *out)) {
      return b;
    }
    Expr args = Tuple({a, w}, TupleSInfo({a.struct_info(), w.struct_info()}));
    const std::string name = std::string(kCublasGemmPrefix) + (trans_a ? "t" : "n") + (trans_b ? "t" : "n");
    Expr callee = ExternFunc(name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    return {b.var, Call(Op("call_dps_library"), {callee, args}, {}, {out_sinfo}, out_sinfo), StructInfo()};
  }

  const LibraryOptions& options_;
  const tir::Target target_;
  // Every binding seen so far in the function: permute_dims that feed a matmul.
  std::unordered_map<const VarNode*, Expr> bound_;
};

}  // namespace

absl::StatusOr<IRModule> DispatchLibraries(const IRModule& module, const LibraryOptions& options,
                                           const tir::Target& target) {
  if (!options.openblas && !options.quantized && !options.cublas) return module;
  Dispatcher dispatcher(options, target);
  return RewriteFunctionBodies(module, [&](const std::string&, const FunctionNode& fn) -> absl::StatusOr<Expr> {
    return dispatcher.RewriteSeq(fn.body);
  });
}

}  // namespace kiln::relax
