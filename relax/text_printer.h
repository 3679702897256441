// Printer of the Kiln IR text format (docs/ir.md): whole modules and Relax expressions.
// PrimFuncs and TIR statements print through tir/text_printer.h.
//
// Promises: the output parses back (ParseModule) to a structurally equal module, and
// printing that again gives the same text. Names come from the IR's name hints, made into
// identifiers and made unique within a function (a second `x` prints as `x_1`), so IR built
// by passes with repeated or odd names still round-trips. PrimExprs are spelled as
// tir::ToString spells them and StructInfo as relax::ToString does (same grammar; only
// the variable names may differ after uniquing).
#pragma once

#include <string>
#include <string_view>

#include "relax/ir_module.h"
#include "tir/text_printer.h"

namespace kiln::relax {

std::string PrintModule(const IRModule& module);
// One Relax expression; a Function prints as `func @<name>(...) { ... }`.
std::string PrintExpr(const Expr& expr, std::string_view function_name = "main");
// The TIR printer's, here too so that code printing modules and PrimFuncs needs one header.
using tir::PrintPrimFunc;
using tir::PrintStmt;

}  // namespace kiln::relax
