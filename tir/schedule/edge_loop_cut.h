// The serial loops of a column-edge tile cut at the last iteration that has a column in
// range. Used by GuardVectorizedTails on the column-edge copy of a tile; internal to the
// schedule primitives.
#pragma once

#include "tir/stmt.h"

namespace kiln::tir::schedule_internal {

// Every serial loop of constant extent in `body` whose blocks all keep only the lanes below
// a bound (`a < b` on a vectorized loop's lane, `a` growing by a constant c > 0 with the
// loop and not shrinking with the loops inside it, `b` free of both) gets the extent
// `min(extent, max(0, ceildiv(b - a at the loop's 0 and its inner loops' first iteration,
// c) - min))`: the iterations cut off run none of the blocks. A loop with any other
// statement than loops and blocks below it is left as it is.
//
// Why: a wide tile (4096 columns on AVX-512) whose last tile has 4 columns at n = 4100 walked
// all its 128 vector pairs, every one testing its lanes at each k step; cut, it walks one.
Stmt CutLoopsPastLaneBounds(const Stmt& body);

}  // namespace kiln::tir::schedule_internal
