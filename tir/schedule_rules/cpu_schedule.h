// ScheduleForCpu: the default CPU schedule rules, applied block by block. The rules live in
// tir/schedule_rules/cpu_*.cc (one per kind of block); they rewrite only through the
// primitives of tir/schedule/, so the schedule's trace replays on the unscheduled function
// to a structurally equal result.
//
// What it promises:
//  - The result computes the same values as the input for every value of the symbolic
//    shape variables (sizes that are not multiples of a tile or of the vector width are
//    covered by block predicates, and vectorized tails by a scalar copy of the loop).
//  - Fused functions (several kernels' nests in sequence, intermediates allocated in the
//    function): an elementwise block whose intermediate output is read only by elementwise
//    blocks is first inlined into them (ComputeInline).
//  - Each block that sits alone in a chain of plain loops (each loop binding one iteration
//    variable directly, as lowering from Relax makes them) is classified and scheduled:
//      injective (no reduction): the outer loops fused and run in parallel, the innermost
//        split by the vector width with the inner part vectorized;
//      matmul-like (one reduction, body `C[..] = C[..] + x * y`, the last loops binding
//        the rows, columns and reduction of C): the accumulator goes to a local cache
//        (CacheWrite) whose write-back absorbs the elementwise consumers of C
//        (ReverseComputeInline: a fused epilogue such as bias + gelu); i tiled by 8 for 16
//        lanes (6 for 8 lanes: what 16 registers hold) and j by 2 * lanes, loop order (batch, j_0, i_0 fused and
//        parallel), k, i_1 (unrolled), j_1 (vectorized when every read depending on j has
//        it as its last index, so the vectors are contiguous), the init decomposed before
//        k, and the write-back moved under the parallel loop (ReverseComputeAt), which
//        shrinks the cache to one tile that LLVM keeps in registers. With a constant width
//        of at least 4 * num_threads column panels, only (batch, j_0) is parallel, i_0 runs
//        inside it and the right operand's k x col_tile panel is packed per iteration
//        (CacheRead); a narrow weight (no wide tiles) of constant depth only from 128 rows
//        on (fewer on AVX2 for k > 1024), and a symbolic row count that may be fewer
//        versions the function on `m >= 128`, the copy reading the panels in place. If
//        the tile cannot be formed, the same tiling without a cache;
//      other reductions: a row reduction over contiguous elements (innermost loop bound to
//        a reduction variable that reads use as their last index, alone or plus terms
//        independent of it: a quantized matmul's block bytes) is split into vector
//        lanes of partial results (RFactor, then the lane loops vectorized; float sums are
//        reassociated); the spatial loops outside the reduction fused and parallel.
//  - A function with one matmul whose sizes are symbolic and may have few rows (m < 64) and
//    wide columns at run time is first versioned (BranchOn `m >= 64 || n < 256` for 16
//    lanes): the first branch takes the register tiles, the copy the wide tiles for few
//    rows, so one kernel serves both GEMV-like and large calls.
//  - Last, adjacent loops of one sequence that share a buffer (a row's passes: softmax's
//    max, sum of exp and normalize) are fused into one loop where FuseSiblings allows it.
//    Blocks that match none of these (already scheduled, irregular bindings) are left
//    alone. A rule that does not apply to a block leaves that block unchanged.
//  - Vectorized loops come out in the form the CPU code generator turns into SIMD code
//    directly (GuardVectorizedTails, the last primitive): a loop whose block predicate
//    depends on the lane is guarded by `if (last lane in range) { vectorized } else { the
//    same loop, serial }`; for a constant-size local allocation (a tile) the guards go
//    above it, so full tiles run without conditions and index the tile only with constants
//    and lanes.
//  - Scheduling takes time linear in the size of the function for a fused chain of
//    elementwise kernels (inlined in one rewrite); every rule's rewrite is a primitive in
//    the trace.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "tir/schedule_rules/cpu_knobs.h"
#include "tir/stmt.h"

namespace kiln::tir {

struct CpuScheduleOptions {
  int vector_lanes = 8;  // fp32 lanes of the SIMD unit: 16 for AVX-512, 8 for AVX2, 4 for SSE
  int num_threads = 1;   // 1: no parallel loops
  // Matmuls with wide columns are scheduled for few rows (m < 64): 8 x (16 * lanes) tiles
  // accumulated in L1, so each row of the right operand is read in long runs. ScheduleForCpu
  // sets it itself for the few-rows branch of a matmul with symbolic sizes.
  bool matmul_few_rows = false;
  // The few-rows matmuls take packed wide tiles (cpu_matmul.cc, PackedWideApplies: for
  // 32-64 rows over a constant weight): k blocks of the weight (256 rows on AVX2, 64 on
  // AVX-512) copied into a contiguous panel, the tile's 64 rows walked in register steps
  // (4 rows on AVX2, 8 on AVX-512). ScheduleForCpu sets it itself for the branch of a
  // symbolic matmul that runs them.
  bool matmul_packed_wide = false;
  // The register tiles read a constant weight's panels in place instead of packing them
  // (PackPays, cpu_matmul.cc): ScheduleForCpu sets it itself for the copy of a symbolic-row
  // matmul versioned on `m >= 128` (cpu_matmul.cc, NarrowPackLeastRows), where fewer rows
  // do not repay the copy.
  bool matmul_unpacked_panels = false;
  // The rules' tunable parameters (cpu_knobs.h); the defaults are the untuned schedule.
  CpuScheduleKnobs knobs{};
};

// `trace`, when given, receives the schedule's trace as text: Trace::Parse of it, replayed
// on a Schedule of `func`, gives a function structurally equal to the result.
absl::StatusOr<PrimFunc> ScheduleForCpu(const PrimFunc& func, const CpuScheduleOptions& options,
                                        std::string* trace = nullptr);

}  // namespace kiln::tir
