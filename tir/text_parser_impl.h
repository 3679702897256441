// Internal to the text parsers: the TIR productions (tir/text_parser.cc), which the module
// parser (relax/text_parser_impl.h) extends with the Relax ones. Not for use elsewhere:
// include tir/text_parser.h or relax/text_parser.h.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"
#include "tir/text_lexer.h"
#include "tir/text_parser.h"

namespace kiln::tir::text_internal {

class TirParser {
 public:
  TirParser(std::vector<Token> tokens, std::string file) : tokens_(std::move(tokens)), file_(std::move(file)) {}

  // `prim_func @name(...) {...}` then the end of input.
  absl::StatusOr<ParsedPrimFunc> ParseLonePrimFunc();
  // One PrimExpr over `vars` then the end of input.
  absl::StatusOr<PrimExpr> ParseLonePrimExpr(const std::vector<Var>& vars);

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
  // The value of the decimal number token `t` as a `dtype` float (float32 rounded once,
  // straight from the decimal); a number beyond the type's finite range is an error rather
  // than a silent infinity (`inf` is written as a word).
  absl::StatusOr<double> FloatLiteral(const Token& t, DataType dtype) const;
  absl::StatusOr<DataType> ParseDataType();
  // Expected(what), naming the text format's spelling when the current token is a data type
  // spelt another way ("f32": "write float32").
  absl::Status ExpectedDataType(std::string_view what) const;
  void Record(const void* node, const Token& at);

  // Bounded recursion: every recursive production opens one.
  class Depth {
   public:
    explicit Depth(TirParser* p) : p_(p) { ++p_->depth_; }
    ~Depth() { --p_->depth_; }
    bool too_deep() const { return p_->depth_ > kMaxTextNesting; }

   private:
    TirParser* p_;
  };
  absl::Status TooDeep() const;

  // ---- PrimExpr and TIR
  absl::StatusOr<PrimExpr> ParsePrimExpr();
  // "(a, b)", "(a,)", "()". For a shape (not strides) a negative constant is an error.
  absl::StatusOr<std::vector<PrimExpr>> ParseDims(bool shape = true);
  absl::StatusOr<std::vector<PrimExpr>> ParsePrimList(std::string_view close);
  // After `prim_func @name` (name_token): the parameters, bounds and body.
  absl::StatusOr<PrimFunc> ParsePrimFunc(const Token& name_token);
  absl::Status ParseBounds();  // the `where` clause, into pending_bounds_
  absl::Status CheckBoundsUsed();  // every bound names a defined variable and can hold
  // A constant index must lie in its dimension (in [0, extent) when the extent is constant).
  absl::Status CheckConstantIndices(const Token& name, const Buffer& buffer,
                                    const std::vector<PrimExpr>& indices) const;
  // Every symbolic variable of the parameters' shapes has a value from the call: it is a
  // scalar parameter or a whole dimension or stride of a buffer parameter.
  absl::Status CheckParamVarsBound(const std::vector<PrimFuncParam>& params) const;
  // Index of the `where` of a function header starting at the current token, or 0.
  size_t FindWhereClause() const;
  // Defines a symbolic variable in a defining context (with any declared bound).
  Var DefineSymVar(const Token& at, DataType dtype, bool shape_var);
  const Var* LookupTirVar(const std::string& name) const;

 protected:
  std::vector<Token> tokens_;
  std::string file_;
  size_t pos_ = 0;
  int depth_ = 0;
  // PrimExprs being parsed (an index inside an expression is one more) and the binary
  // operators of the outermost one so far (kMaxExpressionOperators).
  int prim_expr_depth_ = 0;
  int expression_operators_ = 0;
  SourceMap locations_;

  // Scopes: innermost last.
  std::vector<std::unordered_map<std::string, Var>> tir_scopes_;
  // The variables of the loops around the statement being parsed, innermost last: a block's
  // iteration extents must not use them.
  std::vector<const VarNode*> loop_vars_;
  std::vector<std::unordered_map<std::string, Buffer>> buffer_scopes_;
  // Unknown names in PrimExprs define symbolic variables (buffer parameters' shapes; for the
  // module parser also struct info of parameters and match_cast).
  bool defining_ = false;
  // The scope symbolic variables are defined in: the function's (0), or a Func struct info's.
  size_t sym_scope_ = 0;
  struct Bound {
    Token at;
    std::optional<int64_t> lower;
    std::optional<int64_t> upper;
    bool used = false;
    bool shape_var = false;  // it bounds a dimension (never negative)
  };
  std::unordered_map<std::string, Bound> pending_bounds_;

 private:
  // PrimExpr levels, loosest first (C's order; comparisons form one level).
  absl::StatusOr<PrimExpr> ParseOr();
  absl::StatusOr<PrimExpr> ParseAnd();
  absl::StatusOr<PrimExpr> ParseBitOr();
  absl::StatusOr<PrimExpr> ParseBitXor();
  absl::StatusOr<PrimExpr> ParseBitAnd();
  absl::StatusOr<PrimExpr> ParseCmp();
  absl::StatusOr<PrimExpr> ParseShift();
  absl::StatusOr<PrimExpr> ParseAdd();
  absl::StatusOr<PrimExpr> ParseMul();
  // One left-associative level: `next (op next)*` for the operators of `ops`.
  absl::StatusOr<PrimExpr> ParseLevel(std::initializer_list<std::pair<std::string_view, ExprKind>> ops,
                                      absl::StatusOr<PrimExpr> (TirParser::*next)());
  absl::StatusOr<PrimExpr> ParseUnary();
  absl::StatusOr<PrimExpr> ParseAtom();
  absl::StatusOr<PrimExpr> ParseCallForm(const Token& name);
  absl::StatusOr<PrimExpr> ParseTypedLiteral(const Token& name, DataType dtype);
  absl::StatusOr<PrimExpr> Binary(const Token& op, ExprKind kind, PrimExpr a, PrimExpr b);
  // Statements.
  absl::StatusOr<Stmt> ParseStmtBlock();  // '{' stmt* '}'
  absl::StatusOr<std::vector<Stmt>> ParseStmtsUntilClose();
  absl::StatusOr<Stmt> ParseStmt();
  absl::StatusOr<Stmt> ParseFor();
  absl::StatusOr<Stmt> ParseBlock();
  absl::StatusOr<Stmt> ParseBufferScope();
  absl::StatusOr<Stmt> ParseBufferStore();
  absl::StatusOr<Buffer> ParseBufferType(const std::string& name);
  absl::Status DefineTirVar(const Token& at, const Var& var);
  absl::Status DefineBuffer(const Token& at, const Buffer& buffer);
  const Buffer* LookupBuffer(const std::string& name) const;
};

}  // namespace kiln::tir::text_internal
