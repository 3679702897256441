// InsertShapeChecks: checks at run time, before the first kernel that relies on it, every
// relation between symbolic dimensions that an operator's struct-info inference assumed
// without proving it (relax/op/assumed_relations.h): matmul inner dims n vs m, broadcasting
// n against m or 4, concat's dims off the axis, where's operands, layer_norm / rms_norm
// parameters against the normalized axes, conv2d channels, a reshape's element counts, a
// split's sections, a pooling window against the input, rotary_embedding's positions.
//
// Runs right after normalize. In every Relax function (and in each If branch on its own) it
// re-infers each operator call under an AssumedRelationRecorder and emits, for each relation
// recorded,
//     check_y = R.check_dims(R.prim_value(lhs), R.prim_value(rhs), relation="equal",
//                            message="binding 'y': matmul: inner dimensions differ at run time: lhs dim 1 is {}, rhs dim 0 is {}")
// (relax/op/check_dims.cc) as early as its symbolic variables are bound: at the top of the
// function body for variables that the parameters bind, right after the match_cast that binds
// the last of them otherwise - so a call with mismatched shapes fails before any kernel runs.
// Identical checks (same relation, operands and message) are emitted once per body. A
// relation whose variables the VM never binds (they appear only inside compound dims) is not
// checked here; the kernel ABI's own argument checks remain.
//
// The VM reports a failed check as
//     in function 'main' at instruction 1 (shape check): builtin 'kiln.check_dims_equal': binding 'y': matmul: inner
//     dimensions differ at run time: lhs dim 1 is 5, rhs dim 0 is 4
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

absl::StatusOr<IRModule> InsertShapeChecks(const IRModule& module);

}  // namespace kiln::relax
