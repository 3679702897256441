// How much work one iteration of a parallel loop does, so the generated code can run a loop
// with little work serially: handing a few microseconds of work to the thread pool costs
// about as much as the work itself (waking the workers, the barrier, the data moving between
// cores' caches), which made 2 threads slower than 1 on small shapes (issue 15).
#pragma once

#include <cstdint>
#include <functional>

#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::codegen {

// How generated code splits a parallel loop into tasks for the thread pool
// (KernelLowering::LowerParallelFor). A unit of work is one statement execution (see
// ParallelIterationWork): one scalar store or one lane of a vectorized one, e.g. one lane of
// a multiply-add into a matmul's register tile (about 0.02 ns on one core at ~110 GFLOP/s)
// or one element of a row pass (0.1 to a few ns).
//
// Below kMinParallelWork units in the whole loop it runs on the calling thread: a parallel
// region on vm::ThreadPool costs about 1 µs with the workers awake and several with them
// asleep (benchmarks/dispatch_bench; docs/schedule.md gives the calibration), and a second
// thread only saves half the work.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Above it, one task per kMinTaskWork units, at least 2 and at most kTasksPerThread per
// thread: small enough tasks that a late worker's share is taken by the others.
inline constexpr int64_t kMinTaskWork = int64_t{1} << 16;
inline constexpr int64_t kTasksPerThread = 4;
// When one iteration alone is kMinTaskWork or more (a matmul's tile), up to this many per
// thread, one iteration each as far as they go: tasks are claimed as threads come free, and
// a chunk of several heavy iterations holds the barrier by what the last chunk lacks. 11 wide
// tiles of 384 columns (the last one 256) on 2 threads in chunks of 2 ran 6 tiles on one
// thread and 4 2/3 on the other; 22 tiles of 192 columns in chunks of 3 ran 12 against 10 1/3.
inline constexpr int64_t kHeavyTasksPerThread = 16;

// The statements one iteration of a loop with body `body` executes, counting each store
// once per lane of the value it stores (a vector store is that many units), each
// evaluation and assertion once, per iteration of the loops around it inside `body` (the
// larger branch of an `if`: an upper bound). A loop extent that uses a variable for which
// `available` is false (one defined inside the body) counts as 1 iteration. Never negative:
// a negative extent counts 0.
tir::PrimExpr ParallelIterationWork(const tir::Stmt& body, const std::function<bool(const tir::VarNode*)>& available);

}  // namespace kiln::codegen
