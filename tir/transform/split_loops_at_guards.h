// SplitLoopsAtGuards: a serial loop whose whole body is `if (cond) A else B`, where cond holds
// exactly for a prefix of the iterations (an integer comparison that changes once, as i
// grows, from true to false: `16 * i < n - 15`), becomes two loops, A over the prefix and B
// over the rest, with no condition left inside. When B is itself `if (cond2) C` (no else;
// GuardSteps' steps past the rows), the rest splits again: C over its prefix, nothing after.
//
// Why: GuardVectorizedTails (docs/schedule.md) guards every vector step of a loop over a
// symbolic extent with "is this step whole?", so that only the last step is masked. Left as
// a branch inside the loop, every step pays for the test and the tail's masked extent
// (computed before the branch), and LLVM neither unrolls nor pipelines the loop; a
// softmax's exp pass over 1024 x 1024 spent about as much in that bookkeeping as in its
// arithmetic. Split, the whole steps are a plain counted loop.
//
// The condition must be an integer comparison (<, <=, >, >=) of expressions that are linear
// in the loop variable with a constant step, reading no buffer and calling nothing; its
// other variables are defined outside the loop (it is the loop's first statement). The
// split point is clamped to the loop's range, so either part may run no iteration. Loops
// of every other kind (parallel, vectorized, unrolled, GPU-bound) are left as they are.
// Runs after lower_blocks (predicates are `if`s by then), before vectorize_loops.
#pragma once

#include "tir/stmt.h"

namespace kiln::tir::transform {

PrimFunc SplitLoopsAtGuards(const PrimFunc& func);

}  // namespace kiln::tir::transform
