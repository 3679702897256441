// Parser of the Kiln IR text format (docs/ir.md): a whole IRModule of Relax functions and
// TIR PrimFuncs. PrimFuncs and PrimExprs (symbolic shapes included) are parsed by the TIR
// parser (tir/text_parser.h), which this one extends.
//
// Promises:
//  - Never crashes, hangs or recurses without bound on any input; nesting deeper than
//    kMaxTextNesting is an error.
//  - Every error is one absl::InvalidArgument status whose message reads
//    `file:line:col: error: expected ..., found ...` (or names the offending thing).
//  - Names are resolved: each use of a Relax variable, TIR variable or buffer is the very
//    node its definition created; undefined names and redefinitions are errors. A `@name`
//    use is a fresh GlobalVar that must name a function of the module.
//  - Struct info is NOT inferred: a binding without an annotation gets an undefined
//    StructInfo (the block builder fills it in). PrimExpr operand dtypes are checked.
//  - Operators are taken by name (`R.foo` is Op("foo")); whether they exist is checked later.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/text_parser.h"

namespace kiln::relax {

using tir::kMaxTextNesting;
// Where things were defined, keyed by node pointer: Relax functions (the FunctionNode),
// PrimFuncs (the PrimFuncNode), Relax Vars (their VarNode: parameters and bindings), TIR
// variables (tir::VarNode), buffers (tir::BufferNode) and buffer accesses (tir/text_parser.h).
using tir::SourceLocation;
using tir::SourceMap;

struct ParsedModule {
  IRModule module;
  SourceMap locations;
};

absl::StatusOr<ParsedModule> ParseModule(std::string_view text, std::string file_name = "<input>");

}  // namespace kiln::relax
