// What the GPU rules share: a fused nest split over blocks and threads.
#include "support/status_macros.h"
#include "tir/schedule_rules/gpu_rules.h"

namespace kiln::tir::gpu_rules {

absl::StatusOr<std::string> BindFused(Schedule* s, const std::vector<std::string>& loops, int64_t extent_or_zero,
                       const GpuScheduleOptions& options) {
  if (loops.empty()) return absl::InvalidArgumentError("gpu schedule: no loop to bind");
  std::string fused = loops[0];
  if (loops.size() > 1) {
    KILN_ASSIGN_OR_RETURN(fused, s->Fuse(loops));
  }
  int64_t threads = options.threads_per_block;
  if (extent_or_zero > 0 && extent_or_zero < threads) {
    // A small constant nest: one block of whole warps rather than mostly idle threads.
    const int64_t warp = std::max(1, options.warp_size);
    threads = std::min<int64_t>(threads, (extent_or_zero + warp - 1) / warp * warp);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(fused, {-1, threads}));
  KILN_RETURN_IF_ERROR(s->Bind(parts[0], "blockIdx.x"));
  KILN_RETURN_IF_ERROR(s->Bind(parts[1], "threadIdx.x"));
  return parts[1];
}

}  // namespace kiln::tir::gpu_rules
