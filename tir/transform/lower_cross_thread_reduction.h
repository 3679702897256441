// LowerCrossThreadReductions: a reduction whose reduction loop is bound to GPU threads
// becomes a per-thread partial result and a tree combine in shared memory, the first
// lowering pass of a scheduled GPU function (before lower_blocks; docs/codegen.md).
//
// The GPU reduction rule (tir/schedule_rules/gpu_reduction.cc) gives a row reduction the form
//   for ro in serial(...):                          -- serial loops, above and/or below
//     for tx in thread_binding(T, "threadIdx.x"):   --   the thread loop; T a constant
//       block B(spatial vars bound without tx, reduction vars bound with tx; predicate p):
//         init: out[idx] = c
//         body: out[idx] = out[idx] (op) x          -- or x (op) out[idx]
// which, run serially, is the reduction itself (the tir interpreter and the reference see
// that), but run by T threads at once would race on out[idx]. This pass rewrites it to
//   for tx in thread_binding(T, "threadIdx.x"):
//     allocate partial: local [1], combine: shared [T] {
//       partial[0] = c
//       for ro ...: block B'(same vars, predicate p): partial[0] = partial[0] (op) x
//                                      -- every serial loop of the chain, inside the thread loop
//       combine[tx] = partial[0]
//       storage_sync()
//       if tx < T - P: combine[tx] = combine[tx] (op) combine[tx + P]   -- P: largest power
//       storage_sync()                                                 --   of two below T
//       for s in P/2, P/4, ..., 1 (unrolled):
//         if tx < s: combine[tx] = combine[tx] (op) combine[tx + s]
//         storage_sync()
//       if tx == 0: out[idx] = combine[0]
//     }
// Every thread reaches every barrier: the guards (the predicate p for the tail of the row,
// `tx < s` for the tree) enclose loads and stores only, never a storage_sync.
//
// Several outputs per block: loops bound to other thread indices around the thread loop
// (threadIdx.y over a matmul's columns, say: their variables feed spatial variables only)
// make groups of T threads, each reducing its own output. The shared buffer then holds G * T
// slots (G: the product of those loops' constant extents), group g's in [g * T, g * T + T):
// every index above becomes g * T + tx, and thread 0 of each group writes its output from
// slot g * T. The barriers are the block's, reached by every group together.
//
// A partial starts at the init value c, and each of the T partials includes it; that is
// the serial result only when c is an identity the combine absorbs (c (op) c == c): 0 for
// +, 1 for *, any c for min and max, any c for && and ||. CrossThreadCombinerOf checks it.
// The order of a float sum differs from the serial one (a tree of partial sums).
//
// argmax / argmin (two outputs: the position and its value) combine too: each thread keeps
// the best (position, value) pair of its elements, and pairs merge as the serial loop
// would have chosen, ties to the lowest position (tir/transform/cross_thread_arg_reduction.h).
// What a partial is and how two merge is the combine's ThreadPartials
// (tir/transform/cross_thread_partials.h); the tree and the barriers are the same.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir::transform {

struct ReductionCombiner {
  ExprKind op;            // kAdd, kMul, kMin, kMax, kAnd or kOr
  Buffer output;          // the buffer the block reduces into
  PrimExpr init;          // the init value c (a constant)
  PrimExpr update;        // x: the value the block combines into the output
  std::vector<PrimExpr> indices;  // out[indices], in the block's variables
};

// The combine of a reduction block whose per-thread partial results may be merged in any
// order (the form above, c an identity of op), or nullopt (two outputs such as argmax's,
// an init that depends on the data, a non-associative update).
std::optional<ReductionCombiner> CrossThreadCombinerOf(const BlockNode* block);

// The shared memory each thread's partial takes (its slots), when the block's combine can
// be merged across threads (CrossThreadCombinerOf, or argmax / argmin's
// CrossThreadArgCombinerOf), else nullopt.
std::optional<int64_t> CrossThreadPartialBytes(const BlockNode* block);

// Whether binding `loop` to threadIdx.* makes the form above: its body a chain of serial
// loops around one reduction block with a CrossThreadPartialBytes, `loop` (and the chain)
// bound into the block's reduction variables only. The Bind primitive accepts such a
// reduction loop (the rewrite then combines the threads' partials).
bool CombinesAcrossThreads(const ForNode* loop);

// The rewrite above for every thread-bound reduction loop. An error names the loop when a
// reduction loop is bound to threads but the block is not of that form (T threads would
// then race on the output), or when a thread loop around it has no constant extent.
// Functions without such loops come back unchanged.
absl::StatusOr<PrimFunc> LowerCrossThreadReductions(const PrimFunc& func);

}  // namespace kiln::tir::transform
