// Parser of the TIR part of the Kiln IR text format (docs/ir.md): a PrimFunc with its
// statements and PrimExprs. The module parser (relax/text_parser.h) is built on this one: it
// parses every `prim_func` of a module and every symbolic shape expression through it.
//
// Promises:
//  - Never crashes, hangs or recurses without bound on any input; nesting deeper than
//    kMaxTextNesting, or more than kMaxExpressionOperators binary operators in one
//    expression, is an error.
//  - Every error is one absl::InvalidArgument status whose message reads
//    `file:line:col: error: expected ..., found ...` (or names the offending thing).
//  - Names are resolved: each use of a TIR variable or buffer is the very node its definition
//    created; undefined names and redefinitions are errors.
//  - Operand dtypes are checked before any node is built, so no input reaches a KILN_CHECK.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir {

inline constexpr int kMaxTextNesting = 256;
// Binary operators in one expression (`a + b + ... `): a long chain builds a tree as deep as
// it is long, which every recursive pass after the parser (printer, simplifier, codegen)
// would walk, so it is bounded like nesting.
inline constexpr int kMaxExpressionOperators = 1024;

struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

// Where things were defined, keyed by node pointer: PrimFuncs (the PrimFuncNode), TIR
// variables (VarNode), buffers (BufferNode) and buffer accesses (the PrimExprNode of a
// BufferLoad, the StmtNode of a BufferStore: the buffer's name there); the module parser
// adds Relax nodes.
using SourceMap = std::unordered_map<const void*, SourceLocation>;

struct ParsedPrimFunc {
  std::string name;  // without the '@'
  PrimFunc func;
  SourceMap locations;
};

// Exactly one `prim_func @name(...) { ... }` (comments and whitespace around it allowed).
absl::StatusOr<ParsedPrimFunc> ParsePrimFunc(std::string_view text, std::string file_name = "<input>");

// Exactly one PrimExpr whose variables are among `vars`, by name (a schedule trace's
// condition, tir/schedule/trace.h): an undefined name, or a name two of `vars` share, is an
// error; no buffer can be read.
absl::StatusOr<PrimExpr> ParsePrimExpr(std::string_view text, const std::vector<Var>& vars,
                                       std::string file_name = "<input>");

}  // namespace kiln::tir
