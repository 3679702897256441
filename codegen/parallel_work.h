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

// Below this many units of work (statement executions, see ParallelIterationWork) in the
// whole loop, a parallel loop runs on the calling thread. A unit is one scalar store or one
// lane of a vectorized one: a few tenths of a nanosecond to a few nanoseconds, so the
// threshold is some microseconds of work, about what a parallel region costs on the pool
// with sleeping workers.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 15;

// The statements one iteration of a loop with body `body` executes, counting each store,
// evaluation and assertion once per iteration of the loops around it inside `body` (both
// branches of an `if` counted: an upper bound). A loop extent that uses a variable for which
// `available` is false (one defined inside the body) counts as 1 iteration. Never negative:
// a negative extent counts 0.
tir::PrimExpr ParallelIterationWork(const tir::Stmt& body, const std::function<bool(const tir::VarNode*)>& available);

}  // namespace kiln::codegen
