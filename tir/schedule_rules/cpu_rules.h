// The rules of the default CPU schedule (tir/schedule_rules/cpu_schedule.h), one file each,
// and what they share. Internal to tir/schedule_rules/: the public entry is ScheduleForCpu.
//
// What they promise: each rule rewrites its block through Schedule primitives only (so the
// schedule's trace replays to the same function), returns an error status when it does not
// apply (ScheduleForCpu then keeps the function as it was before the rule), and never
// changes what the function computes.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule_rules/cpu_schedule.h"

namespace kiln::tir::cpu_rules {

// ---------------------------------------------------------------- nests (cpu_nest.cc)

// A block alone in a chain of serial loops from 0, each binding one iteration variable.
struct PlainNest {
  const BlockNode* block = nullptr;
  std::vector<const ForNode*> loops;  // outermost first
  std::vector<int> iter_of_loop;      // the iteration variable each loop binds
};
std::optional<PlainNest> FindPlainNest(const PrimFunc& func, const std::string& name);

// Whether every store the block makes to memory that outlives it indexes with every spatial
// iteration variable its loops bind: then different spatial iterations write different
// elements, and running them in parallel or as vector lanes cannot race. A variable of extent 1 is exempt.
bool WritesFollowSpatialVars(const PlainNest& nest);

bool IsReductionLoop(const PlainNest& nest, size_t i);

// Splits `loop` so its inner part has `lanes` iterations (or keeps a short constant loop
// whole) and vectorizes that part. Returns the outer loop's name, or "" when there is none.
absl::StatusOr<std::string> VectorizeInner(Schedule* s, const std::string& loop, int64_t extent_or_zero, int lanes);

// Fuses `loops` (directly nested, outermost first) and makes the result parallel (nothing
// with one thread). `innermost`, when given, receives the loop the nest continues in.
absl::Status ParallelOver(Schedule* s, const std::vector<std::string>& loops, const CpuScheduleOptions& options,
                          std::string* innermost = nullptr);

// The leaf blocks (no blocks inside) of the function that read `buffer`.
std::vector<std::string> ReadersOf(const PrimFunc& func, const BufferNode* buffer);
// The buffer a block stores to (its body's single store), or null.
const BufferNode* StoredBuffer(const PrimFunc& func, const std::string& block);

// ---------------------------------------------------------------- rules

// cpu_inline.cc. Fused functions hold several kernels' loop nests with their intermediates
// allocated in the function: every elementwise block whose output is an intermediate read
// only by elementwise blocks is folded into them, all in one ComputeInline (a reduction
// reader would recompute it at every step, so it stays).
void InlineIntermediates(Schedule* s);

// cpu_injective.cc. No reduction: outer loops fused and parallel, the innermost split by
// the vector width and its inner part vectorized.
absl::Status ScheduleInjective(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options);

// cpu_matmul.cc. `C[.., i, j] = C[.., i, j] + x * y` with the last three loops binding i, j
// and the reduction.
bool IsMatmulLike(const PlainNest& nest);
// For a matmul whose sizes leave both tilings possible at run time (rows or columns
// symbolic): the condition under which the register tiles for many rows are right,
// `m >= 64 || n < wide tile`; nullopt when the sizes decide (or options.matmul_few_rows).
std::optional<PrimExpr> ManyRowsCondition(const PlainNest& nest, const CpuScheduleOptions& options);
// For a matmul whose few-rows branch takes packed wide tiles at run time (PackedWideApplies,
// rows symbolic): the condition under which they are right, `m >= 32` (fewer rows keep the
// unpacked tiles); nullopt otherwise.
std::optional<PrimExpr> PackedRowsCondition(const PlainNest& nest, const CpuScheduleOptions& options);
// For a matmul with symbolic rows and constant columns whose register tiles would pack the
// right operand's panels (PackPays): the condition under which the packing pays,
// `m >= 128` (NarrowPackLeastRows: fewer on AVX2 for k > 1024); fewer rows read the panels
// in place (options.matmul_unpacked_panels). nullopt where the sizes, the bounds or the
// knobs decide, or where the panel's producer folds into the packing.
std::optional<PrimExpr> PackedPanelRowsCondition(const PrimFunc& func, const PlainNest& nest,
                                                 const CpuScheduleOptions& options);
// The matmul rule: with the accumulator tile when it can be formed, else without. Few rows
// (m < 64) and wide columns take wide tiles: directly when both sizes are constants or
// options.matmul_few_rows is set, else the register tiles, and when those were formed the
// ManyRowsCondition is appended to `many_conditions` (ScheduleForCpu then adds a branch for
// few rows).
absl::Status ScheduleMatmulRule(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options,
                                std::vector<PrimExpr>* many_conditions);

// After GuardVectorizedTails: the row-edge copy of a k-blocked wide tile (blocks `.._edge`,
// rows predicated) runs the last row tile, and every tile when m < 8: GEMV-like work that
// is bound by reading the weight. Its loops (k_0, [sub-tiles,] pairs, k_1, rows, vector)
// become (k_0, k_1 / 8, rows, [sub-tiles,] pairs, 8 unrolled, vector): each row reads 8
// rows of the weight across the whole tile as long contiguous runs, which the prefetcher
// streams, loading and storing its accumulators once per 8 steps; the next rows reuse
// those 8 weight rows from cache, and a row out of range is skipped once per 8 steps.
// When the tile has row steps of at most 4 rows (AVX2's), each step checks its rows once
// (GuardSteps): a whole step runs (k_0, step, k_1 / 8, [sub-tiles,] pairs, 8 unrolled, rows
// unrolled, vector), its rows sharing each load of the weight, and only the partial step
// (the GEMV's) takes the per-row order above. With the knob matmul.gemv_rows_per_pass, the
// edge's update is first versioned on its own for a one-row edge (floormod(m, tile rows) ==
// 1: the GEMV), which reads that many weight rows per pass; the copy takes the orders above.
void StreamWideEdgeTiles(Schedule* s, const CpuScheduleOptions& options);
// After GuardVectorizedTails: the row-edge copy of a packed wide tile (its k block read from
// a packed panel) keeps its row steps; each step checks its rows once (GuardSteps), so the
// whole steps of a partial tile run from registers like a full tile's and only the last,
// short step tests each row.
void GuardPackedWideEdgeSteps(Schedule* s);
// After GuardVectorizedTails (knob matmul.edge_steps): the row-edge copy of each register
// tile (its rows unrolled inside k, each under `row < m`) runs its rows in steps of two
// outside k, each step checked once (GuardSteps): whole steps keep their accumulators in
// registers through k, the last odd row runs alone, rows past m run nothing. The tile's rows
// each under their condition inside k computed all of them.
void StepRegisterEdgeRows(Schedule* s, const CpuScheduleOptions& options);
// Last (knob matmul.wide_prefetch): every k-blocked panel copy (a block copying a buffer's
// elements into a local buffer, e.g. a packed wide tile's k block) that runs once per
// iteration of serial loops of constant extent which move the panel along its rows gets
// PrefetchNext: the iterations of each reader's loop just above the loop over the panel's
// rows (the register steps' k) prefetch the next panel's rows, so the next copy reads from
// L2 instead of waiting on memory. In a row edge (steps guarded by their rows) the rows are
// shared between the steps that always run (EdgeCycle, cpu_matmul.cc).
void PrefetchPanels(Schedule* s, const CpuScheduleOptions& options);

// cpu_row_reduction.cc. Other reductions: a row reduction over contiguous elements (the
// innermost loop bound to a reduction variable that every read depending on it uses as its
// last index, alone or plus terms independent of it, with at least `vector_lanes`
// iterations or a symbolic count) is split into
// vector lanes of partial results (RFactor; the lane loops vectorized; float sums are
// reassociated); the spatial loops outside the reduction are fused and parallel.
absl::Status ScheduleReduction(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options);
// cpu_window_reduction.cc. A reduction over a window (grouped and depthwise convolutions as
// relax/op/legalize_nn.cc's LegalizeGroupedConv writes them): spatial loops, then reduction
// loops of constant extents; the store indexes the innermost spatial variable x as its last
// index only, and the loads read x in their last index only, at least one of them together
// with a reduction variable (x * stride + k * dilation).
bool IsWindowReduction(const PlainNest& nest);
// The sums of a tile of up to 4 vectors along x in a local tile (CacheWrite, written back
// per tile), the reduction inside the tile loop and unrolled (up to 64 steps), the vectors
// unrolled and their lanes vectorized, the other spatial loops fused and parallel.
absl::Status ScheduleWindowReduction(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options);

// Adjacent loops of one sequence that share a buffer one of them writes (the passes of
// softmax or layer_norm over the same rows: max, sum of exp, normalize) are fused into one
// loop (FuseSiblings) wherever that is legal, so each row's passes run while it is in
// cache. Loops that cannot be fused stay as they are.
void FuseRowPasses(Schedule* s);

}  // namespace kiln::tir::cpu_rules
