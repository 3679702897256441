// The operator registry: every Relax operator by name, with its arity, purity, struct-info
// inference and (for tensor operators) legalization to a TIR PrimFunc.
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
//   relax/op/reduce.cc       sum mean max min argmax argmin softmax layer_norm rms_norm astype
//   relax/op/create.cc       full zeros ones arange
//   relax/op/nn.cc           conv2d max_pool2d
//   relax/op/call.cc         call_tir call_dps_library call_builtin (impure) shape_of
//                            print (impure)
//   relax/op/lowered.cc      alloc_tensor call_tir_dps (what lower_call_tir produces)
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
#include "tir/stmt.h"

namespace kiln::tir {
class Analyzer;
}

namespace kiln::relax {

// Infers a call's struct info. The call's arguments are normalized: each carries struct
// info. `analyzer` simplifies and proves facts about symbolic dimensions.
using InferStructInfoFn =
    std::function<absl::StatusOr<StructInfo>(const CallNode& call, tir::Analyzer& analyzer)>;

// Lowers a normalized call (its arguments and the call itself carry struct info) to a
// PrimFunc in destination-passing style: one buffer parameter per tensor argument, in order,
// then one per output tensor (a Tuple result gives several). Symbolic dims stay symbolic.
// Errors (unknown shapes or dtypes, unsupported dtypes) are InvalidArgument / Unimplemented
// naming the operator. The family files relax/op/legalize_*.cc define them.
using LegalizeFn = std::function<absl::StatusOr<tir::PrimFunc>(const CallNode& call)>;

struct OpInfo {
  std::string name;           // "add", "matmul", "call_tir", ... (text format: R.<name>)
  int min_args = 0;           // arity check done before inference
  int max_args = 0;           // -1: variadic
  bool pure = true;           // false for anything with side effects
  std::vector<std::string> attr_names;  // attributes the op accepts (others are an error)
  InferStructInfoFn infer;
  LegalizeFn legalize = nullptr;  // empty: no lowering to TIR (call forms, shape_of, print)
};

class OpRegistry {
 public:
  // The process-wide registry with every built-in operator.
  static const OpRegistry& Global();

  // nullptr when no operator has that name.
  const OpInfo* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

  // Used by the op families' Register functions while the registry is built.
  void Register(OpInfo info);
  // Attaches an already registered operator's legalization (a KILN_CHECK if it is absent).
  void SetLegalize(std::string_view name, LegalizeFn legalize);

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
