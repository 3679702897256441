// ThreadPartials: what lower_cross_thread_reduction needs of one kind of reduction: how a
// thread keeps its partial result of the row and how two partials merge. The rewrite
// around it (the thread loop, the shared slots, the barriers, the tree) is the same for
// every kind (tir/transform/lower_cross_thread_reduction.h): a single combine such as +
// or max keeps one value, argmax / argmin keep a value and its position
// (tir/transform/cross_thread_arg_reduction.h).
#pragma once

#include <functional>
#include <vector>

#include "tir/stmt.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::tir::transform {

struct ThreadPartials {
  std::vector<Buffer> partials;  // "local", one element each: this thread's partial
  std::vector<Buffer> slots;     // "shared", one element per thread each: slots[i][t] holds
                                 // thread t's partials[i]
  Stmt init;                     // every partial empty (the combine's identity)
  Stmt accumulate;               // one element of the row into the partials (the block's
                                 // body, in the block's variables)
  // slots[*][into] = slots[*][into] merged with slots[*][from] (loads and stores only: the
  // caller guards it and places the barriers).
  std::function<Stmt(const PrimExpr& into, const PrimExpr& from)> merge;
  // The block's outputs from slots[*][first] (the slot of the group's first thread: 0 when
  // the block's threads reduce one row), their spatial variables bound by `spatial`.
  std::function<Stmt(const VarMap& spatial, const PrimExpr& first)> write;
};

// Whether two index lists are the same expressions (a reduction block's store and the
// running value it loads, say): what both combine recognizers match on.
inline bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!StructuralEqual(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace kiln::tir::transform
