// The operator registry: every Relax operator by name, with its arity, purity, struct-info
// inference and (for tensor operators) legalization to TIR.
//
// Inference is symbolic: output shapes are PrimExprs over the inputs' symbolic dimensions,
// simplified by the analyzer. When inputs are only partly known (unknown ndim or dtype) the
// result is as precise as can be said. When the inputs are certainly incompatible (e.g.
// matmul inner dimensions 3 and 4, or n and n + 1), inference returns an InvalidArgument
// error that names the operator and the offending dimensions; a mismatch that the analyzer
// can neither prove nor refute (n vs m) is accepted — it becomes a run-time check.
//
// Registration is explicit (no static initializers): the registry is built on first use by
// calling each op family's Register function (declared in relax/op/op_common.h). Each
// family's file opens with the attributes and semantics of its operators (what the text
// format and legalization rely on):
//   relax/op/elementwise.cc  add subtract multiply divide maximum minimum power, comparisons
//                            (equal ... greater_equal), unary math, where
//   relax/op/matmul.cc       matmul
//   relax/op/manipulate.cc   reshape permute_dims broadcast_to concat split strided_slice take
//   relax/op/reduce.cc       sum mean max min prod variance argmax argmin softmax log_softmax
//                            layer_norm rms_norm astype bitcast
//   relax/op/normalization.cc batch_norm group_norm instance_norm lrn
//   relax/op/resize.cc       resize
//   relax/op/create.cc       full zeros ones arange
//   relax/op/nn.cc           conv1d conv2d conv3d conv1d_transpose conv2d_transpose conv3d_transpose
//                            max_pool1d/2d/3d avg_pool1d/2d/3d
//   relax/op/call.cc         call_tir call_dps_library call_builtin (impure) shape_of
//                            print (impure)
//   relax/op/lowered.cc      alloc_tensor call_tir_dps (what lower_call_tir produces)
//   relax/op/check_dims.cc   check_dims (run-time checks of what inference assumed)
//   relax/op/indexing.cc     gather_elements gather_nd scatter_elements scatter_nd one_hot
//   relax/op/rearrange.cc    pad tile flip trilu squeeze expand_dims
//   relax/op/sort.cc         cumsum sort argsort topk
//   relax/op/einsum.cc       einsum
//   relax/op/dynamic_shape.cc tensor_to_shape dynamic_strided_slice check_slice_strides (shapes from data)
// The broadcasting rule shared by the elementwise ops, matmul's batch dims and where is
// stated in relax/op/op_common.h. Attribute values are typed (relax/expr.h AttrValue): axis
// and the like are int64, axis lists std::vector<int64_t>, keepdims bool, epsilon double,
// dtypes DataType (a string spelling such as "float32" is accepted too).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/ir_module.h"
#include "tir/stmt.h"

namespace kiln::tir {
class Analyzer;
}

namespace kiln::relax {

// Infers a call's struct info. The call's arguments are normalized: each carries struct
// info. `analyzer` simplifies and proves facts about symbolic dimensions.
using InferStructInfoFn =
    std::function<absl::StatusOr<StructInfo>(const CallNode& call, tir::Analyzer& analyzer)>;

class BlockBuilder;

// What a legalization works with while LegalizeOps (relax/transform/legalize_ops.h) lowers
// one binding `name = op(args)` of a function.
class LegalizeContext {
 public:
  virtual ~LegalizeContext() = default;
  // A builder with an open block (dataflow if the binding's block is): every binding the
  // legalization emits lands right before the lowered binding, in order, and is itself
  // legalized (glue may use operators: a reshape becomes its own kernel).
  virtual BlockBuilder& builder() = 0;
  // The module being legalized, with the PrimFuncs added so far.
  virtual const IRModule& module() const = 0;
  // Adds `func` under a name derived from `name_hint` ("add", "add1", ...), or finds a
  // structurally equal PrimFunc added before; returns the GlobalVar to call_tir.
  virtual Expr AddPrimFunc(const std::string& name_hint, tir::PrimFunc func) = 0;
  // The name of the variable the lowered call is bound to, for naming glue bindings.
  virtual const std::string& binding_name() const = 0;
};

// Lowers a normalized call (its arguments and the call itself carry struct info) to the
// Relax expression that replaces it: any number of call_tirs to PrimFuncs it adds through
// the context, and glue emitted through the context's builder; the result must have the
// call's struct info (a call_tir with out_sinfo = the call's, a variable it bound, ...).
// Symbolic dims stay symbolic. Errors (unknown shapes or dtypes, unsupported dtypes) are
// InvalidArgument / Unimplemented naming the operator.
using LegalizeFn = std::function<absl::StatusOr<Expr>(LegalizeContext& context, const CallNode& call)>;

// The common case: the call becomes one call_tir of one PrimFunc in destination-passing
// style (relax/op/legalize_common.h states the parameter convention: one buffer per tensor
// argument, in order, then one per output tensor, then scalar symbolic variables). The
// family files relax/op/legalize_*.cc define these; SetLegalize wraps them in a LegalizeFn.
using KernelLegalizeFn = std::function<absl::StatusOr<tir::PrimFunc>(const CallNode& call)>;

struct OpInfo {
  std::string name;           // "add", "matmul", "call_tir", ... (text format: R.<name>)
  int min_args = 0;           // arity check done before inference
  int max_args = 0;           // -1: variadic
  bool pure = true;           // false for anything with side effects
  std::vector<std::string> attr_names;  // attributes the op accepts (others are an error)
  InferStructInfoFn infer;
  LegalizeFn legalize = nullptr;  // empty: no lowering to TIR (call forms, shape_of, print)
  // A one-kernel legalization's PrimFunc alone (what `legalize` wraps), for constant folding,
  // which runs it in the TIR interpreter; empty for other legalizations.
  KernelLegalizeFn legalize_kernel = nullptr;
  // A run-time check (check_dims): pure, since it changes no state, but its binding is never
  // dead code even when nothing uses its result - refusing bad inputs is what it is for.
  bool kept_when_unused = false;
  // The call forms (call_tir, call_builtin, ...) take their result's struct info from the
  // call's out_sinfo; on any other operator an out_sinfo is an error, since inference would
  // silently replace what the text declared.
  bool takes_out_sinfo = false;
};

class OpRegistry {
 public:
  // The process-wide registry with every built-in operator.
  static const OpRegistry& Global();

  // nullptr when no operator has that name.
  const OpInfo* Find(std::string_view name) const;
  std::vector<std::string> Names() const;
  // "unknown operator 'NAME'" and, when there is one, the operator meant: a close spelling
  // ('relux' -> 'relu') or Kiln's name for another framework's ('transpose' -> 'permute_dims').
  std::string UnknownOperatorMessage(std::string_view name) const;

  // Used by the op families' Register functions while the registry is built.
  void Register(OpInfo info);
  // Attaches an already registered operator's legalization (a KILN_CHECK if it is absent).
  void SetLegalize(std::string_view name, LegalizeFn legalize);
  // The same for a one-kernel legalization: the call becomes call_tir of its PrimFunc
  // (op::CallKernel in relax/op/legalize_common.h).
  void SetLegalize(std::string_view name, KernelLegalizeFn legalize);

 private:
  std::vector<OpInfo> ops_;  // sorted by name after construction
};

// Checks arity and attributes against the registry, then runs the op's inference. Errors
// (absl::InvalidArgumentError) name the operator: "add: expects 2 arguments, got 1",
// "sum: unknown attribute 'axes' (accepted: axis, keepdims)", "unknown operator 'foo'".
// Every argument must carry struct info, except callees passed as arguments (GlobalVar,
// ExternFunc).
absl::StatusOr<StructInfo> InferCallStructInfo(const CallNode& call, tir::Analyzer& analyzer);

}  // namespace kiln::relax
