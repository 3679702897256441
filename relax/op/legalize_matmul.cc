// Legalization of matmul (semantics in relax/op/matmul.cc): one block with spatial
// variables over the output and one reduction variable over K; operands are cast to
// out_dtype before the multiply-add. A float16 result accumulates in float32 (a scratch
// buffer the schedule turns into a register tile), cast to float16 once at the end.
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

// The operand's batch indices: its leading dims aligned from the right against `batch`.
std::vector<PrimExpr> BatchIndex(const Buffer& buf, size_t batch_dims, const std::vector<PrimExpr>& batch) {
  std::vector<PrimExpr> index;
  for (size_t j = 0; j < batch_dims; ++j) {
    const std::optional<int64_t> dim = buf->shape[j].as_int();
    index.push_back(dim.has_value() && *dim == 1 ? PrimExpr(int64_t{0})
                                                 : batch[batch.size() - batch_dims + j]);
  }
  return index;
}

absl::StatusOr<tir::PrimFunc> LegalizeMatmul(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  if (p.inputs.size() != 2) return OpError(call, "cannot legalize: expects two tensor operands");
  const Buffer& a = p.inputs[0];
  const Buffer& b = p.inputs[1];
  const Buffer& out = p.outputs[0];
  const size_t na = a->shape.size();
  const size_t nb = b->shape.size();
  if (na == 0 || nb == 0) return OpError(call, "cannot legalize: 0-d operand");
  const bool has_m = na >= 2;
  const bool has_n = nb >= 2;
  const size_t no = out->shape.size();
  const size_t nbatch = no - (has_m ? 1 : 0) - (has_n ? 1 : 0);
  const DataType t = AccumulationType(out->dtype);
  const Buffer acc = t == out->dtype ? out : ScratchBuffer("matmul_acc", t, out->shape);
  auto cast = [&](PrimExpr e) { return CastTo(t, std::move(e)); };
  Stmt body = ReduceBlock(
      "matmul", acc, {a->shape[na - 1]}, Const(t, 0), tir::Add,
      [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
        std::vector<PrimExpr> batch(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(nbatch));
        std::vector<PrimExpr> ai = has_m ? BatchIndex(a, na - 2, batch) : std::vector<PrimExpr>{};
        if (has_m) ai.push_back(s[nbatch]);
        ai.push_back(r[0]);
        std::vector<PrimExpr> bi = has_n ? BatchIndex(b, nb - 2, batch) : std::vector<PrimExpr>{};
        bi.push_back(r[0]);
        if (has_n) bi.push_back(s[no - 1]);
        return tir::Mul(cast(a.Load(ai)), cast(b.Load(bi)));
      });
  if (!acc.same_as(out)) {
    Stmt narrow = ComputeBlock("matmul_cast", out, [&](const std::vector<PrimExpr>& i) {
      return tir::Cast(out->dtype, acc.Load(i));
    });
    body = tir::Allocate(acc, tir::SeqStmt({body, narrow}));
  }
  return MakePrimFunc(p, body, "out_ewise_fusable");
}

}  // namespace

void RegisterMatmulLegalize(OpRegistry& registry) { registry.SetLegalize("matmul", LegalizeMatmul); }

}  // namespace kiln::relax::op
