// Relations between StructInfos, for inference, normalization and checking.
//
// What it promises:
//  - CheckBaseOf(base, derived) answers "does every value described by `derived` also fit
//    `base`?" with three outcomes: kYes (statically certain), kNo (certainly not: a
//    different kind, rank, dtype, device, or a dimension the analyzer proves different), or
//    kMaybe (only a run-time check could tell: `derived` is less precise than `base`, or two
//    symbolic dimensions are neither provably equal nor provably different).
//  - Join(a, b) is the most precise StructInfo that both `a` and `b` are base of (the least
//    upper bound): details that differ, or cannot be proven equal, are dropped
//    (Tensor((n, 4)) join Tensor((m, 4)) = Tensor(ndim=2)). Different kinds join to Object.
//  - Substitute(sinfo, map) replaces symbolic variables and simplifies each dimension.
//  - An undefined StructInfo is treated as Object.
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "relax/struct_info.h"
#include "tir/analyzer.h"
#include "tir/expr.h"
#include "tir/stmt_functor.h"

namespace kiln::relax {

enum class BaseCheck : uint8_t { kNo, kMaybe, kYes };

BaseCheck CheckBaseOf(const StructInfo& base, const StructInfo& derived, tir::Analyzer& analyzer);
inline bool IsBaseOf(const StructInfo& base, const StructInfo& derived, tir::Analyzer& analyzer) {
  return CheckBaseOf(base, derived, analyzer) == BaseCheck::kYes;
}

StructInfo Join(const StructInfo& a, const StructInfo& b, tir::Analyzer& analyzer);

// Two dimensions: kYes provably equal (structurally identical or by the analyzer), kNo
// provably different, else kMaybe.
BaseCheck CompareDims(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer);

// tir::Substitute on every dimension and Prim value, each then simplified.
using tir::VarMap;
StructInfo Substitute(const StructInfo& sinfo, const VarMap& map, tir::Analyzer& analyzer);

// Every free symbolic variable in `expr` / `sinfo`, in first-occurrence order, without
// repeats. A Func signature's variables are its own (bound per call) and not collected.
void CollectVars(const PrimExpr& expr, std::vector<tir::Var>* out);
std::vector<tir::Var> CollectVars(const StructInfo& sinfo);

// Variables that `sinfo` can define when a value is matched against it: the dimensions
// (of shapes and tensors, at any tuple depth) and Prim values that are a bare variable.
std::vector<tir::Var> DefinableVars(const StructInfo& sinfo);

// `sinfo` with every dimension that mentions a variable outside `defined` forgotten (the
// shape becomes ndim-only; a Prim value is dropped). Used where a value leaves the scope
// that defined its symbolic variables (a function's return, an If branch).
StructInfo EraseUndefinedVars(const StructInfo& sinfo,
                              const std::unordered_set<const tir::VarNode*>& defined);

}  // namespace kiln::relax
