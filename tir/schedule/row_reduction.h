// The default CPU schedule's vectorization of a reduction's innermost loop (used by
// ScheduleForCpu's reduction rule).
//
// What it promises: when the block's innermost loop binds a reduction variable that every
// read depending on it uses as its last index (contiguous elements), and the loop has at
// least `lanes` iterations (or a symbolic count), the reduction is split into `lanes`
// per-lane partial results (Schedule::RFactor) and the lane loops are vectorized; the
// function is otherwise left as it was. Returns whether it applied. Floating-point sums are
// then reassociated (they round differently from the serial order).
#pragma once

#include <string>

#include "tir/schedule/schedule.h"

namespace kiln::tir {

bool VectorizeRowReduction(Schedule* s, const std::string& block, int lanes);

// Adjacent loops of one sequence that share a buffer one of them writes (the passes of
// softmax or layer_norm over the same rows: max, sum of exp, normalize) are fused into one
// loop (FuseSiblings) wherever that is legal, so each row's passes run while it is in
// cache. Loops that cannot be fused stay as they are.
void FuseRowPasses(Schedule* s);

}  // namespace kiln::tir
