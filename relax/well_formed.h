// The well-formedness checker of DESIGN.md section 3: runs after passes in debug builds and
// tests, so a pass that breaks an invariant is caught at that pass.
//
// What it checks, per Relax function:
//  - SSA: each Var is defined once in the whole module (a parameter or one binding).
//  - Scoping: a Var is used after its definition and inside its scope (a function's
//    parameters in that function; bindings of a SeqExpr in that SeqExpr); a DataflowVar is
//    bound only in a dataflow block and never used outside it.
//  - Every GlobalVar names an entry of the module; every Op is registered.
//  - Symbolic variables in struct info, ShapeExprs and PrimValues are defined (by a
//    parameter's struct info or a match_cast) before use. The struct info that defines them
//    can hold: no negative constant dimension, no variable with upper bound < lower bound.
//  - Every Var carries struct info, and it is provably a base of what its bound value's struct
//    info is (re-inferred for calls; for match_cast, of the cast struct info); a function's
//    return struct info is a base of its body's. Call arguments are leaves (A-normal form).
//  - Purity: a dataflow block holds only pure calls and no If; a function declared pure calls
//    nothing impure (operators per OpInfo::pure; functions per their declared purity).
//  - An If condition is a bool Prim.
// Per PrimFunc: loop, let and block iteration variables are defined once and used only in
// their scope; buffers used are parameters or allocated in scope; BufferStore / BufferLoad
// have one index per buffer dimension.
//
// Returns OK, or InvalidArgument listing ALL problems found, one per line, each starting
// with `function 'name': `.
#pragma once

#include "absl/status/status.h"
#include "relax/ir_module.h"

namespace kiln::relax {

absl::Status CheckWellFormed(const IRModule& module);

}  // namespace kiln::relax
