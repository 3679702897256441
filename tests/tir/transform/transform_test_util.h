// Text in, text out for the TIR passes: a PrimFunc parsed from the text format, and the
// text a function prints to (tir/transform tests compare printed functions).
#pragma once

#include <string>

#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "support/check.h"
#include "tir/stmt.h"

namespace kiln::tir::transform::testing {

// The one prim_func in `prim_func_text` (a `prim_func @f(...) { ... }` without `module`).
inline PrimFunc ParseFunc(const std::string& prim_func_text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule("module {\n" + prim_func_text + "\n}\n");
  KILN_CHECK(parsed.ok()) << parsed.status() << "\n" << prim_func_text;
  for (const relax::IRModule::Entry& e : parsed->module.entries()) {
    if (e.prim_func()) return *e.prim_func();
  }
  KILN_CHECK(false) << "no prim_func";
  return PrimFunc();
}

inline std::string Print(const PrimFunc& f) { return relax::PrintPrimFunc(f, "f"); }

// Text that parses and prints again to itself: the expected outputs are real TIR.
inline std::string Canonical(const std::string& prim_func_text) { return Print(ParseFunc(prim_func_text)); }

}  // namespace kiln::tir::transform::testing
