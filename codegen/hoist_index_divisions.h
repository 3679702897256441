// Divisions of a loop's index by values that do not change inside the loop, computed once
// per iteration at the top of its body instead of at every use.
//
// Fusing loops for one parallel loop (tir Schedule::Fuse, as the CPU matmul rule does with
// its column and row tiles) indexes the body with floordiv(fused, R) and floormod(fused, R),
// R the inner loop's extent, often symbolic. Those uses sit in the register tile's inner
// loops and under the edge tiles' row predicates, and LLVM cannot hoist a division by a
// value it cannot prove nonzero out of a conditional block (it might trap): at n = 7 the
// block compiled for 2 threads ran a 64-bit division per row per k step, ~9 µs more than
// the 1-thread build (docs/schedule.md, "Parallel or serial").
#pragma once

#include <functional>

#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::codegen {

// `body` with every floordiv(var, d) and floormod(var, d) (d made only of variables for
// which `available` is true, i.e. defined outside the loop) replaced by a variable bound by
// a LetStmt at the top of `body`, one per distinct (kind, d). The hoisted division divides
// by d, or by 1 where d is 0, so it never traps where the use it replaces did not run: a
// use that ran with d = 0 was a division by zero already. `body` unchanged when it has none.
tir::Stmt HoistIndexDivisions(const tir::Var& var, const tir::Stmt& body,
                              const std::function<bool(const tir::VarNode*)>& available);

}  // namespace kiln::codegen
