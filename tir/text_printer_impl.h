// Internal to the text printers: the TIR part (tir/text_printer.cc), which the module
// printer (relax/text_printer_impl.h) extends with Relax. Not for use elsewhere: include
// tir/text_printer.h or relax/text_printer.h.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tir/stmt.h"

namespace kiln::tir::text_internal {

class TirPrinter {
 public:
  virtual ~TirPrinter() = default;
  std::string Take() { return std::move(out_); }

  void PrintPrimFunc(const PrimFunc& func, std::string_view name);
  void PrintStmt(const Stmt& stmt);
  void PrintPrimExpr(const PrimExpr& expr, std::string* out);

  // Starts a new function: names are unique per function.
  virtual void ResetNames();

 protected:
  void Line(std::string_view text);
  std::string Indent() const { return std::string(2 * indent_, ' '); }
  // A unique identifier for `node`, assigned on first request from `hint`.
  const std::string& TirName(const void* node, const std::string& hint);
  // `hint` made into an identifier that is no keyword of the format and not in `used`.
  static std::string Unique(const std::string& hint, std::unordered_set<std::string>* used);

  void PrintBodyStmts(const Stmt& body);
  std::string BufferType(const Buffer& buffer);
  // ` where n <= 8, ...` for variables defined (with whether 0 is their default lower bound).
  std::string BoundsClause(const std::vector<std::pair<const VarNode*, bool>>& defined);
  void PrimList(const std::vector<PrimExpr>& items, std::string* out);
  class PrimNamer;

  std::string out_;
  int indent_ = 0;
  // Names of every node printed in the current function, TIR and (module printer) Relax.
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> tir_used_;
  // TIR variables in order of first naming, for the `where` clause of a function.
  std::vector<const VarNode*> tir_order_;
  std::unordered_set<const void*> let_vars_;
};

}  // namespace kiln::tir::text_internal
