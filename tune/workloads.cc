// ExtractWorkloads and the representative sizes of symbolic dims.
#include "tune/workloads.h"

#include <algorithm>
#include <map>

#include "relax/expr_functor.h"
#include "relax/transform/bind_target.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_tuned.h"

namespace kiln::tune {

namespace {

// A symbolic size's range: its declared bounds, at least 1, at most 2048 when unbounded.
std::pair<int64_t, int64_t> SizeBounds(const tir::Var& v) {
  return {std::max<int64_t>(1, v->lower_bound.value_or(1)), v->upper_bound.value_or(2048)};
}

// Counts the references to each global (by name) in the Relax functions it visits: each
// reference to a PrimFunc is one call of it per run.
class GlobalUses : public relax::ExprVisitor {
 public:
  std::map<std::string, int> uses;
  void VisitExpr_(const relax::GlobalVarNode* op, const relax::Expr& self) override {
    ++uses[op->name];
    relax::ExprVisitor::VisitExpr_(op, self);
  }
};

}  // namespace

std::vector<int64_t> RepresentativeSizes(int64_t lower, int64_t upper, const std::vector<int64_t>& chosen) {
  static const std::vector<int64_t> kDefaultSizes = {1, 16, 256, 2048};
  std::vector<int64_t> sizes;
  for (int64_t n : chosen.empty() ? kDefaultSizes : chosen) {
    int64_t clipped = std::clamp<int64_t>(n, lower, std::max(lower, upper));
    if (sizes.empty() || sizes.back() != clipped) sizes.push_back(clipped);
  }
  return sizes;
}

std::map<std::string, int64_t> SizesAt(const tir::PrimFunc& func, int64_t n) {
  std::map<std::string, int64_t> binding;
  for (const tir::Var& v : tir::schedule_internal::FunctionVars(func)) {
    auto [lower, upper] = SizeBounds(v);
    binding[v->name] = std::clamp<int64_t>(n, lower, std::max(lower, upper));
  }
  return binding;
}

absl::StatusOr<std::vector<Workload>> ExtractWorkloads(const relax::IRModule& module, const tir::Target& target,
                                                       const std::vector<int64_t>& chosen_sizes) {
  GlobalUses uses;
  for (const relax::IRModule::Entry& entry : module.entries()) {
    if (entry.is_relax()) uses.VisitExpr(std::get<relax::Expr>(entry.func));
  }
  std::vector<Workload> workloads;
  std::map<std::string, size_t> index_of_key;
  for (const relax::IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    KILN_ASSIGN_OR_RETURN(tir::Target t, relax::PrimFuncTarget(entry.name, *func, target));
    if (!t.is_cpu()) continue;
    const int calls = std::max(1, uses.uses[entry.name]);
    Workload w;
    w.key = tir::WorkloadKey(*func, t);
    if (auto it = index_of_key.find(w.key); it != index_of_key.end()) {
      workloads[it->second].calls += calls;
      continue;
    }
    index_of_key[w.key] = workloads.size();
    w.calls = calls;
    w.name = entry.name;
    w.func = *func;
    w.target = t;
    std::vector<tir::Var> vars = tir::schedule_internal::FunctionVars(*func);
    if (vars.empty()) {
      w.sizes = {0};
      w.bindings = {{}};
    } else {
      w.dispatch_var = vars[0]->name;
      auto [lower, upper] = SizeBounds(vars[0]);
      w.sizes = RepresentativeSizes(lower, upper, chosen_sizes);
      for (int64_t n : w.sizes) w.bindings.push_back(SizesAt(*func, n));
    }
    workloads.push_back(std::move(w));
  }
  return workloads;
}

}  // namespace kiln::tune
