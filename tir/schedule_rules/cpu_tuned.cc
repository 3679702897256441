// ScheduleForCpuTuned: one scheduled function from a workload's tuned variants, dispatching
// at run time on a symbolic size when the best variants differ by size.
#include "tir/schedule_rules/cpu_tuned.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/structural_hash.h"

namespace kiln::tir {

using namespace schedule_internal;  // NOLINT

std::string WorkloadKey(const PrimFunc& unscheduled, const Target& target) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016" PRIx64, StructuralHash(unscheduled));
  return absl::StrCat(hash, " ", target.ToString());
}

int64_t DispatchThreshold(int64_t smaller, int64_t larger) {
  double mean = std::sqrt(static_cast<double>(std::max<int64_t>(smaller, 1)) * static_cast<double>(larger));
  return std::clamp<int64_t>(static_cast<int64_t>(std::llround(mean)), smaller + 1, larger);
}

absl::StatusOr<PrimFunc> ScheduleForCpuTuned(const PrimFunc& func, const CpuScheduleOptions& options,
                                             const TunedWorkload& tuned) {
  // Adjacent sizes with the same best knobs are one variant (over the union of their ranges).
  std::vector<std::pair<int64_t, CpuScheduleKnobs>> variants;  // (least size it serves, knobs)
  for (size_t i = 0; i < tuned.best_by_size.size(); ++i) {
    const auto& [size, knobs] = tuned.best_by_size[i];
    if (!variants.empty() && variants.back().second == knobs) continue;
    int64_t from = i == 0 ? 0 : DispatchThreshold(tuned.best_by_size[i - 1].first, size);
    variants.emplace_back(from, knobs);
  }
  CpuScheduleOptions variant_options = options;
  if (variants.empty()) return ScheduleForCpu(func, options);
  if (variants.size() == 1 || tuned.dispatch_var.empty()) {
    variant_options.knobs = variants[0].second;
    return ScheduleForCpu(func, variant_options);
  }
  const Var* size_var = nullptr;
  std::vector<Var> vars = FunctionVars(func);
  for (const Var& v : vars) {
    if (v->name == tuned.dispatch_var) size_var = &v;
  }
  if (size_var == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuned schedule: the function has no symbolic size '", tuned.dispatch_var, "'"));
  }
  NameSet used = UsedNames(func);
  std::vector<Stmt> bodies;
  for (size_t i = 0; i < variants.size(); ++i) {
    variant_options.knobs = variants[i].second;
    KILN_ASSIGN_OR_RETURN(PrimFunc scheduled, ScheduleForCpu(func, variant_options));
    bodies.push_back(CopyWithFreshDefinitions(scheduled->body, absl::StrCat("_v", i + 1), &used));
  }
  // Built from the last variant outwards: if (n < from(last)) { ... } else { last }.
  Stmt body = bodies.back();
  for (size_t i = variants.size() - 1; i > 0; --i) {
    PrimExpr below = LT(*size_var, IntImm((*size_var).dtype(), variants[i].first));
    body = IfThenElse(below, bodies[i - 1], body);
  }
  return WithBody(func, body);
}

}  // namespace kiln::tir
