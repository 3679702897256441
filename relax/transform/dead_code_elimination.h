// DeadCodeElimination: removes what cannot affect what a module's entry points compute.
//
// Within every Relax function (If branches and nested functions included):
//  - A binding whose variable is never used is removed when removing it cannot be observed:
//    inside a dataflow block any binding (they are pure by construction); outside, a binding
//    whose value is pure: a leaf, a tuple, a tuple item, a function, or a call to a pure
//    operator (OpInfo::pure), to a pure Relax function of the module, or to a closure whose
//    struct info says pure, or an If whose branches hold only such bindings. Impure calls
//    (R.print, R.call_builtin, an impure function, an extern function, a PrimFunc called
//    directly) stay, as does every match_cast (it checks at run time and may define symbolic
//    variables that struct info elsewhere uses) and every call to an operator that is
//    OpInfo::kept_when_unused (check_dims: a run-time check).
//  - Removal runs to a fixed point: a chain of bindings that only feed dead bindings goes
//    entirely. Blocks left without bindings are removed.
// In the module:
//  - Entry points are the Relax functions without the attribute `primitive` (fused groups)
//    or `private`; they all stay. Everything that an entry point reaches through GlobalVar
//    references (calls, call_tir callees, functions held in variables), transitively, stays.
//  - Unreached PrimFuncs and unreached `primitive` / `private` Relax functions are removed.
//    An attribute counts as set unless its value is `false` or `0`.
//
// A module in which nothing is dead is returned unchanged: every entry is the same object.
// The pass cannot fail on a well-formed module; the StatusOr is for the pipeline's shape.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

absl::StatusOr<IRModule> DeadCodeElimination(const IRModule& module);

}  // namespace kiln::relax
