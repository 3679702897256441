// Internal to the module printer (text_printer.cc): the Relax part, on top of the TIR
// printer (tir/text_printer_impl.h). Not for use elsewhere: include text_printer.h.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "relax/expr.h"
#include "relax/ir_module.h"
#include "tir/text_printer_impl.h"

namespace kiln::relax::text_internal {

class Printer : public tir::text_internal::TirPrinter {
 public:
  void PrintModule(const IRModule& module);
  void PrintFunction(const FunctionNode& func, std::string_view name);
  void PrintExprInline(const Expr& expr, std::string* out);
  void PrintStructInfo(const StructInfo& sinfo, std::string* out);

  void ResetNames() override;

 private:
  // A unique identifier for `node`, assigned on first request from `hint`.
  const std::string& RelaxName(const void* node, const std::string& hint);
  std::string VarRef(const Var& var);

  void PrintSeqBody(const Expr& seq, std::string_view terminator);
  void PrintBinding(const Binding& binding);

  std::unordered_set<std::string> relax_used_;
};

// Shared spelling helpers.
std::string AttrValueText(const AttrValue& value);

}  // namespace kiln::relax::text_internal
