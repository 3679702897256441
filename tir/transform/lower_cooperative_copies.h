// LowerCooperativeCopies: the copies into "shared" buffers that Schedule::CacheReadShared
// made (each thread, run serially, copies the whole tile) become copies that the threads of
// a GPU block split between them, between barriers. A lowering pass of scheduled GPU
// functions, after lower_cross_thread_reduction and before lower_blocks (docs/codegen.md).
//
// Inside loops bound to threadIdx (T threads in all, tid the thread's linear index, the
// innermost threadIdx loop fastest), a run of consecutive copy nests
//   for ax0 in [0, E0): ... for ax{r-1} in [0, E{r-1}):       -- constant extents
//     block C(vars bound to f(ax); predicate p): S[ax...] = X[g(vars)]   -- S "shared"
// becomes
//   storage_sync()             -- every thread is done reading the previous tile
//   for c in unrolled [0, ceil(N / T)):                           -- N = E0 * ... * E{r-1}
//     block C(vars bound to f(ax(e)); predicate e < N && p(ax(e))): ...   -- e = c * T + tid,
//   ... (the next copy of the run)                                 -- ax(e) its digits
//   storage_sync()             -- the tile is complete before any thread reads it
// Each element is copied by one thread. The guards stay on the copies (block predicates);
// the barriers are reached by every thread: a copy that sits under an `if` inside the
// thread loops, or under a loop whose extent depends on the thread, is an error.
#pragma once

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir::transform {

// The rewrite above; functions without shared copies come back unchanged.
absl::StatusOr<PrimFunc> LowerCooperativeCopies(const PrimFunc& func);

}  // namespace kiln::tir::transform
