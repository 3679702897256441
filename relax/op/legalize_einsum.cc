// Legalization of einsum (semantics in relax/op/einsum.cc): one reduction block whose
// spatial variables are the output's labels and whose reduction variables are the other
// labels; each operand is read with its labels' variables (a repeated label reads the
// diagonal, a broadcast ellipsis dim of 1 reads index 0) and the product of the operands is
// summed, in float32 for float16. (Not yet: recognizing the equations that are a matmul or a
// permute and lowering them as those operators for their faster schedules.)
#include "relax/op/einsum_equation.h"
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<tir::PrimFunc> LegalizeEinsum(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& out = p.outputs[0];
  auto it = call.attrs.find("subscripts");
  if (it == call.attrs.end()) return OpError(call, "cannot legalize: missing subscripts");
  std::vector<int> ndims;
  for (const Buffer& b : p.inputs) ndims.push_back(b.ndim());
  absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(std::get<std::string>(it->second), ndims);
  if (!eq.ok()) return OpError(call, eq.status().message());
  // Each label's extent, from an operand dim that is not a broadcast 1 where there is one.
  std::vector<PrimExpr> extent(static_cast<size_t>(eq->num_labels));
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    for (size_t d = 0; d < eq->inputs[k].size(); ++d) {
      PrimExpr& e = extent[static_cast<size_t>(eq->inputs[k][d])];
      if (!e.defined() || e.as_int() == 1) e = p.inputs[k]->shape[d];
    }
  }
  std::vector<bool> in_output(static_cast<size_t>(eq->num_labels), false);
  for (int l : eq->output) in_output[static_cast<size_t>(l)] = true;
  std::vector<int> reduced;
  std::vector<PrimExpr> reduce_extents;
  for (int l = 0; l < eq->num_labels; ++l) {
    if (!in_output[static_cast<size_t>(l)]) {
      reduced.push_back(l);
      reduce_extents.push_back(extent[static_cast<size_t>(l)]);
    }
  }
  const DataType acc = AccumulationType(out->dtype);
  Buffer sum = acc == out->dtype ? out : ScratchBuffer("einsum_acc", acc, out->shape);
  Stmt body = ReduceBlock(
      "einsum", sum, reduce_extents, Const(acc, 0), [](PrimExpr s, PrimExpr v) { return tir::Add(s, v); },
      [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
        std::vector<PrimExpr> var(static_cast<size_t>(eq->num_labels));
        for (size_t i = 0; i < eq->output.size(); ++i) var[static_cast<size_t>(eq->output[i])] = s[i];
        for (size_t i = 0; i < reduced.size(); ++i) var[static_cast<size_t>(reduced[i])] = r[i];
        PrimExpr product;
        for (size_t k = 0; k < p.inputs.size(); ++k) {
          const Buffer& in = p.inputs[k];
          std::vector<PrimExpr> index;
          for (size_t d = 0; d < eq->inputs[k].size(); ++d) {
            const int l = eq->inputs[k][d];
            const bool broadcast = l < eq->ellipsis_rank && in->shape[d].as_int() == 1;
            index.push_back(broadcast ? Int(0) : var[static_cast<size_t>(l)]);
          }
          PrimExpr v = CastTo(acc, in.Load(index));
          product = product.defined() ? tir::Mul(product, v) : v;
        }
        return product;
      });
  if (acc == out->dtype) return MakePrimFunc(p, body, reduce_extents.empty() ? "injective" : "opaque");
  Stmt cast = ComputeBlock("einsum_cast", out, [&](const std::vector<PrimExpr>& s) {
    return CastTo(out->dtype, sum.Load(s));
  });
  return MakePrimFunc(p, tir::Allocate(sum, tir::SeqStmt({body, cast})), "opaque");
}

}  // namespace

void RegisterEinsumLegalize(OpRegistry& registry) { registry.SetLegalize("einsum", LegalizeEinsum); }

}  // namespace kiln::relax::op
