// Printer of the TIR part of the Kiln IR text format (docs/ir.md): PrimFuncs and statements.
// The module printer (relax/text_printer.h) is built on this one.
//
// Promises: the output parses back (tir::ParsePrimFunc, or inside a module) to a
// structurally equal PrimFunc, and printing that again gives the same text. Names come from
// the IR's name hints, made into identifiers and made unique within a function (a second
// `i` prints as `i_1`), so IR built by passes with repeated or odd names still round-trips.
// PrimExprs are spelled as tir::ToString spells them (only the variable names may differ
// after uniquing).
#pragma once

#include <string>
#include <string_view>

#include "tir/stmt.h"

namespace kiln::tir {

// `prim_func @<name>(...) { ... }`.
std::string PrintPrimFunc(const PrimFunc& func, std::string_view name = "main");
std::string PrintStmt(const Stmt& stmt);

}  // namespace kiln::tir
