// DeduplicatePrimFuncs: one PrimFunc per distinct kernel.
//
// PrimFuncs that are structurally equal (tir/structural_equal.h: the same body, parameters
// and attributes up to the names of variables and buffers; block names count) compute the
// same thing, so they are one kernel. Of each such group the first in module order is
// kept; every GlobalVar naming another member (call_tir callees, direct calls, functions
// held in variables) is renamed to the kept one, and the others are removed. Candidates are
// grouped by structural hash, then compared, so the pass takes time linear in the size of
// the module's PrimFuncs (plus the comparisons of equal ones).
//
// Identical fused kernels (each layer of a decoder makes its own fused_matmul_add_gelu) are
// then scheduled and compiled once: the pipeline runs this before `schedule`. A kernel's
// argument checks name the parameters of the one kept (its first user's tensors' names).
//
// A module without duplicates is returned unchanged (every entry the same object). The
// pass cannot fail; the StatusOr is for the pipeline's shape.
#pragma once

#include "absl/status/statusor.h"
#include "relax/ir_module.h"

namespace kiln::relax {

absl::StatusOr<IRModule> DeduplicatePrimFuncs(const IRModule& module);

}  // namespace kiln::relax
