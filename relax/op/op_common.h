// Helpers shared by the operator families' struct-info inference (relax/op/*.cc):
// argument access, typed attribute reading, axis normalization, dtype unification and
// numpy broadcasting over symbolic shapes. Every error they return is an InvalidArgument
// whose message starts with the operator's name ("add: ...").
//
// Broadcasting rule (BroadcastShapes), dims aligned from the right:
//  - equal dims (proved by the analyzer) give that dim;
//  - a literal 1 broadcasts against anything (the other dim is the result);
//  - dims the analyzer proves different (3 vs 4, n vs n + 1) are an error naming both dims
//    and their axes. A symbolic dim is never assumed to be 1: `n` against `n + 1` is
//    rejected even though n == 1 would make it valid under numpy;
//  - dims the analyzer can neither prove equal nor different (n vs m, n vs 4) are accepted
//    and must be equal at run time: inference records the assumption (assumed_relations.h)
//    and the pass insert_shape_checks checks it before the call's first kernel runs. The
//    result takes the literal one if exactly one is literal (more precise), else the left
//    operand's dim.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "relax/expr.h"
#include "relax/op/assumed_relations.h"
#include "relax/op_registry.h"
#include "tir/analyzer.h"

namespace kiln::relax::op {

// The name of the call's operator ("add"); "<call>" if the callee is not an Op.
std::string OpName(const CallNode& call);

// InvalidArgument "<op>: <message parts...>".
template <typename... Parts>
absl::Status OpError(const CallNode& call, const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(OpName(call), ": ", parts...));
}

// tir::ToString of a dim, for messages.
std::string DimStr(const PrimExpr& dim);
std::string DimsStr(const std::vector<PrimExpr>& dims);
std::string DTypeStr(const std::optional<DataType>& dtype);

// Shape dims are int64 expressions (DESIGN.md); inference does int64 arithmetic on them, so
// another dtype is reported as an error naming `what` rather than tripping an internal
// check. TensorArg and ShapeArg apply it.
absl::Status CheckInt64Dims(const CallNode& call, const std::vector<PrimExpr>& dims,
                            const std::string& what);

// The struct info of argument `index`, required to be a Tensor; `what` names the argument
// in errors ("lhs", "data", ...).
absl::StatusOr<const TensorStructInfoNode*> TensorArg(const CallNode& call, size_t index,
                                                      const char* what);
// The argument's Shape struct info (a ShapeExpr or a value of Shape struct info).
absl::StatusOr<const ShapeStructInfoNode*> ShapeArg(const CallNode& call, size_t index,
                                                    const char* what);

// --- Typed attributes. Absent -> nullopt; present with the wrong kind -> error naming the
// attribute, the expected kind and the op. ---
absl::StatusOr<std::optional<int64_t>> IntAttr(const CallNode& call, const std::string& name);
absl::StatusOr<std::optional<bool>> BoolAttr(const CallNode& call, const std::string& name);
// Accepts a double or an integer.
absl::StatusOr<std::optional<double>> FloatAttr(const CallNode& call, const std::string& name);
// The attribute 'epsilon' of the normalizations, when present, is finite and non-negative:
// a NaN made every output NaN and an infinity every output the shift, without a word.
absl::Status CheckEpsilon(const CallNode& call);
// Accepts a DataType or its spelling as a string ("float32").
absl::StatusOr<std::optional<DataType>> DTypeAttr(const CallNode& call, const std::string& name);
// Accepts a vector of integers or a single integer (as a one-element vector).
absl::StatusOr<std::optional<std::vector<int64_t>>> IntsAttr(const CallNode& call,
                                                             const std::string& name);

// Accepts a list of numbers (an int list too).
absl::StatusOr<std::optional<std::vector<double>>> FloatsAttr(const CallNode& call, const std::string& name);

// Whether `call` is R.permute_dims swapping the last two axes of a tensor of rank `ndim`
// and keeping the others in place (axes absent reverse them: the same for rank 2). Passes
// that read such an operand transposed in place ask this (dispatch_libraries,
// fuse_attention).
bool SwapsLastTwoAxes(const CallNode& call, int ndim);

// Normalizes a possibly negative axis into [0, ndim); `ndim` must be known.
absl::StatusOr<int> NormalizeAxis(const CallNode& call, int64_t axis, int ndim,
                                  const char* what = "axis");
// Normalizes each axis and rejects repeats.
absl::StatusOr<std::vector<int>> NormalizeAxes(const CallNode& call,
                                               const std::vector<int64_t>& axes, int ndim,
                                               const char* what = "axes");

// The common dtype of two operands: unknown only when both are; an error when both are
// known and differ (`what_a`/`what_b` name the operands).
absl::StatusOr<std::optional<DataType>> UnifyDType(const CallNode& call,
                                                   const std::optional<DataType>& a,
                                                   const char* what_a,
                                                   const std::optional<DataType>& b,
                                                   const char* what_b);
// The device of a result computed from two operands: an unspecified ("") device takes the
// other's; two different explicit devices are an error (an operator runs on one device, a
// copy must be explicit).
absl::StatusOr<std::string> UnifyDevice(const CallNode& call, const std::string& a,
                                        const char* what_a, const std::string& b,
                                        const char* what_b);

// Broadcasts two known shapes (see the rule at the top of this file). Dims are simplified.
// `what_a` / `what_b` name the operands in the run-time check's message.
absl::StatusOr<std::vector<PrimExpr>> BroadcastShapes(const CallNode& call,
                                                      const std::vector<PrimExpr>& a,
                                                      const std::vector<PrimExpr>& b,
                                                      tir::Analyzer& analyzer,
                                                      const char* what_a = "lhs",
                                                      const char* what_b = "rhs");

// Broadcasts two tensors' struct info to the result shape part: known shape, known ndim
// only (shape nullopt), or unknown ndim (ndim kUnknownNdim).
struct ShapeOrNdim {
  std::optional<std::vector<PrimExpr>> shape;
  int ndim = kUnknownNdim;
};
absl::StatusOr<ShapeOrNdim> BroadcastTensors(const CallNode& call, const TensorStructInfoNode& a,
                                             const TensorStructInfoNode& b,
                                             tir::Analyzer& analyzer, const char* what_a = "lhs",
                                             const char* what_b = "rhs");

// A tensor struct info from a shape-or-ndim.
StructInfo MakeTensor(const ShapeOrNdim& shape, std::optional<DataType> dtype,
                      std::string device = "");
ShapeOrNdim ShapeOf(const TensorStructInfoNode& tensor);

// Whether two dims are certainly equal / certainly different. The analyzer decides first;
// as a fallback (it may be the constant-folding placeholder) dims that are the same base
// plus different constant offsets (n vs n + 1) are different, and structurally identical
// dims are equal.
bool DimsEqual(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer);
bool DimsDiffer(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer);

// floordiv(a, b), folded when both are constants or b is 1 (the simplifier would, but
// inference must not depend on how strong it is).
PrimExpr FloorDivDim(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer);
// True when e >= 0 for every assignment: by the analyzer, or structurally (shape variables
// have lower bound 0; sums, products, min and max of non-negatives are non-negative).
bool KnownNonNegative(const PrimExpr& e, tir::Analyzer& analyzer);

// Simplifies every dim.
std::vector<PrimExpr> SimplifyDims(std::vector<PrimExpr> dims, tir::Analyzer& analyzer);

// e + c, merged into e's own constant term when e is `x + k` or `x - k` (keeps dims
// readable whatever the simplifier's strength).
PrimExpr AddConst(const PrimExpr& e, int64_t c);

// An int64 constant.
PrimExpr Int(int64_t value);

// --- Per-family registration, called once by OpRegistry::Global(). ---
void RegisterElementwiseOps(OpRegistry& registry);
void RegisterMatmulOps(OpRegistry& registry);
void RegisterManipulateOps(OpRegistry& registry);
void RegisterReduceOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterNormalizationOps(OpRegistry& registry);
void RegisterResizeOps(OpRegistry& registry);  // resize.cc: resize  // normalization.cc: batch_norm group_norm instance_norm lrn
void RegisterCreateOps(OpRegistry& registry);
void RegisterCallOps(OpRegistry& registry);
void RegisterQuantizeOps(OpRegistry& registry);  // quantize.cc: dequantize, quantized_matmul
void RegisterPositionalOps(OpRegistry& registry);  // positional.cc: rotary_embedding
void RegisterCheckOps(OpRegistry& registry);  // check_dims.cc: check_dims
void RegisterIndexingOps(OpRegistry& registry);  // indexing.cc: gather_*, scatter_*, one_hot
void RegisterRearrangeOps(OpRegistry& registry);  // rearrange.cc: pad tile flip trilu squeeze expand_dims
void RegisterSortOps(OpRegistry& registry);  // sort.cc: cumsum sort argsort topk
void RegisterEinsumOps(OpRegistry& registry);  // einsum.cc: einsum
void RegisterDynamicShapeOps(OpRegistry& registry);  // dynamic_shape.cc: tensor_to_shape dynamic_strided_slice
void RegisterLoweredOps(OpRegistry& registry);  // lowered.cc: alloc_tensor, call_tir_dps, alloc_storage, storage_tensor

}  // namespace kiln::relax::op
