// LowerBlocks: TensorIR blocks -> plain statements, the first lowering pass of a scheduled
// PrimFunc (docs/codegen.md lists the passes in order).
//
// Each Block becomes, in place:
//   if predicate {                          -- only when the block has a predicate
//     allocate <alloc_buffers> {            -- one Allocate per buffer, the first outermost
//       if r0 == 0 && r1 == 0 { init }      -- only when the block has an init; without
//       body                                --   reduction variables the init runs as is
//     }
//   }
// with every iteration variable replaced by its binding value (cast to the variable's type
// when the two differ) in the predicate, init, body and allocated buffers' shapes. Values are
// substituted rather than let-bound so that an index such as `C[vi, vj]` inside a vectorized
// loop stays a visible ramp for the vectorizer and the emitter. The iteration variables'
// extents are dropped: schedules keep values within them (or guard by the predicate).
// Nested blocks are lowered too; nothing else changes, and a function without blocks comes
// back as the very same node.
#pragma once

#include "tir/stmt.h"

namespace kiln::tir::transform {

PrimFunc LowerBlocks(const PrimFunc& func);

}  // namespace kiln::tir::transform
