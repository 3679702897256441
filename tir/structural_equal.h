// Structural equality of TIR: PrimExpr, Stmt, PrimFunc.
//
// What it promises:
//  - Two objects are equal when they have the same node kinds, dtypes, values, attributes
//    and children in the same order. Float immediates compare by their bits (so -0.0 differs
//    from 0.0 and a NaN equals the same NaN).
//  - Variables are compared up to consistent renaming where they are bound. A Var is bound
//    at its definition (a loop variable, let variable, block iteration variable or scalar
//    PrimFunc parameter), and a symbolic variable at its first occurrence in a definition
//    site's expressions (the shapes of PrimFunc buffer parameters; at the Relax level, the
//    struct info of function parameters and of match_cast). The first time a pair (lhs, rhs)
//    is met at a definition they are mapped to each other, one to one; every later meeting
//    must follow that mapping. Names do not matter for bound variables; dtype and declared
//    bounds do. A variable never defined in the compared objects is free and compares by
//    identity (the same node on both sides).
//  - Buffers likewise are bound at their definition (PrimFunc parameters, Allocate, a
//    block's alloc_buffers), where dtype, shape, strides and scope are compared, but not
//    the name; a buffer used without a definition compares by identity. Block names are
//    compared (schedules refer to blocks by name).
//  - Mappings are not scoped: IR is expected to define each variable once, so a variable
//    defined twice must be mapped to the same partner both times.
//  - StructuralHash (tir/structural_hash.h) agrees: equal objects hash equal.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::tir {

bool StructuralEqual(const PrimExpr& a, const PrimExpr& b);
bool StructuralEqual(const Stmt& a, const Stmt& b);
bool StructuralEqual(const PrimFunc& a, const PrimFunc& b);

// "" when equal; otherwise where the first difference is and what it is, e.g.
// "body.seq[1].value.b: var n vs var m (not mapped to each other)". For test messages.
std::string StructuralDiff(const PrimExpr& a, const PrimExpr& b);
std::string StructuralDiff(const Stmt& a, const Stmt& b);
std::string StructuralDiff(const PrimFunc& a, const PrimFunc& b);

// For hash containers keyed by structure (e.g. deduplicating identical PrimFuncs), with
// StructuralHashFn of tir/structural_hash.h.
struct StructuralEqualFn {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return StructuralEqual(a, b);
  }
};

// The comparison with its variable mapping exposed, so that callers (the Relax level, which
// compares symbolic shapes) can keep one mapping across many comparisons. Comparisons that
// define variables leave them mapped for the ones that follow.
class StructuralEqualizer {
 public:
  // With record_diff, the first mismatch's path and reason are kept for Diff().
  explicit StructuralEqualizer(bool record_diff = false) : record_diff_(record_diff) {}

  // Compares where variables are used: a mapped variable must meet its partner; an unmapped
  // one must be the same variable on both sides.
  bool ExprEqual(const PrimExpr& a, const PrimExpr& b);
  // Compares at a definition site: variables mapped on neither side become mapped.
  bool DefExprEqual(const PrimExpr& a, const PrimExpr& b);
  // A variable definition (dtype and bounds must agree).
  bool DefineVar(const VarNode* a, const VarNode* b);
  bool StmtEqual(const Stmt& a, const Stmt& b);
  bool PrimFuncEqual(const PrimFunc& a, const PrimFunc& b);
  // A buffer definition; `define_shape_vars` for PrimFunc parameters, whose shapes define
  // their symbolic variables.
  bool DefineBuffer(const BufferNode* a, const BufferNode* b, bool define_shape_vars);
  bool BufferUseEqual(const BufferNode* a, const BufferNode* b);

  // Variable mappings made after SaveVarScope are forgotten by RestoreVarScope: a binder
  // whose variables are its own (a Relax Func struct info) compares inside such a scope.
  struct VarScope {
    std::unordered_map<const VarNode*, const VarNode*> lhs_to_rhs, rhs_to_lhs;
  };
  VarScope SaveVarScope() const { return {var_lhs_to_rhs_, var_rhs_to_lhs_}; }
  void RestoreVarScope(VarScope scope) {
    var_lhs_to_rhs_ = std::move(scope.lhs_to_rhs);
    var_rhs_to_lhs_ = std::move(scope.rhs_to_lhs);
  }

  // --- Diff recording, shared with the levels built on this one. ---
  bool recording() const { return record_diff_; }
  // Records why the comparison failed (the first reason only) and returns false.
  // `describe` is called only when recording.
  template <typename Describe>
  bool Mismatch(Describe&& describe) {
    if (record_diff_ && !has_reason_) {
      reason_ = describe();
      has_reason_ = true;
    }
    return false;
  }
  // Adds a path step while a failure unwinds (innermost first) and returns false.
  bool At(const char* field, int index = -1) {
    if (record_diff_) path_.emplace_back(field, index);
    return false;
  }
  // "root.path: reason", or "" when nothing failed.
  std::string Diff(std::string_view root = "") const;

 private:
  bool Expr(const PrimExpr& a, const PrimExpr& b, bool define);
  bool Exprs(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b, const char* field,
             bool define);
  bool VarEqual(const VarNode* a, const VarNode* b, bool define);

  std::unordered_map<const VarNode*, const VarNode*> var_lhs_to_rhs_;
  std::unordered_map<const VarNode*, const VarNode*> var_rhs_to_lhs_;
  std::unordered_map<const BufferNode*, const BufferNode*> buffer_lhs_to_rhs_;
  std::unordered_map<const BufferNode*, const BufferNode*> buffer_rhs_to_lhs_;

  bool record_diff_;
  bool has_reason_ = false;
  std::string reason_;
  std::vector<std::pair<const char*, int>> path_;  // innermost first
};

}  // namespace kiln::tir
