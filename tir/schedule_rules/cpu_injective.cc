// The CPU rule for blocks without a reduction (elementwise, broadcast, transpose, ...).
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"

namespace kiln::tir::cpu_rules {

using namespace schedule_internal;  // NOLINT

absl::Status ScheduleInjective(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& block_options) {
  CpuScheduleOptions options = block_options;
  if (!options.knobs.injective.parallel) options.num_threads = 1;
  const int lanes = options.knobs.injective.lanes > 0 ? options.knobs.injective.lanes : options.vector_lanes;
  std::vector<std::string> outer;
  for (size_t i = 0; i + 1 < nest.loops.size(); ++i) outer.push_back(nest.loops[i]->loop_var.name());
  const ForNode* inner = nest.loops.back();
  bool has_inner_blocks = !OutermostBlocks(nest.block->body).empty();
  if (has_inner_blocks) {  // the children get their own rules; run the whole nest in parallel
    outer.push_back(inner->loop_var.name());
    return ParallelOver(s, outer, options);
  }
  KILN_ASSIGN_OR_RETURN(std::string split_outer, VectorizeInner(s, inner->loop_var.name(),
                                                                inner->extent.as_int().value_or(0),
                                                                lanes));
  if (outer.empty() && !split_outer.empty()) outer.push_back(split_outer);
  return ParallelOver(s, outer, options);
}

}  // namespace kiln::tir::cpu_rules
