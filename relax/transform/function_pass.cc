#include "relax/transform/function_pass.h"

#include <memory>
#include <utility>

#include "support/status_macros.h"

namespace kiln::relax {

absl::StatusOr<IRModule> RewriteFunctionBodies(const IRModule& module, const BodyRewrite& rewrite) {
  IRModule result = module;
  for (const IRModule::Entry& entry : module.entries()) {
    const FunctionNode* fn = entry.relax_function();
    if (fn == nullptr) continue;
    KILN_ASSIGN_OR_RETURN(Expr body, rewrite(entry.name, *fn));
    if (body.same_as(fn->body)) continue;
    const Expr& old = std::get<Expr>(entry.func);
    result.Update(entry.name, Expr(std::make_shared<FunctionNode>(fn->params, std::move(body), fn->ret_struct_info,
                                                                  fn->is_pure, fn->attrs, old.struct_info())));
  }
  return result;
}

}  // namespace kiln::relax
