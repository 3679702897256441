// The rules of the default GPU schedule (tir/schedule_rules/gpu_schedule.h), one file each.
// Internal to tir/schedule_rules/: the public entry is ScheduleForGpu. They share the nest
// analysis of the CPU rules (cpu_rules.h: PlainNest, FindPlainNest).
//
// What they promise: each rule rewrites its block through Schedule primitives only, returns
// an error status when it does not apply (ScheduleForGpu then keeps the function as it was
// before the rule), and never changes what the function computes.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule_rules/cpu_rules.h"
#include "tir/schedule_rules/gpu_schedule.h"

namespace kiln::tir::gpu_rules {

// gpu_bind.cc. Fuses `loops` (directly nested, outermost first; at least one), splits the
// result by the threads per block and binds the parts to blockIdx.x and threadIdx.x.
// `extent_or_zero` is the fused extent when it is a known constant (then a small nest gets
// fewer threads: the extent rounded up to a warp). Returns the threadIdx.x loop's name.
absl::StatusOr<std::string> BindFused(Schedule* s, const std::vector<std::string>& loops, int64_t extent_or_zero,
                       const GpuScheduleOptions& options);

// gpu_injective.cc. No reduction: every loop of the nest fused and bound.
absl::Status ScheduleGpuInjective(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options);

// gpu_reduction.cc. Reductions (the spatial loops must all lie outside the reduction
// loops): one block per output element whose threads share the row when its combine
// merges across threads (transform::CrossThreadPartialBytes), else the spatial loops fused
// and bound, one thread per output element running the reduction loops serially; with no
// spatial loop, one block (threads sharing the row, or one thread).
absl::Status ScheduleGpuReduction(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options);

// gpu_matmul.cc. Matmuls (cpu_rules::IsMatmulLike): ScheduleGpuMatmulShared where it
// applies; otherwise a register tile of outputs per thread read straight from device
// memory, its accumulators in a local buffer written back by the same thread; the tiles
// fused and bound. Errors (the caller then uses ScheduleGpuReduction) when the block is no
// matmul or a primitive refuses.
absl::Status ScheduleGpuMatmul(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options);

// gpu_matmul_shared.cc. A block of threadIdx.y x threadIdx.x threads per output tile, a
// register tile per thread, the operand tiles of each reduction step staged in shared
// memory (CacheReadShared) within the target's shared memory. Errors when a row or column
// count is a constant no larger than one register tile, when no operand tile can be staged,
// or when a primitive refuses.
absl::Status ScheduleGpuMatmulShared(Schedule* s, const cpu_rules::PlainNest& nest,
                                     const GpuScheduleOptions& options);

// gpu_few_rows.cc. A matmul with few rows against a weight (`out[.., i, j] += x[.., i, k] *
// w(j, k)`, the weight term reading no row: R.matmul, quantized_matmul decoding its blocks):
// the threads of a block split k and combine their partial sums
// (lower_cross_thread_reduction), several columns per block, one block per row and group of
// columns. `k_innermost`: the weight's loads run along k (x @ w^T, quantized rows), so a
// warp strides k (threadIdx.x) and threadIdx.y picks columns; else a warp takes consecutive
// columns (threadIdx.x) and threadIdx.y strides k.
struct FewRowsLayout {
  size_t spatial_loops = 0;  // the nest's loops before the reduction loops
  bool k_innermost = false;
};
// The layout, or an error when the block is not such a matmul (a float sum of activation x
// weight with the output indexed [.., row, column]).
absl::StatusOr<FewRowsLayout> FewRowsMatmulLayout(const cpu_rules::PlainNest& nest);
absl::Status ScheduleGpuFewRows(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options);

}  // namespace kiln::tir::gpu_rules
