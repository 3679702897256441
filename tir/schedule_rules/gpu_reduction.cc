// The GPU rule for reductions (row sums, max, norms' statistics; matmuls that gpu_matmul.cc
// does not tile): one thread per output element. Its reduction runs serially in that
// thread, in the order the CPU reference runs it, so float results round like a serial sum.
// A cross-thread combine (a warp or block reducing one row) is not implemented yet: long
// rows with few outputs use few threads.
#include "support/status_macros.h"
#include "tir/schedule_rules/gpu_rules.h"

namespace kiln::tir::gpu_rules {

absl::Status ScheduleGpuReduction(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  std::vector<std::string> spatial;
  int64_t extent = 1;
  bool in_reduction = false;
  for (size_t i = 0; i < nest.loops.size(); ++i) {
    if (cpu_rules::IsReductionLoop(nest, i)) {
      in_reduction = true;
      continue;
    }
    if (in_reduction) {
      return absl::InvalidArgumentError(absl::StrCat("gpu reduction: spatial loop '", nest.loops[i]->loop_var.name(),
                                                     "' lies inside a reduction loop"));
    }
    spatial.push_back(nest.loops[i]->loop_var.name());
    std::optional<int64_t> e = nest.loops[i]->extent.as_int();
    extent = e && extent > 0 ? extent * *e : 0;
  }
  if (!spatial.empty()) return BindFused(s, spatial, extent, options).status();
  // A scalar result: one thread of one block runs the whole reduction.
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(nest.loops[0]->loop_var.name(), {1, -1}));
  return s->Bind(parts[0], "blockIdx.x");
}

}  // namespace kiln::tir::gpu_rules
