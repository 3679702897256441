// The GPU rule for reductions (row sums, max, norms' and softmax's statistics, dot
// products; matmuls that gpu_matmul.cc does not tile).
//
// Cross-thread (when the block's combine allows it, transform::CrossThreadPartialBytes: sums,
// max, min, ..., and argmax / argmin's two-value combine; and the row is not shorter than a
// warp): one block per output element (the spatial loops fused and
// bound to blockIdx.x), its threads striding the reduction loops (fused, split by the thread
// count, the inner part bound to threadIdx.x), so that neighbouring threads read neighbouring
// elements. The serial part stays outside the thread loop: run one iteration after another
// (the tir interpreter) the schedule sums the row in its own order, exactly as before;
// lower_cross_thread_reduction moves it inside. lower_cross_thread_reduction then gives
// each thread a partial result and combines the partials in shared memory. A reduction to a
// scalar (no spatial loop) is one block.
//
// Serial otherwise (other combines, short rows): the spatial loops fused and bound
// like an elementwise nest, one thread per output element running the reduction loops in
// the order the CPU reference runs them.
#include "support/status_macros.h"
#include "tir/schedule_rules/gpu_rules.h"
#include "tir/transform/lower_cross_thread_reduction.h"

namespace kiln::tir::gpu_rules {

namespace {

struct NestShape {
  std::vector<std::string> spatial, reduction;
  int64_t spatial_extent = 1, reduction_extent = 1;  // 0: symbolic
};

absl::StatusOr<NestShape> ShapeOf(const cpu_rules::PlainNest& nest) {
  NestShape shape;
  for (size_t i = 0; i < nest.loops.size(); ++i) {
    const bool reduction = cpu_rules::IsReductionLoop(nest, i);
    if (!reduction && !shape.reduction.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("gpu reduction: spatial loop '", nest.loops[i]->loop_var.name(),
                                                     "' lies inside a reduction loop"));
    }
    std::optional<int64_t> e = nest.loops[i]->extent.as_int();
    int64_t& extent = reduction ? shape.reduction_extent : shape.spatial_extent;
    extent = e && extent > 0 ? extent * *e : 0;
    (reduction ? shape.reduction : shape.spatial).push_back(nest.loops[i]->loop_var.name());
  }
  return shape;
}

// At most two warps per row. Measured on lavapipe (Mesa's CPU Vulkan driver; no real GPU
// here), softmax over 1024 rows of 256: one thread per row 20 ms, 64 threads per row 24 ms,
// 256 threads per row 72 ms (each barrier of a 256-wide workgroup costs the CPU driver a
// lot); 8 rows of 262144 summed: 130 ms -> 11 ms. Real GPUs would take more threads for
// long rows (not measured: no GPU lent).
constexpr int64_t kMaxRowThreads = 64;

// The threads that stride one row: a power of two (the tree combine halves it), at most the
// threads per block, their partials (`element_bytes` each) within the shared memory per
// block, no more than the row needs when its length is a known constant.
int64_t RowThreads(int64_t reduction_extent, int64_t element_bytes, const GpuScheduleOptions& options) {
  int64_t threads = 1;
  const int64_t most = std::min<int64_t>(options.threads_per_block, kMaxRowThreads);
  while (threads * 2 <= most && threads * 2 * element_bytes <= options.shared_memory_per_block) {
    threads *= 2;
  }
  if (reduction_extent > 0) {
    int64_t needed = 1;
    while (needed < reduction_extent) needed *= 2;
    threads = std::min(threads, needed);
  }
  return threads;
}

absl::Status ScheduleCrossThread(Schedule* s, const NestShape& shape, int64_t element_bytes,
                                 const GpuScheduleOptions& options) {
  std::string row = shape.reduction[0];
  if (shape.reduction.size() > 1) {
    KILN_ASSIGN_OR_RETURN(row, s->Fuse(shape.reduction));
  }
  const int64_t threads = RowThreads(shape.reduction_extent, element_bytes, options);
  if (shape.spatial.empty()) {
    // A scalar result: a loop of one iteration for the single block.
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(row, {1, -1, threads}));
    KILN_RETURN_IF_ERROR(s->Bind(parts[0], "blockIdx.x"));
    return s->Bind(parts[2], "threadIdx.x");
  }
  std::string rows = shape.spatial[0];
  if (shape.spatial.size() > 1) {
    KILN_ASSIGN_OR_RETURN(rows, s->Fuse(shape.spatial));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(row, {-1, threads}));
  KILN_RETURN_IF_ERROR(s->Bind(rows, "blockIdx.x"));
  return s->Bind(parts[1], "threadIdx.x");
}

}  // namespace

absl::Status ScheduleGpuReduction(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  KILN_ASSIGN_OR_RETURN(NestShape shape, ShapeOf(nest));
  const bool short_rows = shape.reduction_extent > 0 && shape.reduction_extent < options.warp_size;
  std::optional<int64_t> partial_bytes = transform::CrossThreadPartialBytes(nest.block);
  if (!shape.reduction.empty() && partial_bytes && (shape.spatial.empty() || !short_rows)) {
    Schedule attempt = *s;
    if (ScheduleCrossThread(&attempt, shape, *partial_bytes, options).ok()) {
      *s = std::move(attempt);
      return absl::OkStatus();
    }
  }
  if (!shape.spatial.empty()) return BindFused(s, shape.spatial, shape.spatial_extent, options).status();
  // A scalar result whose combine is serial: one thread of one block runs the whole reduction.
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(nest.loops[0]->loop_var.name(), {1, -1}));
  return s->Bind(parts[0], "blockIdx.x");
}

}  // namespace kiln::tir::gpu_rules
