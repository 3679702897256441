// RewriteFunctionBodies: the loop most graph passes share — rewrite the body of every Relax
// function of a module, keep everything else.
//
// A function whose rewritten body is the same object is kept as it was (so a pass that
// changes nothing returns entries that are the same objects, which later passes and tests
// rely on); otherwise it is rebuilt with the new body and its parameters, return struct
// info, purity, attributes and struct info unchanged. The first error stops the loop.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

using BodyRewrite = std::function<absl::StatusOr<Expr>(const std::string& name, const FunctionNode& function)>;

absl::StatusOr<IRModule> RewriteFunctionBodies(const IRModule& module, const BodyRewrite& rewrite);

}  // namespace kiln::relax
