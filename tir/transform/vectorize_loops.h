// VectorizeLoops: vectorized loops -> straight-line SIMD TIR, before flatten_buffers.
//
// VectorizeLoopBody: straight-line SIMD code for `for v in vectorized(min, L)`.
//
// When the extent is a constant L (2..64) and the body is made of buffer stores, lets,
// evaluates, conditionals whose condition is the same for every lane, and blocks without
// allocations (dissolved: iteration variables become their values, `init` runs under its
// condition, a lane-invariant predicate guards the block), the body is rewritten with v = ramp(min, 1, L): every expression that depends
// on v becomes an L-lane vector, scalars meeting vectors are broadcast, and stores become
// vector (or lane-by-lane) stores. Iterations of a vectorized loop are independent by the
// loop kind's contract; to stay safe anyway, the rewrite is refused (nullopt) when a store
// does not depend on v, or when a buffer is read at other indices than the ones it is
// written at. Anything else (nested loops, lane-dependent conditions or predicates,
// reductions across lanes, allocations, existing vectors, asserts) is refused too; the loop then
// stays a vectorized loop, which the code generator emits with LLVM's vectorize hint.
//
// VectorizeLoops replaces every vectorized loop whose body VectorizeLoopBody accepts by that
// body (inner loops first; a loop holding an accepted inner loop is then refused as existing
// vector code and stays a loop). It runs before flatten_buffers, so that an access
// `C[vi, ramp(b, 1, L)]` is still visibly contiguous.
#pragma once

#include <optional>

#include "tir/stmt.h"

namespace kiln::tir::transform {

std::optional<tir::Stmt> VectorizeLoopBody(const tir::ForNode& loop);

PrimFunc VectorizeLoops(const PrimFunc& func);

}  // namespace kiln::tir::transform
