// BindTarget: every PrimFunc of the module that has no "target" attribute gets `target`
// (tir/target.h), so the passes after it (schedule) and the code generators read each
// function's target from the function. A PrimFunc that already names a target keeps it; one
// whose "target" attribute does not parse is an error naming the PrimFunc. Relax functions
// are unchanged.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/target.h"

namespace kiln::relax {

absl::StatusOr<IRModule> BindTarget(const IRModule& module, const tir::Target& target);

// The target PrimFunc `name` is compiled for: its "target" attribute, else `fallback`; an
// attribute that does not parse is an error naming the PrimFunc.
absl::StatusOr<tir::Target> PrimFuncTarget(const std::string& name, const tir::PrimFunc& func,
                                           const tir::Target& fallback);

}  // namespace kiln::relax
