// Whether an expression can be evaluated before a loop: every variable it uses is defined
// outside it. The code generator asks while lowering a loop, with `available` true for the
// variables in scope there (KernelLowering's vars_).
#pragma once

#include <functional>

#include "tir/expr.h"

namespace kiln::codegen {

bool UsesOnlyAvailableVars(const tir::PrimExpr& e, const std::function<bool(const tir::VarNode*)>& available);

}  // namespace kiln::codegen
