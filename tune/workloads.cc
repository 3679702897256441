// ExtractWorkloads and the representative sizes of symbolic dims.
#include "tune/workloads.h"

#include <algorithm>
#include <set>

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
  std::vector<Workload> workloads;
  std::set<std::string> seen;
  for (const relax::IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr) continue;
    KILN_ASSIGN_OR_RETURN(tir::Target t, relax::PrimFuncTarget(entry.name, *func, target));
    if (!t.is_cpu()) continue;
    Workload w;
    w.key = tir::WorkloadKey(*func, t);
    if (!seen.insert(w.key).second) continue;
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
