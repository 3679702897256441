// The GPU rule for blocks without a reduction (elementwise, broadcast, transpose, ...): one
// thread per element, consecutive threads on consecutive elements of the fused nest (so a
// warp's loads and stores of the innermost dimension coalesce).
#include "tir/schedule_rules/gpu_rules.h"

namespace kiln::tir::gpu_rules {

absl::Status ScheduleGpuInjective(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  std::vector<std::string> loops;
  int64_t extent = 1;
  for (const ForNode* loop : nest.loops) {
    loops.push_back(loop->loop_var.name());
    std::optional<int64_t> e = loop->extent.as_int();
    extent = e && extent > 0 ? extent * *e : 0;
  }
  if (extent == 1 && loops.size() == 1) {
    // One element (a scalar result's fill): one block of one thread. Split by a warp, the
    // 31 idle threads' iterations would all write that element as far as Bind can tell.
    return s->Bind(loops[0], "blockIdx.x");
  }
  return BindFused(s, loops, extent, options).status();
}

}  // namespace kiln::tir::gpu_rules
