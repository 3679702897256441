// argmax / argmin combined across the threads of a block: a two-value combine (the best
// value and its position), ties to the lowest position as the serial loop (and the
// reference evaluator) gives them.
//
// Legalization (relax/op/legalize_reduce.cc) writes argmax as one reduction block over the
// row with two outputs, the position `I` and a scratch buffer `V` for the value:
//   init:  I[s] = 0; V[s] = 0
//   body:  I[s] = select(take, p, I[s]); V[s] = select(take, x, V[s])
//          take = p == 0 || better(x, V[s])
//          better(a, b) = a > b            (argmin: a < b)
//                       || (a != a && b == b)   -- floats: a NaN beats every number
// with p the element's position in the row (row-major over the reduced axes) and x its
// value. Run serially, the first position of the best value wins (the first NaN, if any).
// That is also the best value by `better` with ties broken to the lowest position, which
// does not depend on the order in which elements are seen: so each thread keeps the best
// (position, value) of its own elements, and two threads' pairs merge by the same rule.
// A thread that saw no element holds position -1.
#pragma once

#include <optional>
#include <vector>

#include "tir/stmt.h"
#include "tir/transform/cross_thread_partials.h"

namespace kiln::tir::transform {

struct ArgReductionCombiner {
  bool is_max = true;     // argmax (better is >) or argmin (<)
  bool nan_wins = false;  // the float form's NaN clause (required for float values)
  Buffer index;           // I: the position, a signed integer
  Buffer value;           // V: the value at that position
  PrimExpr index_init, value_init;  // constants: the result of an empty row
  PrimExpr position;      // p (the index's type), in the block's variables
  PrimExpr element;       // x
  std::vector<PrimExpr> indices;  // s: I[s] and V[s], spatial variables only
};

// The block's combine when it has exactly the form above, else nullopt.
std::optional<ArgReductionCombiner> CrossThreadArgCombinerOf(const BlockNode* block);

// The partials of that combine for `threads` threads whose index has type `index_type`.
ThreadPartials ArgReductionPartials(const ArgReductionCombiner& c, DataType index_type, int64_t threads);

}  // namespace kiln::tir::transform
