// The GPU rule for matmuls (`C[.., i, j] += x * y`, cpu_rules::IsMatmulLike): each thread
// computes a register tile of kRowTile x kColTile outputs. The accumulators live in a
// "local" buffer of the tile (CacheWrite, then ReverseComputeAt under the thread loop shrinks
// it to the tile), so the reduction loop reads the operands and updates registers instead of
// loading and storing C in device memory at every step; each operand element loaded is used
// kColTile (left) or kRowTile (right) times. The tiles over the batch, row and column
// loops are fused and bound like an elementwise nest (gpu_bind.cc's split).
//
// Floating-point sums run in the serial order of k for each element, as the CPU reference
// does. Which rule a matmul gets: fewer than kManyRows rows (a constant, or at run time for
// a symbolic row count in a function of this one block) split k across threads
// (gpu_few_rows.cc) when the block has that form, else these register tiles; more rows get
// the shared-memory tiling (gpu_matmul_shared.cc), and these register tiles where no
// operand tile can be staged (a column count short enough for one register tile).
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/gpu_rules.h"

namespace kiln::tir::gpu_rules {

namespace {

constexpr int64_t kRowTile = 4;
constexpr int64_t kColTile = 4;

// Splits `loop` into {outer, kTile} unless its constant extent is at most the tile; the
// inner loop's name goes to `inner`, the outer one (if any) is appended to `outer`.
absl::Status TileLoop(Schedule* s, const ForNode* loop, int64_t tile, std::vector<std::string>* outer,
                      std::string* inner) {
  std::optional<int64_t> extent = loop->extent.as_int();
  if (extent && *extent <= tile) {
    *inner = loop->loop_var.name();
    return absl::OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(loop->loop_var.name(), {-1, tile}));
  outer->push_back(parts[0]);
  *inner = parts[1];
  return absl::OkStatus();
}

// The product of constant extents; 0 ("not a constant") once a factor is symbolic.
int64_t TimesOrZero(int64_t product, const PrimExpr& extent) {
  std::optional<int64_t> e = extent.as_int();
  return product > 0 && e ? product * *e : 0;
}
// ceil(extent / tile) as an expression (a constant when the extent is one).
PrimExpr TileCount(const PrimExpr& extent, int64_t tile) {
  std::optional<int64_t> e = extent.as_int();
  if (e) return PrimExpr((*e + tile - 1) / tile);
  return extent;  // symbolic: TimesOrZero makes the product 0 anyway
}

absl::Status ScheduleRegisterTiles(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  const std::string& block = nest.block->name;
  KILN_ASSIGN_OR_RETURN(std::string write_back, s->CacheWrite(block));
  const size_t n = nest.loops.size();
  std::vector<std::string> outer;  // batch loops, then the row and column tiles
  for (size_t b = 0; b + 3 < n; ++b) outer.push_back(nest.loops[b]->loop_var.name());
  std::string ii, ji;
  KILN_RETURN_IF_ERROR(TileLoop(s, nest.loops[n - 3], kRowTile, &outer, &ii));
  KILN_RETURN_IF_ERROR(TileLoop(s, nest.loops[n - 2], kColTile, &outer, &ji));
  if (outer.empty()) return absl::InvalidArgumentError("gpu matmul: one tile: nothing to spread over threads");
  std::vector<std::string> order = outer;
  order.push_back(nest.loops[n - 1]->loop_var.name());
  order.push_back(ii);
  order.push_back(ji);
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  KILN_RETURN_IF_ERROR(s->DecomposeReduction(block, nest.loops[n - 1]->loop_var.name()).status());
  // The tiles: fused, split by the threads per block (fewer for a few constant tiles), bound.
  int64_t tiles = 1;
  for (size_t b = 0; b + 3 < n; ++b) tiles = TimesOrZero(tiles, nest.loops[b]->extent);
  tiles = TimesOrZero(tiles, TileCount(nest.loops[n - 3]->extent, kRowTile));
  tiles = TimesOrZero(tiles, TileCount(nest.loops[n - 2]->extent, kColTile));
  KILN_ASSIGN_OR_RETURN(std::string thread_loop, BindFused(s, outer, tiles, options));
  KILN_RETURN_IF_ERROR(s->Unroll(ii));
  KILN_RETURN_IF_ERROR(s->Unroll(ji));
  // The write-back of each thread's tile, in that thread: the accumulator shrinks to the tile.
  return s->ReverseComputeAt(write_back, thread_loop);
}

// Few rows: k split across threads (gpu_few_rows.cc), else register tiles.
absl::Status ScheduleFewRows(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  Schedule attempt = *s;
  if (ScheduleGpuFewRows(&attempt, nest, options).ok()) {
    *s = std::move(attempt);
    return absl::OkStatus();
  }
  return ScheduleRegisterTiles(s, nest, options);
}

// A symbolic row count at or above which the shared tiles (64 rows a block) pay; below it
// (a decode step's few tokens) most of their rows would be idle.
constexpr int64_t kManyRows = 32;

int CountBlocks(const PrimFunc& func) {
  int blocks = 0;
  schedule_internal::ForEachStmt(func->body, [&](const Stmt& st) { blocks += st.as<BlockNode>() != nullptr; });
  return blocks;
}

// `if (rows >= kManyRows) { shared tiles } else { few rows }` (BranchOn), for a
// function whose only block is the matmul (BranchOn copies the whole body: other blocks'
// copies would be left to no rule).
absl::Status ScheduleVersioned(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  const std::string block = nest.block->name;
  const PrimExpr rows = nest.loops[nest.loops.size() - 3]->extent;
  if (rows.as_int() || CountBlocks(s->func()) != 1) {
    return absl::InvalidArgumentError("gpu matmul: no run-time choice of tiles here");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> copies, s->BranchOn(GE(rows, IntImm(rows.dtype(), kManyRows))));
  if (copies.size() != 1) return absl::InternalError("gpu matmul: BranchOn copied other blocks");
  // The rules read their nest (nodes of the function as it was) while rewriting: each
  // nest's function stays alive until its rule returns.
  const PrimFunc branched = s->func();
  std::optional<cpu_rules::PlainNest> many = cpu_rules::FindPlainNest(branched, block);
  if (!many) return absl::InvalidArgumentError("gpu matmul: the branch's nest is not plain");
  KILN_RETURN_IF_ERROR(ScheduleGpuMatmulShared(s, *many, options));
  const PrimFunc shared = s->func();
  std::optional<cpu_rules::PlainNest> few = cpu_rules::FindPlainNest(shared, copies[0]);
  if (!few) return absl::InvalidArgumentError("gpu matmul: the copy's nest is not plain");
  return ScheduleFewRows(s, *few, options);
}

}  // namespace

absl::Status ScheduleGpuMatmul(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  if (!cpu_rules::IsMatmulLike(nest)) return absl::InvalidArgumentError("gpu matmul: not a matmul");
  std::optional<int64_t> rows = nest.loops[nest.loops.size() - 3]->extent.as_int();
  if (rows && *rows < kManyRows) return ScheduleFewRows(s, nest, options);
  for (auto rule : {ScheduleVersioned, ScheduleGpuMatmulShared}) {
    Schedule attempt = *s;
    if (rule(&attempt, nest, options).ok()) {
      *s = std::move(attempt);
      return absl::OkStatus();
    }
  }
  return ScheduleRegisterTiles(s, nest, options);
}

}  // namespace kiln::tir::gpu_rules
