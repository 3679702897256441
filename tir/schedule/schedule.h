// Schedule: loop transformations of one PrimFunc, each recorded in a replayable Trace.
//
// What it promises:
//  - The IR is immutable: every primitive replaces func() with a rewritten PrimFunc that
//    computes the same results for every value of the symbolic shape variables.
//  - Loops are named by their loop variable's name and blocks by their name; these handles
//    survive rewrites of other parts of the function. New loops get fresh names derived
//    from the old ones (split "i" -> "i_0", "i_1"; fuse -> "i_j_fused"). The constructor
//    renames loop variables that share a name (which changes no semantics), so every loop
//    has a unique handle.
//  - Every primitive validates its arguments and returns an InvalidArgument / NotFound
//    status naming the primitive and the offending loop or block; on error func() and the
//    trace are unchanged.
//  - Primitives:
//      GetBlock(name), GetLoops(block): look-ups (loops from the nearest enclosing block
//        down to the block, outermost first).
//      Split(loop, factors): one serial or unrolled loop into len(factors) nested serial
//        loops, outermost first (unroll them again as wanted); one
//        factor may be -1 (inferred: ceil(extent / product of the others)). When the
//        factors do not provably cover the extent exactly, the blocks below get the
//        predicate `fused index < extent` (an `if` where there is no block).
//      Fuse(loops): directly nested serial loops starting at 0 into one.
//      Reorder(loops): permutes loops of one chain of directly nested loops.
//      Parallel / Vectorize / Unroll(loop): sets a serial loop's kind (Vectorize and Unroll
//        need a constant extent). Parallel and
//        Vectorize refuse a loop bound to a reduction variable, or one whose iterations all
//        store to the same element of memory allocated outside it (iterations would race).
//      Bind(loop, thread_tag): a serial loop runs as a GPU index, thread_tag one of
//        blockIdx.x/y/z, threadIdx.x/y/z (split_host_device makes the nest a device kernel
//        and its extent a launch dimension). Refused like Parallel (a loop bound to a
//        reduction variable or whose iterations store to the same element), except for a
//        loop of one iteration; and when another loop of the same nest has the same tag.
//      DecomposeReduction(block, loop): moves the block's init into a new block
//        "<block>_init" placed just before `loop`, under copies of the loops (inside
//        `loop`) that its spatial variables depend on. Every loop binding a reduction
//        variable must be `loop` or inside it.
//      ComputeInline(block): replaces every read of an elementwise producer block's output
//        by its expression and removes the block (the buffer must be a block allocation or
//        an Allocate, not a parameter); the allocation goes too. ComputeInline(blocks)
//        inlines several in one rewrite, with the result of inlining them one after
//        another (each must be inlinable in the function as given; refused as a whole
//        otherwise): a fused chain of N elementwise kernels inlines in time linear in N.
//      CacheWrite(block): the block (which must store to exactly one buffer B, at its own
//        spatial variables B[vi, vj], with no predicate, alone in its loop nest, every loop
//        its variables are bound to in the chain directly around it) stores to
//        and reads from a new "local" buffer B_local of B's shape instead; a new block
//        "<block>_write_back" in its own loops over the block's spatial domain copies
//        B_local into B right after the block's loop nest, and an Allocate of B_local wraps
//        the two. Returns the write-back block's name. The write-back copies the whole
//        domain, so the block must write all of it: a reduction over an empty range whose
//        init is not decomposed leaves the cache undefined (ScheduleForCpu always
//        decomposes the init before the reduction loop, so it runs for every element).
//      CacheRead(block, buffer, loop): the region of `buffer` (by name) that the block reads
//        during one iteration of `loop` (an ancestor, no other block in between) is copied
//        at the start of each iteration into a new compact "local" buffer by a block
//        "<buffer>_cache" (predicated to the buffer's bounds in the dimensions where the
//        block's own reads are conditional), and the block reads the copy,
//        indexed in loop terms. Refused when the buffer is written inside the loop, or the
//        region cannot be bounded (an index not growing by a constant step per loop).
//        Returns the copy block's name.
//      CacheReadShared(block, buffer, loop): CacheRead into a "shared" buffer "<buffer>_shared"
//        that the threads of a GPU block share: `loop` lies inside loops bound to threadIdx,
//        and the region is what one iteration of `loop` reads across all of them (their
//        variables vary like the loops inside `loop`), so it must have a constant size. The
//        allocation wraps the body of the innermost threadIdx loop; run serially, each thread
//        copies the whole region before reading it, which is what the function computes.
//        transform::LowerCooperativeCopies later has the block's threads split the copy
//        between them, between barriers. Refused like CacheRead, and when no threadIdx
//        loop encloses `loop` or the region's size is not a constant.
//      ReverseComputeAt(block, loop): moves an elementwise block (plain loops, one per
//        iteration variable, no predicate) under `loop` of its producer, after the loop's
//        body: new loops walk exactly the region of the buffer it reads that one iteration
//        of `loop` writes (a predicate keeps it in its domain), so it consumes each tile as
//        soon as it is final. Every write of that buffer must lie under `loop` and finish in
//        one iteration (no writer reduces over `loop` or a loop above it); the block must
//        follow the loop's nest, with no conflicting access in between. Under a parallel
//        loop each dimension's region must be dense (one inner loop with step 1). A "local"
//        allocation of the buffer around the loop then shrinks to the tile (constant size,
//        accesses re-indexed in loop terms) and moves inside the loop.
//      ReverseComputeInline(block): an elementwise block `D[f(v)] = g(B[v], ...)` whose
//        input B is produced by one non-reduction block `B[idx] = e` (and read by no one
//        else; B not a parameter) is folded into that producer, which then stores
//        `D[f(idx)] = g(e, ...)`; the block, its loops and B's allocation disappear.
//      RFactor(block, loop, lanes): a reduction block `B[idx] = op(B[idx], value)` (op one
//        of + * max min, with an init `B[idx] = c`) whose innermost loop `loop` (serial,
//        from 0, bound directly to one reduction variable vk, extent K >= lanes) is split
//        into per-lane partial results. Around the reduction loops (inside every spatial
//        loop) a local buffer `<B>_lanes` of `lanes` elements is allocated;
//          block "<block>_rf_init" (loop "<loop>_init" over the lanes): every lane = the
//            identity of op (0, 1, lowest, highest value of the type);
//          block "<block>_rf" (loops "<loop>_0" over K / lanes, "<loop>_1" over the lanes,
//            bound to a new spatial variable): acc[lane] = op(acc[lane], value at vk =
//            lanes * k_0 + lane);
//          block "<block>_rf_tail" (loop "<loop>_tail" over K % lanes, absent when that is
//            0): acc[0] = op(acc[0], value at vk = lanes * (K / lanes) + t);
//        RFactor(block, loop, lanes, tail_lanes), tail_lanes dividing lanes (one vector of
//        them when lanes is several): the K % lanes elements after the main part first run
//        in block "<block>_rf_tail_vector" (loops "<loop>_tail_0" over (K % lanes) /
//        tail_lanes, "<loop>_tail_1" over tail_lanes): acc[l] = op(acc[l], value at vk =
//        lanes * (K / lanes) + tail_lanes * t_0 + l); the tail block then takes the last
//        K % tail_lanes. So a long accumulator (several vectors, several dependency chains)
//        leaves at most a vector's worth of elements to the serial tail.
//          blocks "<block>_rf_half", "<block>_rf_half_1", ... (while the count of lanes
//            is even and above 2, loop "<loop>_half" over h = half of them): a new local
//            buffer "<B>_lanes_<h>" of h elements = op(lower half, upper half);
//          block "<block>" (same name, spatial only, no init): B[idx] = op(c, the last
//            one or two lanes combined).
//        Floating-point sums are reassociated (lane partial sums, then the tree), so they
//        round differently from the serial order. Returns the names of the rf, init and
//        tail blocks (the tail's empty when there is none), then the halving blocks, then
//        (with tail_lanes) the vector tail block ("" when there is none).
//        Refused: no init, another
//        body form, a loop that is not innermost / serial / from 0 / bound directly to
//        one reduction variable, a constant K < lanes, reduction loops that a spatial
//        variable or the predicate depends on.
//      FuseSiblings(first, second): two loops of one sequence (the first before the
//        second), both serial or both parallel, over the same range, become one loop
//        (named like the first) whose body runs the first body, then the second. The
//        statements between them move before it (refused if they touch what the first
//        writes or write what it touches). Refused unless every buffer that one body
//        writes and the other accesses is accessed, in both, with one dimension indexed by
//        the loop variable itself (each iteration then owns its slice, so running the
//        second body's iteration i before the first's later iterations changes nothing).
//      BranchOn(condition): loop versioning. The body becomes
//        `if (condition) { body } else { copy }`, the copy defining its own variables,
//        buffers and blocks, its loops and blocks named `<name>_else` (unique), so each
//        branch can then be scheduled on its own (for sizes known only at run time).
//        The condition is a bool expression of the function's variables (scalar
//        parameters and symbolic sizes of its buffer parameters), with unique names, that
//        a trace can print and read back. Returns the copy's block names.
//        BranchOn(condition, loop): the same for one loop only (that loop becomes
//        `if (condition) { loop } else { copy }`), e.g. an edge tile's update nest, so
//        the rest of the function is not copied.
//      GuardVectorizedTails(): prepares vectorized loops for the CPU code generator. A
//        vectorized loop whose blocks' predicates depend on the lane through `a < b` (`a`
//        increasing with the lane) becomes `if (the predicate holds at the last lane) {
//        the loop without it } else { a copy, serial }`. Around a local allocation of
//        constant size (a tile), the guards go above the allocation instead: every
//        condition `a < b` inside it that holds for the whole tile when it holds at the
//        tile's last iteration is checked once, so full tiles index the tile only with
//        constants and vector lanes (a copy with the row conditions for row-edge tiles, a
//        copy with serial lane loops for column-edge tiles, versioned on how many whole
//        vectors its columns in range need: `if (bound <= 1 vector) { the copy's lane
//        loops cut to 1 vector } else if ... else { all }`). Copies are named with
//        `_tail` (lane tails) and `_edge` (edge tiles). Changes nothing where nothing
//        matches. Apply it last: the copies are not scheduled further by the rules.
//      GuardSteps(loop): after GuardVectorizedTails, for a serial loop inside an edge
//        tile (the steps of its rows): the loop's body becomes `if (every condition
//        `a < b` of its blocks holds at the step's last inner iteration) { the body
//        without them } else if (they hold at its first) { a copy with them }`, the
//        copy's loops and blocks named `_part`; the `else if` is left out unless every
//        block carries the same conditions. So whole steps run without conditions and
//        steps with no row in range run nothing; `split_loops_at_guards` then makes the
//        whole steps a plain loop. When every condition changes with one inner loop of two
//        iterations alone (steps of two rows), the copy is cut to that loop's first
//        iteration without the conditions: only it can be in range there. Refused: no such loop, not serial, no condition that
//        changes with the loop, a lane condition that cannot be checked per step.
//      AddressStepsPerTerm(): the local buffers updated by register steps of three or more
//        whole vectors (an unrolled loop of 3+ iterations around a loop of one vector's
//        lanes on the function's target, storing a value that reads the buffer) renamed `<name>_steps` and named in the function's
//        attribute local_address_per_term (tir/local_address_attr.h), so the CPU code
//        generator addresses them per term. Recorded only when it changes the function.
//      PrefetchNext(copy, outer, into[, cycle]): overlaps a panel copy with the work on the panel.
//        `copy` is a block storing one element of a buffer B (CacheRead's copy), its own
//        loops a chain directly around it (rows outermost, then the loops of one row's
//        run), all of constant extent; `outer` encloses them, and the loops from `outer`
//        down to the copy's own (the walked loops, the last of them the panel loop that
//        runs the copy once per iteration) are serial, of constant extent, each directly
//        in the one above, and no condition lies between the panel loop and the copy. `into` is a serial or unrolled loop inside the panel loop, not
//        around the copy, with the loops between them of constant extent (the spread
//        loops). At the start of each iteration of `into`, the code prefetches rows of the
//        panel the next iteration of the walked loops (in their joint order) will copy,
//        `prefetch(B[...])` once per 64 bytes of each row's run, the rows shared out in
//        order between the iterations of the spread loops (ceil(rows / their count) each);
//        nothing at the walked loops' last iteration; the copy's predicate is kept. With a
//        cycle c (1 to the spread loops' count), the rows are shared between their first c
//        iterations and iteration j takes iteration (j mod c)'s share: for an edge tile
//        whose later steps may not run. The prefetches read nothing, so the results are
//        unchanged.
//      PrefetchAhead(block, loop, buffer, distance[, first_of]): a block streaming through
//        `buffer` along its last dimension asks for the data `distance` elements ahead of
//        what it reads. `block` reads `buffer` at one place (one index list); below `loop`
//        its loops are a chain of constant ranges, each directly inside the one above, the
//        block directly inside the last, and that innermost loop walks the read's last
//        index one element per iteration and no other index. At the start of each
//        iteration of `loop` the code prefetches (`prefetch(B[...])`) the elements the
//        chain will read in that iteration, `distance` further along the last index: once
//        per 64 bytes of the innermost loop's run, for each iteration of the other chain
//        loops the read depends on (unrolled loops; the others left out). Only where the
//        block's predicate holds at the chain's first iteration, and with `first_of` (a
//        loop above `loop`) only in that loop's first iteration: rows above the stream
//        that re-read the same data from cache do not prefetch it again. An address past
//        the buffer's end is only a hint (x86's prefetches do not fault), and the results
//        are unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tir/schedule/trace.h"
#include "tir/stmt.h"

namespace kiln::tir {

class Schedule {
 public:
  explicit Schedule(const PrimFunc& func);

  const PrimFunc& func() const { return func_; }
  const Trace& trace() const { return trace_; }

  absl::StatusOr<std::string> GetBlock(const std::string& name);
  absl::StatusOr<std::vector<std::string>> GetLoops(const std::string& block);

  absl::StatusOr<std::vector<std::string>> Split(const std::string& loop, const std::vector<int64_t>& factors);
  absl::StatusOr<std::string> Fuse(const std::vector<std::string>& loops);
  absl::Status Reorder(const std::vector<std::string>& loops);
  absl::Status Parallel(const std::string& loop);
  absl::Status Vectorize(const std::string& loop);
  absl::Status Unroll(const std::string& loop);
  absl::Status Bind(const std::string& loop, const std::string& thread_tag);
  absl::StatusOr<std::string> DecomposeReduction(const std::string& block, const std::string& loop);
  absl::Status ComputeInline(const std::string& block);
  absl::Status ComputeInline(const std::vector<std::string>& blocks);
  absl::StatusOr<std::string> CacheWrite(const std::string& block);
  absl::StatusOr<std::string> CacheRead(const std::string& block, const std::string& buffer, const std::string& loop);
  absl::StatusOr<std::string> CacheReadShared(const std::string& block, const std::string& buffer,
                                              const std::string& loop);
  absl::Status ReverseComputeAt(const std::string& block, const std::string& loop);
  absl::Status ReverseComputeInline(const std::string& block);
  absl::Status FuseSiblings(const std::string& first, const std::string& second);
  // {rf block, init block, tail block ("" when K is a known multiple of lanes), halving
  // blocks of the combine...}.
  // With tail_lanes, the vector tail block last.
  absl::StatusOr<std::vector<std::string>> RFactor(const std::string& block, const std::string& loop, int64_t lanes,
                                                   int64_t tail_lanes = 0);
  absl::StatusOr<std::vector<std::string>> BranchOn(const PrimExpr& condition, const std::string& loop = "");
  absl::Status GuardVectorizedTails();
  absl::Status GuardSteps(const std::string& loop);
  void AddressStepsPerTerm();
  absl::Status PrefetchNext(const std::string& copy, const std::string& outer, const std::string& into,
                            int64_t cycle = 0);
  absl::Status PrefetchAhead(const std::string& block, const std::string& loop, const std::string& buffer,
                             int64_t distance, const std::string& first_of = "");

 private:
  PrimFunc func_;
  Trace trace_;
};

// The rewrites behind the primitives, on a PrimFunc (no trace). Same contracts as above.
namespace schedule_primitive {
struct SplitResult {
  PrimFunc func;
  std::vector<std::string> loops;
};
absl::StatusOr<SplitResult> Split(const PrimFunc& func, const std::string& loop, const std::vector<int64_t>& factors);
struct FuseResult {
  PrimFunc func;
  std::string loop;
};
absl::StatusOr<FuseResult> Fuse(const PrimFunc& func, const std::vector<std::string>& loops);
absl::StatusOr<PrimFunc> Reorder(const PrimFunc& func, const std::vector<std::string>& loops);
// `thread_tag` only for ForKind::kThreadBinding (Bind).
absl::StatusOr<PrimFunc> SetLoopKind(const PrimFunc& func, const std::string& loop, ForKind kind,
                                     const std::string& thread_tag = "");
struct DecomposeResult {
  PrimFunc func;
  std::string init_block;
};
absl::StatusOr<DecomposeResult> DecomposeReduction(const PrimFunc& func, const std::string& block,
                                                   const std::string& loop);
absl::StatusOr<PrimFunc> ComputeInline(const PrimFunc& func, const std::vector<std::string>& blocks);
// The candidates ComputeInline accepts one by one in `func` (in one walk of it), in order.
std::vector<std::string> InlinableBlocks(const PrimFunc& func, const std::vector<std::string>& candidates);
struct CacheWriteResult {
  PrimFunc func;
  std::string write_back_block;
};
absl::StatusOr<CacheWriteResult> CacheWrite(const PrimFunc& func, const std::string& block);
struct CacheReadResult {
  PrimFunc func;
  std::string copy_block;
};
// scope: "local" (CacheRead) or "shared" (CacheReadShared).
absl::StatusOr<CacheReadResult> CacheRead(const PrimFunc& func, const std::string& block, const std::string& buffer,
                                          const std::string& loop, const std::string& scope = "local");
absl::StatusOr<PrimFunc> ReverseComputeAt(const PrimFunc& func, const std::string& block, const std::string& loop);
absl::StatusOr<PrimFunc> ReverseComputeInline(const PrimFunc& func, const std::string& block);
absl::StatusOr<PrimFunc> FuseSiblings(const PrimFunc& func, const std::string& first, const std::string& second);
struct RFactorResult {
  PrimFunc func;
  std::string rf_block, init_block, tail_block;
  std::vector<std::string> half_blocks;  // the combine's halving steps, widest first
  std::string vector_tail_block;         // "" without tail_lanes, or when no step of them fits
};
absl::StatusOr<RFactorResult> RFactor(const PrimFunc& func, const std::string& block, const std::string& loop,
                                      int64_t lanes, int64_t tail_lanes = 0);
struct BranchResult {
  PrimFunc func;
  std::vector<std::string> else_blocks;  // the copy's blocks, in order
};
absl::StatusOr<BranchResult> BranchOn(const PrimFunc& func, const PrimExpr& condition, const std::string& loop);
PrimFunc GuardVectorizedTails(const PrimFunc& func);
absl::StatusOr<PrimFunc> GuardSteps(const PrimFunc& func, const std::string& loop);
PrimFunc AddressStepsPerTerm(const PrimFunc& func);
absl::StatusOr<PrimFunc> PrefetchNext(const PrimFunc& func, const std::string& copy, const std::string& outer,
                                      const std::string& into, int64_t cycle);
absl::StatusOr<PrimFunc> PrefetchAhead(const PrimFunc& func, const std::string& block, const std::string& loop,
                                       const std::string& buffer, int64_t distance, const std::string& first_of);
}  // namespace schedule_primitive

}  // namespace kiln::tir
