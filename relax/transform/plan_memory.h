// PlanMemory: lets tensors whose lifetimes do not overlap share memory. Runs after
// lower_call_tir, on alloc_tensor + call_tir_dps code:
//
//   %a_out = R.alloc_tensor(R.shape([n, 64]), dtype=float32)
//   %a = R.call_tir_dps(@f, (x,), (%a_out,))
//   %b_out = R.alloc_tensor(R.shape([n, 64]), dtype=float32)
//   %b = R.call_tir_dps(@g, (%a,), (%b_out,))
//   %c_out = R.alloc_tensor(R.shape([n, 64]), dtype=float32)      (a is dead here)
// becomes
//   %storage0: Object = R.alloc_storage(R.prim(n * 256))
//   %a_out = R.storage_tensor(%storage0, R.prim(0), R.shape([n, 64]), dtype=float32)
//   ...
//   %c_out = R.storage_tensor(%storage0, R.prim(0), R.shape([n, 64]), dtype=float32)
//
// What it promises, per Relax function:
//  - Only alloc_tensors bound at the function's top level (not inside If branches) are
//    planned, and only those whose shape variables are all bound by the parameters' struct
//    info (so the storage size can be computed where the storage is allocated).
//  - A tensor's lifetime runs from its alloc_tensor to the last use of anything that may
//    alias it: call_tir_dps results alias their outputs (`%y = call_tir_dps(@f, (..), (%y_out,))`
//    means %y IS %y_out), and conservatively any other value computed from it (a reshape view,
//    a tuple holding it, an item of such a tuple, a match_cast, a call of another function,
//    an If). Kernel inputs are not aliased by the kernel's result; shape_of results alias
//    nothing.
//  - A tensor that escapes (may alias the function's result: returned, or inside a returned
//    tuple) is never planned: it stays an alloc_tensor and owns its memory.
//  - Two tensors share a storage only when their lifetimes are disjoint (one's last use comes
//    before the other's allocation); a storage holds one live tensor at a time, at offset 0.
//  - Sizes are byte counts (numel * dtype bytes), possibly symbolic. A free storage is chosen
//    for a new tensor in this order: one whose size the analyzer proves equal; else the one
//    that already fits it (proved >=) with the smallest size estimate. A tensor no free
//    storage fits starts a storage of its own: growing one would hold the new tensor's
//    bytes from that storage's first tensor on, while the earlier tensors live (the
//    transformer block at n = 300, its MLP activation growing the queries' storage: peak
//    1.06 MiB planned against 0.75 MiB unplanned). The estimate of a size is its upper bound
//    from declared variable bounds (`where n <= 2048`, tir::VarNode::upper_bound, through
//    tir::Analyzer::ConstIntBound); sizes without a bound rank as the largest.
//  - A storage's size is the maximum of its tensors' sizes, a PrimExpr the VM evaluates at
//    run time (terms the analyzer proves dominated are dropped, so equal sizes give exactly
//    that size), as large as the current shapes need, not the worst case. With
//    PlanMemoryOptions::size_at_upper_bound (for ahead-of-time allocation) a storage whose
//    size has a finite upper bound is allocated at that constant instead, and when no free
//    storage fits a tensor the one with the largest estimate grows (fewer storages to
//    allocate ahead, so tensors of different symbolic sizes, n * n * 4 and n * 1024, share);
//    off by default: at n = 300 an n * n tensor would take a 16 MiB storage sized for
//    n = 2048.
//  - alloc_storage is emitted right before the storage's first tensor (not at the function
//    start, so storages come into existence only when needed and the peak stays near the
//    largest live set). A storage used by one tensor only is not made: that tensor stays an
//    alloc_tensor. The storage variable is a DataflowVar when all its tensors are in the
//    same dataflow block, else a Var. Its register is released after its last
//    storage_tensor (VM codegen); the memory lives until its last tensor dies, because
//    tensors carved out of a storage hold a reference to its memory (vm/storage.h).
//  - Everything else passes through unchanged; PrimFuncs are untouched.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

struct PlanMemoryOptions {
  // Size storages at their constant upper bound when every variable of the size is bounded.
  bool size_at_upper_bound = false;
};

absl::StatusOr<IRModule> PlanMemory(const IRModule& module, const PlanMemoryOptions& options = {});

}  // namespace kiln::relax
