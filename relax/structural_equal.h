// Structural equality of Relax: StructInfo, expressions (functions included) and IRModules.
//
// What it promises (on top of tir/structural_equal.h, whose rules govern the PrimExprs in
// shapes and the PrimFuncs of a module):
//  - Equal means the same node kinds, values, attributes (Call attrs compared by value;
//    floats by bits), children in order, and struct info: every expression's struct info is
//    compared when both sides have one, and one side having it while the other does not is
//    a difference. Constants compare dtype, shape and bytes.
//  - Relax Vars and DataflowVars are compared up to consistent renaming where they are
//    defined (function parameters, binding variables, match_cast), one to one both ways;
//    the kind (Var vs DataflowVar) and the struct info at the definition must agree. Names
//    do not matter. A variable defined nowhere in the compared objects is free and compares
//    by identity.
//  - Symbolic shape variables are bound at their first occurrence in a function parameter's
//    struct info, in a match_cast's struct info, or in the parameters of a Func struct info
//    (whose variables are its own: their mapping ends with the signature); so `Tensor((n, m))` and `Tensor((p, q))` parameters are equal, `(n, n)` and `(p, q)`
//    are not. Elsewhere (a binding variable's annotation, a call's sinfo_args, return struct
//    info) they must already be mapped or be the same free variable. A StructInfo compared
//    on its own is not a definition site (its variables are free) unless it is a Func.
//  - GlobalVar compares by name (and struct info), Op by name, ExternFunc by symbol.
//  - An IRModule is a map from name to function: entry order does not matter; each pair of
//    functions with one name is compared structurally, each with its own variable mapping.
//  - StructuralHash (relax/structural_hash.h) agrees: equal objects hash equal.
#pragma once

#include <string>

#include "relax/expr.h"
#include "relax/ir_module.h"
#include "relax/struct_info.h"
#include "tir/structural_equal.h"

namespace kiln::relax {

bool StructuralEqual(const StructInfo& a, const StructInfo& b);
bool StructuralEqual(const Expr& a, const Expr& b);
bool StructuralEqual(const IRModule& a, const IRModule& b);

// "" when equal; otherwise the path to the first difference and what differs, e.g.
// "module['main'].body.blocks[0].bindings[1].value.args[0]: free variables differ: x vs y".
std::string StructuralDiff(const StructInfo& a, const StructInfo& b);
std::string StructuralDiff(const Expr& a, const Expr& b);
std::string StructuralDiff(const IRModule& a, const IRModule& b);

// For hash containers keyed by structure (Relax and TIR objects alike).
struct StructuralEqualFn {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return StructuralEqual(a, b);
  }
};

}  // namespace kiln::relax
