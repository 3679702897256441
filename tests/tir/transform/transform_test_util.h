// Text in, text out for the TIR passes: a PrimFunc parsed from the text format, and the
// text a function prints to (tir/transform tests compare printed functions).
#pragma once

#include <string>

#include "support/check.h"
#include "tir/stmt.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"

namespace kiln::tir::transform::testing {

// The `prim_func @f(...) { ... }` in `prim_func_text`.
inline PrimFunc ParseFunc(const std::string& prim_func_text) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(prim_func_text);
  KILN_CHECK(parsed.ok()) << parsed.status() << "\n" << prim_func_text;
  return parsed->func;
}

inline std::string Print(const PrimFunc& f) { return PrintPrimFunc(f, "f"); }

// Text that parses and prints again to itself: the expected outputs are real TIR.
inline std::string Canonical(const std::string& prim_func_text) { return Print(ParseFunc(prim_func_text)); }

}  // namespace kiln::tir::transform::testing
