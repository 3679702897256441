// Internal to the text parser (text_parser.cc: module and Relax; text_tir_parser.cc:
// PrimExprs, TIR statements and PrimFuncs). Not for use elsewhere: include text_parser.h.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/ir_module.h"
#include "relax/text_lexer.h"
#include "relax/text_parser.h"
#include "tir/stmt.h"

namespace kiln::relax::text_internal {

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string file) : tokens_(std::move(tokens)), file_(std::move(file)) {}

  absl::StatusOr<ParsedModule> ParseModule();

  // ---- shared token helpers
  const Token& Peek(size_t offset = 0) const {
    size_t i = pos_ + offset;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& Next() {
    const Token& t = Peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsPunct(std::string_view p, size_t offset = 0) const {
    const Token& t = Peek(offset);
    return t.kind == TokenKind::kPunct && t.text == p;
  }
  bool IsKeyword(std::string_view k, size_t offset = 0) const {
    const Token& t = Peek(offset);
    return t.kind == TokenKind::kIdent && t.text == k;
  }
  bool AcceptPunct(std::string_view p) {
    if (!IsPunct(p)) return false;
    Next();
    return true;
  }
  bool AcceptKeyword(std::string_view k) {
    if (!IsKeyword(k)) return false;
    Next();
    return true;
  }
  absl::Status Error(const Token& at, std::string_view message) const;
  // "expected WHAT, found <the current token>".
  absl::Status Expected(std::string_view what) const;
  absl::Status ExpectPunct(std::string_view p);
  absl::Status ExpectKeyword(std::string_view k);
  absl::StatusOr<std::string> ExpectIdent(std::string_view what);
  absl::StatusOr<int64_t> ParseInt(std::string_view what, bool allow_negative);
  absl::StatusOr<DataType> ParseDataType();
  void Record(const void* node, const Token& at);

  // Bounded recursion: every recursive production opens one.
  class Depth {
   public:
    explicit Depth(Parser* p) : p_(p) { ++p_->depth_; }
    ~Depth() { --p_->depth_; }
    bool too_deep() const { return p_->depth_ > kMaxTextNesting; }

   private:
    Parser* p_;
  };
  absl::Status TooDeep() const;

  // ---- PrimExpr and TIR (text_tir_parser.cc)
  absl::StatusOr<PrimExpr> ParsePrimExpr();
  // "(a, b)", "(a,)", "()". For a shape (not strides) a negative constant is an error.
  absl::StatusOr<std::vector<PrimExpr>> ParseDims(bool shape = true);
  absl::StatusOr<tir::PrimFunc> ParsePrimFunc(const Token& name_token);
  absl::Status ParseBounds();  // the `where` clause, into pending_bounds_
  absl::Status CheckBoundsUsed();  // every bound names a defined variable and can hold
  // Defines a symbolic variable in a defining context (with any declared bound).
  tir::Var DefineSymVar(const Token& at, DataType dtype, bool shape_var);

  // ---- Relax (text_parser.cc)
  absl::StatusOr<StructInfo> ParseStructInfo();

 private:
  // PrimExpr levels.
  absl::StatusOr<PrimExpr> ParseOr();
  absl::StatusOr<PrimExpr> ParseAnd();
  absl::StatusOr<PrimExpr> ParseCmp();
  absl::StatusOr<PrimExpr> ParseAdd();
  absl::StatusOr<PrimExpr> ParseMul();
  absl::StatusOr<PrimExpr> ParseUnary();
  absl::StatusOr<PrimExpr> ParseAtom();
  absl::StatusOr<PrimExpr> ParseCallForm(const Token& name);
  absl::StatusOr<PrimExpr> ParseTypedLiteral(const Token& name, DataType dtype);
  absl::StatusOr<PrimExpr> Binary(const Token& op, tir::ExprKind kind, PrimExpr a, PrimExpr b);
  absl::StatusOr<std::vector<PrimExpr>> ParsePrimList(std::string_view close);
  // TIR statements.
  absl::StatusOr<tir::Stmt> ParseStmtBlock();  // '{' stmt* '}'
  absl::StatusOr<std::vector<tir::Stmt>> ParseStmtsUntilClose();
  absl::StatusOr<tir::Stmt> ParseStmt();
  absl::StatusOr<tir::Stmt> ParseFor();
  absl::StatusOr<tir::Stmt> ParseBlock();
  absl::StatusOr<tir::Stmt> ParseBufferStore();
  absl::StatusOr<tir::Buffer> ParseBufferType(const std::string& name);
  absl::Status DefineTirVar(const Token& at, const tir::Var& var);
  absl::Status DefineBuffer(const Token& at, const tir::Buffer& buffer);
  const tir::Var* LookupTirVar(const std::string& name) const;
  const tir::Buffer* LookupBuffer(const std::string& name) const;

  // Relax.
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
  size_t FindWhereClause() const;  // index of `where` in a header, or 0
  bool ValueIsMatchCast() const;

  bool IsStructInfoKeyword(size_t offset = 0) const;

  std::vector<Token> tokens_;
  std::string file_;
  size_t pos_ = 0;
  int depth_ = 0;
  SourceMap locations_;

  // Scopes: innermost last.
  std::vector<std::unordered_map<std::string, Var>> relax_scopes_;
  std::vector<std::unordered_map<std::string, tir::Var>> tir_scopes_;
  std::vector<std::unordered_map<std::string, tir::Buffer>> buffer_scopes_;
  // Unknown names in PrimExprs define symbolic variables (params' struct info, match_cast).
  bool defining_ = false;
  // The scope symbolic variables are defined in: the function's (0), or a Func struct info's.
  size_t sym_scope_ = 0;
  bool in_dataflow_ = false;
  struct Bound {
    Token at;
    std::optional<int64_t> lower;
    std::optional<int64_t> upper;
    bool used = false;
    bool shape_var = false;  // it bounds a dimension (never negative)
  };
  std::unordered_map<std::string, Bound> pending_bounds_;
  std::vector<Token> global_uses_;
};

}  // namespace kiln::relax::text_internal
