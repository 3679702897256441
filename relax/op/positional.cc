// Positional encodings.
//
// rotary_embedding (x: Tensor((n, heads, head_dim), float32), positions: Tensor((n,), int32
//   or int64)), attributes theta (float, default 10000), mode ("normal", the default, or
//   "neox") and rotary_dims (int, default head_dim; even, at most head_dim). Rotary position
//   embedding (RoPE): row i of x is at position p = positions[i]; its first rotary_dims dims
//   are rotated in pairs, pair m by the angle p * theta^(-2m / rotary_dims); the other dims
//   pass through. "normal" pairs adjacent dims (2m, 2m + 1), as GGML's rope type 0 and the
//   Llama GGUF files (whose converter permutes Q and K for it) do; "neox" pairs dim m with
//   m + rotary_dims / 2 (GPT-NeoX, Qwen2). For a pair (a, b): (a cos - b sin, a sin + b cos).
//   The angle is computed in float64 and rounded once to float32; its cosine and sine in
//   float32 (attribute numerics = "ggml": llama.cpp's arithmetic instead, relax/op/
//   ggml_numerics.h). Result: x's struct info. n must match between x and positions (a dim that
//   differs provably is an error).
#include "relax/op/ggml_numerics.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> InferRotaryEmbedding(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0, "x"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* positions, TensorArg(call, 1, "positions"));
  if (x->dtype && *x->dtype != DataType::Float32()) return OpError(call, "x must be float32, got ", x->dtype->ToString());
  if (x->ndim != -1 && x->ndim != 3) return OpError(call, "x must be (n, heads, head_dim), got ", x->ndim, " dims");
  if (positions->ndim != -1 && positions->ndim != 1) {
    return OpError(call, "positions must have 1 dim, got ", positions->ndim);
  }
  if (positions->dtype && *positions->dtype != DataType::Int32() && *positions->dtype != DataType::Int64()) {
    return OpError(call, "positions must be int32 or int64, got ", positions->dtype->ToString());
  }
  KILN_RETURN_IF_ERROR(GgmlNumericsAttr(call).status());
  KILN_ASSIGN_OR_RETURN(std::optional<double> theta, FloatAttr(call, "theta"));
  if (theta && !(*theta > 0)) return OpError(call, "theta must be positive, got ", *theta);
  auto mode = call.attrs.find("mode");
  if (mode != call.attrs.end()) {
    const auto* name = std::get_if<std::string>(&mode->second);
    if (name == nullptr || (*name != "normal" && *name != "neox")) {
      return OpError(call, "attribute mode must be \"normal\" or \"neox\"");
    }
  }
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> rotary_dims, IntAttr(call, "rotary_dims"));
  if (x->shape) {
    const std::vector<PrimExpr>& xs = *x->shape;
    std::optional<int64_t> head_dim = xs[2].as_int();
    if (!head_dim) return OpError(call, "the head dim of x (", DimStr(xs[2]), ") must be a constant");
    const int64_t dims = rotary_dims.value_or(*head_dim);
    if (dims <= 0 || dims % 2 != 0 || dims > *head_dim) {
      return OpError(call, "rotary_dims (", dims, ") must be even, positive and at most the head dim ", *head_dim);
    }
    if (positions->shape && DimsDiffer(xs[0], (*positions->shape)[0], analyzer)) {
      return OpError(call, "x has ", DimStr(xs[0]), " rows but positions has ", DimStr((*positions->shape)[0]));
    }
    if (positions->shape) {
      AssumeEqual(call, xs[0], (*positions->shape)[0], analyzer,
                  "x has {} rows at run time but positions has {}");
    }
  }
  return call.args[0].struct_info();
}

}  // namespace

void RegisterPositionalOps(OpRegistry& registry) {
  registry.Register(OpInfo{"rotary_embedding", 2, 2, true, {"theta", "mode", "rotary_dims", "numerics"}, InferRotaryEmbedding});
}

}  // namespace kiln::relax::op
