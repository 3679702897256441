// Internal to the text printer (text_printer.cc: module and Relax; text_tir_printer.cc:
// PrimExprs, TIR statements and PrimFuncs). Not for use elsewhere: include text_printer.h.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "relax/expr.h"
#include "relax/ir_module.h"
#include "tir/stmt.h"

namespace kiln::relax::text_internal {

class Printer {
 public:
  std::string Take() { return std::move(out_); }

  // Module / Relax (text_printer.cc).
  void PrintModule(const IRModule& module);
  void PrintFunction(const FunctionNode& func, std::string_view name);
  void PrintExprInline(const Expr& expr, std::string* out);
  void PrintStructInfo(const StructInfo& sinfo, std::string* out);

  // TIR (text_tir_printer.cc).
  void PrintPrimFunc(const tir::PrimFunc& func, std::string_view name);
  void PrintStmt(const tir::Stmt& stmt);
  void PrintPrimExpr(const PrimExpr& expr, std::string* out);

  // Starts a new function: names are unique per function.
  void ResetNames();

 private:
  void Line(std::string_view text);
  std::string Indent() const { return std::string(2 * indent_, ' '); }
  // A unique identifier for `node`, assigned on first request from `hint`.
  const std::string& RelaxName(const void* node, const std::string& hint);
  const std::string& TirName(const void* node, const std::string& hint);
  static std::string Unique(const std::string& hint, std::unordered_set<std::string>* used);
  std::string VarRef(const Var& var);

  void PrintSeqBody(const Expr& seq, std::string_view terminator);
  void PrintBinding(const Binding& binding);
  void PrintBodyStmts(const tir::Stmt& body);
  std::string BufferType(const tir::Buffer& buffer);
  std::string BoundsClause(const std::vector<std::pair<const tir::VarNode*, bool>>& defined);
  void PrimList(const std::vector<PrimExpr>& items, std::string* out);
  class PrimNamer;

  std::string out_;
  int indent_ = 0;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> relax_used_;
  std::unordered_set<std::string> tir_used_;
  // TIR variables in order of first naming, for the `where` clause of a Relax function.
  std::vector<const tir::VarNode*> tir_order_;
  std::unordered_set<const void*> let_vars_;
};

// Shared spelling helpers.
std::string AttrValueText(const AttrValue& value);

}  // namespace kiln::relax::text_internal
