// matmul (lhs, rhs), attribute out_dtype (optional).
//
// numpy matmul semantics: lhs (..., M, K) x rhs (..., K, N) -> (..., M, N), batch dims
// broadcast (op_common.h rule). A 1-D lhs (K) is treated as (1, K) and a 1-D rhs (K) as
// (K, 1), and that added dim is dropped from the result; 0-D operands are an error. Inner
// dims K must match: provably different K (3 vs 4, n vs n + 1) is an error, unprovable K
// (n vs m) is accepted and checked at run time (assumed_relations.h). Operands share a dtype; the result has out_dtype when given, else
// that dtype. With an operand of unknown ndim the result's ndim is unknown. Products are
// summed in the result dtype, except that a float16 result accumulates in float32 and is
// rounded to float16 once (as PyTorch and ONNX Runtime do).
#include <algorithm>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<StructInfo> InferMatmul(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* lhs, TensorArg(call, 0, "lhs"));
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* rhs, TensorArg(call, 1, "rhs"));
  KILN_ASSIGN_OR_RETURN(auto dtype, UnifyDType(call, lhs->dtype, "lhs", rhs->dtype, "rhs"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, DTypeAttr(call, "out_dtype"));
  if (out_dtype) dtype = out_dtype;
  KILN_ASSIGN_OR_RETURN(std::string device,
                        UnifyDevice(call, lhs->device, "lhs", rhs->device, "rhs"));
  if (lhs->ndim == 0 || rhs->ndim == 0) {
    return OpError(call, "operands must have at least 1 dimension, got lhs ndim ", lhs->ndim,
                   " and rhs ndim ", rhs->ndim);
  }
  if (lhs->ndim == kUnknownNdim || rhs->ndim == kUnknownNdim) {
    return TensorSInfoOfNdim(kUnknownNdim, dtype, device);
  }
  const int lnd = lhs->ndim;
  const int rnd = rhs->ndim;
  const int batch_ndim = std::max(std::max(lnd, 2) - 2, std::max(rnd, 2) - 2);
  const int out_ndim = batch_ndim + (lnd > 1 ? 1 : 0) + (rnd > 1 ? 1 : 0);
  if (!lhs->shape || !rhs->shape) return TensorSInfoOfNdim(out_ndim, dtype, device);

  const std::vector<PrimExpr>& a = *lhs->shape;
  const std::vector<PrimExpr>& b = *rhs->shape;
  const int lk = lnd - 1;                 // lhs inner axis
  const int rk = rnd == 1 ? 0 : rnd - 2;  // rhs inner axis
  PrimExpr ka = analyzer.Simplify(a[static_cast<size_t>(lk)]);
  PrimExpr kb = analyzer.Simplify(b[static_cast<size_t>(rk)]);
  if (!DimsEqual(ka, kb, analyzer) && DimsDiffer(ka, kb, analyzer)) {
    return OpError(call, "inner dimensions differ: lhs dim ", lk, " is ", DimStr(ka), ", rhs dim ",
                   rk, " is ", DimStr(kb));
  }
  AssumeEqual(call, ka, kb, analyzer,
              absl::StrCat("inner dimensions differ at run time: lhs dim ", lk, " is {}, rhs dim ", rk, " is {}"));
  std::vector<PrimExpr> lbatch(a.begin(), a.end() - std::min(lnd, 2));
  std::vector<PrimExpr> rbatch(b.begin(), b.end() - std::min(rnd, 2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, BroadcastShapes(call, lbatch, rbatch, analyzer));
  if (lnd > 1) out.push_back(a[static_cast<size_t>(lnd - 2)]);
  if (rnd > 1) out.push_back(b[static_cast<size_t>(rnd - 1)]);
  return TensorSInfo(SimplifyDims(std::move(out), analyzer), dtype, device);
}

}  // namespace

void RegisterMatmulOps(OpRegistry& registry) {
  registry.Register({"matmul", 2, 2, true, {"out_dtype"}, InferMatmul});
}

}  // namespace kiln::relax::op
