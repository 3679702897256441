// The default GPU schedule: which rule each block gets, then the verifier.
#include "tir/schedule_rules/gpu_schedule.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/gpu_rules.h"

namespace kiln::tir {

namespace {

using namespace schedule_internal;  // NOLINT

std::vector<std::string> BlockNames(const PrimFunc& func) {
  std::vector<std::string> blocks;
  ForEachStmt(func->body, [&](const Stmt& s) {
    if (const auto* b = s.as<BlockNode>()) blocks.push_back(b->name);
  });
  return blocks;
}

// Whether a loop around the block is already bound (an enclosing block's rule bound the
// nest the block sits in: it runs inside those threads).
bool InsideThreadNest(const PrimFunc& func, const BlockNode* block) {
  for (const Stmt& a : AncestorsOf(func->body, block)) {
    const auto* f = a.as<ForNode>();
    if (f && f->for_kind == ForKind::kThreadBinding) return true;
  }
  return false;
}

}  // namespace

GpuScheduleOptions GpuScheduleOptionsFor(const Target& target) {
  GpuScheduleOptions options;
  if (target.max_threads_per_block > 0) {
    options.threads_per_block = std::min(options.threads_per_block, target.max_threads_per_block);
  }
  if (target.warp_size > 0) options.warp_size = target.warp_size;
  if (target.max_shared_memory_per_block > 0) options.shared_memory_per_block = target.max_shared_memory_per_block;
  return options;
}

absl::StatusOr<PrimFunc> ScheduleForGpu(const PrimFunc& func, const Target& target, std::string* trace) {
  if (!target.is_gpu()) {
    return absl::InvalidArgumentError(absl::StrCat("gpu schedule: target ", target.ToString(), " is not a GPU"));
  }
  const GpuScheduleOptions options = GpuScheduleOptionsFor(target);
  Schedule schedule(func);
  cpu_rules::InlineIntermediates(&schedule);
  for (const std::string& name : BlockNames(schedule.func())) {
    std::optional<cpu_rules::PlainNest> nest = cpu_rules::FindPlainNest(schedule.func(), name);
    if (!nest || nest->loops.empty() || !cpu_rules::WritesFollowSpatialVars(*nest)) continue;
    if (InsideThreadNest(schedule.func(), nest->block)) continue;
    // Each rule runs on a copy: one that does not apply leaves the block as it was (and
    // the verifier below names it).
    Schedule attempt = schedule;
    absl::Status status = absl::UnknownError("no rule tried");
    if (nest->block->is_reduction() && cpu_rules::IsMatmulLike(*nest)) {
      status = gpu_rules::ScheduleGpuMatmul(&attempt, *nest, options);
      if (!status.ok()) attempt = schedule;  // the plain reduction rule below instead
    } else if (nest->block->is_reduction() && gpu_rules::FewRowsMatmulLayout(*nest).ok()) {
      // quantized_matmul's sum over blocks and positions (q4_0, q4_1, q8_0), at any row
      // count: no operand tile is staged for it, so rows share nothing and k is split as
      // for a decode step.
      status = gpu_rules::ScheduleGpuFewRows(&attempt, *nest, options);
      if (!status.ok()) attempt = schedule;
    }
    if (!status.ok()) {
      status = nest->block->is_reduction() ? gpu_rules::ScheduleGpuReduction(&attempt, *nest, options)
                                           : gpu_rules::ScheduleGpuInjective(&attempt, *nest, options);
    }
    if (status.ok()) schedule = std::move(attempt);
  }
  KILN_RETURN_IF_ERROR(VerifyGpuFunction(schedule.func(), target));
  if (trace) *trace = schedule.trace().ToString();
  return schedule.func();
}

}  // namespace kiln::tir
