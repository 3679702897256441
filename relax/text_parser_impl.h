// Internal to the module parser (text_parser.cc): the module and Relax productions, on top
// of the TIR ones (tir/text_parser_impl.h), which parse PrimFuncs and every PrimExpr. Not for
// use elsewhere: include text_parser.h.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"
#include "tir/text_parser_impl.h"

namespace kiln::relax::text_internal {

using tir::Token;
using tir::TokenKind;

class Parser : public tir::text_internal::TirParser {
 public:
  using TirParser::TirParser;

  absl::StatusOr<ParsedModule> ParseModule();

 private:
  absl::StatusOr<StructInfo> ParseStructInfo();
  absl::StatusOr<Expr> ParseFunction(const Token& name_token, bool pure);
  absl::StatusOr<Expr> ParseSeq(std::string_view terminator);
  absl::Status ParseBindings(BindingBlock* block);
  absl::Status ParseBinding(BindingBlock* block);
  absl::StatusOr<Expr> ParseIf();
  absl::StatusOr<Expr> ParseExpr();
  absl::StatusOr<Expr> ParsePrimary();
  absl::StatusOr<Expr> ParseRForm();
  absl::StatusOr<Expr> ParseConstant();
  absl::StatusOr<Expr> ParseCallArgs(Expr callee);
  absl::StatusOr<AttrValue> ParseAttrValue();
  absl::Status ParseAttrLine(Attrs* attrs);
  absl::Status DefineRelaxVar(const Token& at, const std::string& key, const Var& var, bool outer);
  bool ValueIsMatchCast() const;

  bool IsStructInfoKeyword(size_t offset = 0) const;

  // Scopes: innermost last.
  std::vector<std::unordered_map<std::string, Var>> relax_scopes_;
  bool in_dataflow_ = false;
  std::vector<Token> global_uses_;
};

}  // namespace kiln::relax::text_internal
