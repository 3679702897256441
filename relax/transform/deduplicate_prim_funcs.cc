#include "relax/transform/deduplicate_prim_funcs.h"

#include <string>
#include <unordered_map>

#include "relax/expr_functor.h"
#include "relax/transform/function_pass.h"
#include "tir/structural_equal.h"
#include "tir/structural_hash.h"

namespace kiln::relax {
namespace {

class GlobalRenamer : public ExprMutator {
 public:
  explicit GlobalRenamer(const std::unordered_map<std::string, std::string>& kept_for) : kept_for_(kept_for) {}
  Expr VisitExpr_(const GlobalVarNode* op, const Expr& self) override {
    auto it = kept_for_.find(op->name);
    if (it == kept_for_.end()) return self;
    return GlobalVar(it->second, self.struct_info());
  }

 private:
  const std::unordered_map<std::string, std::string>& kept_for_;
};

}  // namespace

absl::StatusOr<IRModule> DeduplicatePrimFuncs(const IRModule& module) {
  std::unordered_map<tir::PrimFunc, std::string, tir::StructuralHashFn, tir::StructuralEqualFn> first_of;
  std::unordered_map<std::string, std::string> kept_for;  // a duplicate's name -> the kept one's
  for (const IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    auto [it, fresh] = first_of.emplace(*func, entry.name);
    if (!fresh) kept_for.emplace(entry.name, it->second);
  }
  if (kept_for.empty()) return module;
  GlobalRenamer renamer(kept_for);
  absl::StatusOr<IRModule> result = RewriteFunctionBodies(
      module, [&](const std::string&, const FunctionNode& function) -> absl::StatusOr<Expr> {
        return renamer.VisitExpr(function.body);
      });
  if (!result.ok()) return result.status();
  for (const auto& [duplicate, kept] : kept_for) result->Remove(duplicate);
  return result;
}

}  // namespace kiln::relax
