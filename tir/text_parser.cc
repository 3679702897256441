// The PrimExpr, TIR statement and PrimFunc productions of the text parser (see
// tir/text_parser.h for its promises and docs/ir.md for the grammar).
#include "tir/text_parser.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/intrinsics.h"
#include "tir/math_intrinsic_arity.h"
#include "tir/stmt_functor.h"
#include "tir/text_parser_impl.h"

namespace kiln::tir::text_internal {

namespace {

bool IsBinaryFunction(std::string_view name) {
  return name == "floordiv" || name == "floormod" || name == "min" || name == "max";
}

}  // namespace

// ---------------------------------------------------------------- token helpers (the module parser uses them too)

absl::Status TirParser::Error(const Token& at, std::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(file_, ":", at.line, ":", at.column, ": error: ",
                                                 absl::string_view(message.data(), message.size())));
}

absl::Status TirParser::Expected(std::string_view what) const {
  return Error(Peek(), absl::StrCat("expected ", absl::string_view(what.data(), what.size()),
                                    ", found ", DescribeToken(Peek())));
}

absl::Status TirParser::ExpectPunct(std::string_view p) {
  if (AcceptPunct(p)) return absl::OkStatus();
  return Expected(absl::StrCat("'", absl::string_view(p.data(), p.size()), "'"));
}

absl::Status TirParser::ExpectKeyword(std::string_view k) {
  if (AcceptKeyword(k)) return absl::OkStatus();
  return Expected(absl::StrCat("'", absl::string_view(k.data(), k.size()), "'"));
}

absl::StatusOr<std::string> TirParser::ExpectIdent(std::string_view what) {
  if (Peek().kind != TokenKind::kIdent) return Expected(what);
  return Next().text;
}

absl::Status TirParser::TooDeep() const {
  return Error(Peek(), absl::StrCat("nesting deeper than ", kMaxTextNesting, " levels"));
}

absl::StatusOr<double> TirParser::FloatLiteral(const Token& t, DataType dtype) const {
  const double value = dtype.bits() == 32 ? static_cast<double>(std::strtof(t.text.c_str(), nullptr))
                                         : std::strtod(t.text.c_str(), nullptr);
  // The smallest magnitude that rounds to infinity, for the types narrower than their
  // arithmetic: float16 (largest 65504) and bfloat16 (largest 0x1.fep127).
  const double overflow = dtype.bits() == 16 ? (dtype.is_bfloat() ? 0x1.ffp127 : 65520.0)
                                             : std::numeric_limits<double>::infinity();
  if (std::isinf(value) || std::fabs(value) >= overflow) {
    return Error(t, absl::StrCat("number ", t.text, " is outside the range of ", dtype.ToString(),
                                 "; write inf for an infinity"));
  }
  return value;
}

absl::StatusOr<int64_t> TirParser::ParseInt(std::string_view what, bool allow_negative) {
  const Token& start = Peek();
  bool negative = false;
  if (allow_negative && IsPunct("-") && Peek(1).kind == TokenKind::kInt) {
    Next();
    negative = true;
  }
  if (Peek().kind != TokenKind::kInt) return Expected(what);
  const Token& t = Next();
  uint64_t magnitude = 0;
  uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (!ParseUnsignedLiteral(t.text, &magnitude) || magnitude > limit) {
    return Error(start, absl::StrCat("integer ", negative ? "-" : "", t.text, " does not fit in int64"));
  }
  if (negative) return magnitude == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min()
                                                        : -static_cast<int64_t>(magnitude);
  return static_cast<int64_t>(magnitude);
}

absl::Status TirParser::ExpectedDataType(std::string_view what) const {
  const std::string long_name = Peek().kind == TokenKind::kIdent ? DataType::LongName(Peek().text) : "";
  if (long_name.empty()) return Expected(what);
  return Error(Peek(), absl::StrCat("expected ", absl::string_view(what.data(), what.size()), ", found identifier '",
                                    Peek().text, "' (the text format writes this data type ", long_name, ")"));
}

absl::StatusOr<DataType> TirParser::ParseDataType() {
  if (Peek().kind != TokenKind::kIdent) return Expected("a data type (int64, float32, ...)");
  auto dtype = DataType::Parse(Peek().text);
  if (!dtype.ok()) return ExpectedDataType("a data type (int64, float32, ...)");
  Next();
  return *dtype;
}

void TirParser::Record(const void* node, const Token& at) {
  locations_[node] = SourceLocation{file_, at.line, at.column};
}

// ---------------------------------------------------------------- names

const Var* TirParser::LookupTirVar(const std::string& name) const {
  for (auto it = tir_scopes_.rbegin(); it != tir_scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

const Buffer* TirParser::LookupBuffer(const std::string& name) const {
  for (auto it = buffer_scopes_.rbegin(); it != buffer_scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

absl::Status TirParser::DefineTirVar(const Token& at, const Var& var) {
  if (LookupTirVar(var.name()) != nullptr) {
    return Error(at, absl::StrCat("redefinition of variable '", var.name(), "'"));
  }
  tir_scopes_.back()[var.name()] = var;
  Record(var.get(), at);
  return absl::OkStatus();
}

absl::Status TirParser::DefineBuffer(const Token& at, const Buffer& buffer) {
  if (LookupBuffer(buffer->name) != nullptr) {
    return Error(at, absl::StrCat("redefinition of buffer '", buffer->name, "'"));
  }
  buffer_scopes_.back()[buffer->name] = buffer;
  Record(buffer.get(), at);
  return absl::OkStatus();
}

Var TirParser::DefineSymVar(const Token& at, DataType dtype, bool shape_var) {
  std::optional<int64_t> lower = shape_var ? std::optional<int64_t>(0) : std::nullopt;
  std::optional<int64_t> upper;
  // A `where` clause bounds the function's own variables, not those of a Func struct info.
  auto bound = sym_scope_ == 0 ? pending_bounds_.find(at.text) : pending_bounds_.end();
  if (bound != pending_bounds_.end()) {
    bound->second.used = true;
    bound->second.shape_var = shape_var;
    if (bound->second.lower) lower = bound->second.lower;
    upper = bound->second.upper;
  }
  Var var(at.text, dtype, lower, upper);
  tir_scopes_[sym_scope_][at.text] = var;
  Record(var.get(), at);
  return var;
}

absl::Status TirParser::ParseBounds() {
  KILN_RETURN_IF_ERROR(ExpectKeyword("where"));
  while (true) {
    if (Peek().kind != TokenKind::kIdent) return Expected("a variable name in a bound");
    Token name = Next();
    bool upper = IsPunct("<=");
    if (!upper && !IsPunct(">=")) return Expected("'<=' or '>='");
    Next();
    KILN_ASSIGN_OR_RETURN(int64_t value, ParseInt("an integer bound", /*allow_negative=*/true));
    Bound& b = pending_bounds_[name.text];
    if (b.at.text.empty()) b.at = name;
    std::optional<int64_t>& slot = upper ? b.upper : b.lower;
    if (slot) return Error(name, absl::StrCat("'", name.text, "' has two ", upper ? "upper" : "lower", " bounds"));
    slot = value;
    if (!AcceptPunct(",")) break;
  }
  return absl::OkStatus();
}

size_t TirParser::FindWhereClause() const {
  int depth = 0;
  for (size_t i = pos_; i < tokens_.size(); ++i) {
    const Token& t = tokens_[i];
    if (t.kind == TokenKind::kEnd) return 0;
    if (t.kind == TokenKind::kPunct) {
      if (t.text == "(" || t.text == "[") ++depth;
      if (t.text == ")" || t.text == "]") --depth;
      if (t.text == "{" && depth <= 0) return 0;
    }
    if (depth <= 0 && t.kind == TokenKind::kIdent && t.text == "where") return i;
  }
  return 0;
}

absl::Status TirParser::CheckBoundsUsed() {
  for (const auto& [name, bound] : pending_bounds_) {
    if (!bound.used) {
      return Error(bound.at, absl::StrCat("bound on '", name,
                                          "', which is not a symbolic variable defined by the parameters "
                                          "or a match_cast"));
    }
    // Bounds no value satisfies would reach compilation as an empty range; say so here.
    if (bound.shape_var && bound.lower && *bound.lower < 0) {
      return Error(bound.at, absl::StrCat("'", name, "' is a dimension and never negative, but is bounded by ", name,
                                          " >= ", *bound.lower));
    }
    std::optional<int64_t> lower = bound.lower;
    if (!lower && bound.shape_var) lower = 0;
    if (lower && bound.upper && *bound.upper < *lower) {
      return Error(bound.at, absl::StrCat("bounds on '", name, "' can never hold: ", name, " >= ", *lower,
                                          bound.lower ? "" : " (a dimension)", " and ", name, " <= ", *bound.upper));
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- PrimExpr

absl::StatusOr<PrimExpr> TirParser::ParsePrimExpr() {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  if (prim_expr_depth_++ == 0) expression_operators_ = 0;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{prim_expr_depth_};
  if (!IsKeyword("let")) return ParseOr();
  Next();
  if (Peek().kind != TokenKind::kIdent) return Expected("a variable name after 'let'");
  Token name = Next();
  KILN_RETURN_IF_ERROR(ExpectPunct("="));
  KILN_ASSIGN_OR_RETURN(PrimExpr value, ParsePrimExpr());
  KILN_RETURN_IF_ERROR(ExpectKeyword("in"));
  Var var(name.text, value.dtype());
  tir_scopes_.emplace_back();
  absl::Status defined = DefineTirVar(name, var);
  absl::StatusOr<PrimExpr> body = defined.ok() ? ParsePrimExpr() : absl::StatusOr<PrimExpr>(defined);
  tir_scopes_.pop_back();
  if (!body.ok()) return body.status();
  return Let(var, value, *body);
}

absl::StatusOr<PrimExpr> TirParser::Binary(const Token& op, ExprKind kind, PrimExpr a, PrimExpr b) {
  if (++expression_operators_ > kMaxExpressionOperators) {
    return Error(op, absl::StrCat("more than ", kMaxExpressionOperators,
                                  " operators in one expression; split it into several statements or bindings"));
  }
  if (a.dtype() != b.dtype()) {
    return Error(op, absl::StrCat("mismatched operand types ", a.dtype().ToString(), " and ",
                                  b.dtype().ToString(), " for '", KindName(kind), "'"));
  }
  if (IsLogical(kind) && !a.dtype().is_bool()) {
    return Error(op, absl::StrCat("'", KindName(kind), "' needs bool operands, found ",
                                  a.dtype().ToString()));
  }
  if (IsBitwise(kind) && !a.dtype().is_integer()) {
    return Error(op, absl::StrCat("'", KindName(kind), "' needs integer operands, found ",
                                  a.dtype().ToString()));
  }
  // An integer division by the literal 0 is undefined: a kernel compiled it to whatever LLVM
  // folded it to (0), silently; only divisors read from data are checked at run time.
  if ((kind == ExprKind::kDiv || kind == ExprKind::kFloorDiv || kind == ExprKind::kFloorMod) &&
      a.dtype().is_integer() && b.as_int() == int64_t{0}) {
    return Error(op, absl::StrCat("integer division by the constant 0 in '", KindName(kind), "'"));
  }
  return MakeBinary(kind, std::move(a), std::move(b));
}

absl::StatusOr<PrimExpr> TirParser::ParseLevel(
    std::initializer_list<std::pair<std::string_view, ExprKind>> ops, absl::StatusOr<PrimExpr> (TirParser::*next)()) {
  KILN_ASSIGN_OR_RETURN(PrimExpr lhs, (this->*next)());
  while (true) {
    const std::pair<std::string_view, ExprKind>* found = nullptr;
    for (const auto& op : ops) {
      if (IsPunct(op.first)) found = &op;
    }
    if (found == nullptr) return lhs;
    Token op = Next();
    KILN_ASSIGN_OR_RETURN(PrimExpr rhs, (this->*next)());
    KILN_ASSIGN_OR_RETURN(lhs, Binary(op, found->second, lhs, rhs));
  }
}

absl::StatusOr<PrimExpr> TirParser::ParseOr() { return ParseLevel({{"||", ExprKind::kOr}}, &TirParser::ParseAnd); }
absl::StatusOr<PrimExpr> TirParser::ParseAnd() { return ParseLevel({{"&&", ExprKind::kAnd}}, &TirParser::ParseBitOr); }
absl::StatusOr<PrimExpr> TirParser::ParseBitOr() {
  return ParseLevel({{"|", ExprKind::kBitOr}}, &TirParser::ParseBitXor);
}
absl::StatusOr<PrimExpr> TirParser::ParseBitXor() {
  return ParseLevel({{"^", ExprKind::kBitXor}}, &TirParser::ParseBitAnd);
}
absl::StatusOr<PrimExpr> TirParser::ParseBitAnd() {
  return ParseLevel({{"&", ExprKind::kBitAnd}}, &TirParser::ParseCmp);
}

absl::StatusOr<PrimExpr> TirParser::ParseCmp() {
  KILN_ASSIGN_OR_RETURN(PrimExpr lhs, ParseShift());
  static constexpr std::pair<std::string_view, ExprKind> kOps[] = {
      {"==", ExprKind::kEQ}, {"!=", ExprKind::kNE}, {"<", ExprKind::kLT},
      {"<=", ExprKind::kLE}, {">", ExprKind::kGT},  {">=", ExprKind::kGE}};
  for (const auto& [text, kind] : kOps) {
    if (!IsPunct(text)) continue;
    Token op = Next();
    KILN_ASSIGN_OR_RETURN(PrimExpr rhs, ParseShift());
    for (const auto& [other, unused] : kOps) {
      if (IsPunct(other)) return Error(Peek(), "comparisons do not chain: parenthesize one side");
    }
    return Binary(op, kind, lhs, rhs);
  }
  return lhs;
}

absl::StatusOr<PrimExpr> TirParser::ParseShift() {
  return ParseLevel({{"<<", ExprKind::kShl}, {">>", ExprKind::kShr}}, &TirParser::ParseAdd);
}
absl::StatusOr<PrimExpr> TirParser::ParseAdd() {
  return ParseLevel({{"+", ExprKind::kAdd}, {"-", ExprKind::kSub}}, &TirParser::ParseMul);
}
absl::StatusOr<PrimExpr> TirParser::ParseMul() {
  return ParseLevel({{"*", ExprKind::kMul}, {"/", ExprKind::kDiv}}, &TirParser::ParseUnary);
}

absl::StatusOr<PrimExpr> TirParser::ParseUnary() {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  if (IsPunct("!")) {
    Token op = Next();
    KILN_ASSIGN_OR_RETURN(PrimExpr a, ParseUnary());
    if (!a.dtype().is_bool()) return Error(op, absl::StrCat("'!' needs a bool operand, found ", a.dtype().ToString()));
    return Not(a);
  }
  if (IsPunct("~")) {
    Token op = Next();
    KILN_ASSIGN_OR_RETURN(PrimExpr a, ParseUnary());
    if (!a.dtype().is_integer()) {
      return Error(op, absl::StrCat("'~' needs an integer operand, found ", a.dtype().ToString()));
    }
    return BitNot(a);
  }
  if (IsPunct("-")) {
    Token minus = Next();
    if (Peek().kind == TokenKind::kInt) {
      --pos_;
      KILN_ASSIGN_OR_RETURN(int64_t value, ParseInt("an integer", true));
      return IntImm(DataType::Int64(), value);
    }
    if (Peek().kind == TokenKind::kFloat) {
      KILN_ASSIGN_OR_RETURN(double value, FloatLiteral(Next(), DataType::Float32()));
      return FloatImm(DataType::Float32(), -value);
    }
    return Expected("a number after '-' (negate a variable as 0 - x)");
  }
  return ParseAtom();
}

absl::StatusOr<std::vector<PrimExpr>> TirParser::ParsePrimList(std::string_view close) {
  std::vector<PrimExpr> items;
  if (AcceptPunct(close)) return items;
  while (true) {
    KILN_ASSIGN_OR_RETURN(PrimExpr e, ParsePrimExpr());
    items.push_back(std::move(e));
    if (AcceptPunct(close)) return items;
    if (!AcceptPunct(",")) return Expected(absl::StrCat("',' or '", absl::string_view(close.data(), close.size()), "'"));
  }
}

absl::StatusOr<std::vector<PrimExpr>> TirParser::ParseDims(bool shape) {
  KILN_RETURN_IF_ERROR(ExpectPunct("("));
  std::vector<PrimExpr> dims;
  if (AcceptPunct(")")) return dims;
  while (true) {
    const Token at = Peek();
    KILN_ASSIGN_OR_RETURN(PrimExpr e, ParsePrimExpr());
    // Tensor((true, 4), ...) was accepted as a dimension 1 and Tensor((1.5, 4), ...) failed
    // only in kiln compile ("symbolic expression 1.5 has no VM lowering").
    if (!e.dtype().is_integer() || !e.dtype().is_scalar()) {
      return Error(at, absl::StrCat("a ", shape ? "dimension" : "stride", " is an integer expression, found ",
                                    e.dtype().ToString(), " '", ToString(e), "'"));
    }
    if (shape && e.as_int() && *e.as_int() < 0) {
      return Error(at, absl::StrCat("negative dimension ", *e.as_int(), " in a shape"));
    }
    dims.push_back(std::move(e));
    if (AcceptPunct(")")) return dims;
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    if (AcceptPunct(")")) return dims;
  }
}

absl::StatusOr<PrimExpr> TirParser::ParseTypedLiteral(const Token& name, DataType dtype) {
  // After `dtype(`.
  bool negative = false;
  const Token& start = Peek();
  if (IsPunct("-")) {
    Next();
    negative = true;
  }
  if (dtype.is_floating()) {
    double value = 0;
    if (Peek().kind == TokenKind::kInt || Peek().kind == TokenKind::kFloat) {
      if (Peek().text.size() > 1 && (Peek().text[1] == 'x' || Peek().text[1] == 'X')) {
        return Expected("a decimal number");
      }
      // A float32 literal is rounded once, straight from decimal, so that printing it with
      // 9 digits and parsing again gives the same value.
      KILN_ASSIGN_OR_RETURN(value, FloatLiteral(Next(), dtype));
    } else if (IsKeyword("inf")) {
      Next();
      value = std::numeric_limits<double>::infinity();
    } else if (IsKeyword("nan") && !negative) {
      Next();
      value = std::numeric_limits<double>::quiet_NaN();
    } else {
      return Expected(absl::StrCat("a ", dtype.ToString(), " literal"));
    }
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return FloatImm(dtype, negative ? -value : value);
  }
  if (dtype.is_integer() || dtype.is_bool()) {
    if (dtype.is_bool() && !negative && (IsKeyword("true") || IsKeyword("false"))) {
      bool v = Next().text == "true";
      KILN_RETURN_IF_ERROR(ExpectPunct(")"));
      return IntImm(dtype, v ? 1 : 0);
    }
    if (negative) --pos_;
    KILN_ASSIGN_OR_RETURN(int64_t value, ParseInt(absl::StrCat("a ", dtype.ToString(), " literal"), true));
    int bits = dtype.is_bool() ? 1 : dtype.bits();
    if (bits < 64) {
      int64_t lo = dtype.is_int() ? -(int64_t{1} << (bits - 1)) : 0;
      int64_t hi = dtype.is_int() ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
      if (value < lo || value > hi) {
        return Error(start, absl::StrCat("literal ", value, " is out of range for ", dtype.ToString()));
      }
    }
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return IntImm(dtype, value);
  }
  return Error(name, absl::StrCat("there are no literals of type ", dtype.ToString()));
}

absl::StatusOr<PrimExpr> TirParser::ParseCallForm(const Token& name) {
  // After `name(`.
  const std::string& f = name.text;
  if (IsBinaryFunction(f)) {
    KILN_ASSIGN_OR_RETURN(PrimExpr a, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    KILN_ASSIGN_OR_RETURN(PrimExpr b, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    ExprKind kind = f == "floordiv" ? ExprKind::kFloorDiv
                    : f == "floormod" ? ExprKind::kFloorMod
                    : f == "min"      ? ExprKind::kMin
                                      : ExprKind::kMax;
    return Binary(name, kind, a, b);
  }
  if (f == "select") {
    KILN_ASSIGN_OR_RETURN(PrimExpr c, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    KILN_ASSIGN_OR_RETURN(PrimExpr t, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    KILN_ASSIGN_OR_RETURN(PrimExpr e, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    if (!c.dtype().is_bool()) return Error(name, "select condition must be bool, found " + c.dtype().ToString());
    if (t.dtype() != e.dtype()) {
      return Error(name, absl::StrCat("select branches differ in type: ", t.dtype().ToString(), " and ",
                                      e.dtype().ToString()));
    }
    return Select(c, t, e);
  }
  if (f == "cast") {
    KILN_ASSIGN_OR_RETURN(DataType dtype, ParseDataType());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    KILN_ASSIGN_OR_RETURN(PrimExpr v, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    if (dtype.lanes() != v.dtype().lanes()) return Error(name, "cast may not change the number of lanes");
    return Cast(dtype, v);
  }
  if (f == "reinterpret") {
    KILN_ASSIGN_OR_RETURN(DataType dtype, ParseDataType());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    KILN_ASSIGN_OR_RETURN(PrimExpr v, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    std::string error = ReinterpretError(v.dtype(), dtype);
    if (!error.empty()) return Error(name, error);
    return Reinterpret(dtype, v);
  }
  if (f == "ramp" || f == "broadcast") {
    KILN_ASSIGN_OR_RETURN(PrimExpr base, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    PrimExpr stride;
    if (f == "ramp") {
      KILN_ASSIGN_OR_RETURN(stride, ParsePrimExpr());
      KILN_RETURN_IF_ERROR(ExpectPunct(","));
    }
    const Token& lanes_token = Peek();
    KILN_ASSIGN_OR_RETURN(int64_t lanes, ParseInt("a lane count", false));
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    if (lanes < 2 || lanes > 65535) return Error(lanes_token, "lane count must be in [2, 65535]");
    if (!base.dtype().is_scalar()) return Error(name, absl::StrCat(f, " needs a scalar operand"));
    if (f == "broadcast") return Broadcast(base, static_cast<int>(lanes));
    if (stride.dtype() != base.dtype()) {
      return Error(name, absl::StrCat("ramp base and stride differ in type: ", base.dtype().ToString(), " and ",
                                      stride.dtype().ToString()));
    }
    return Ramp(base, stride, static_cast<int>(lanes));
  }
  if (IsMathIntrinsic(f)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> args, ParsePrimList(")"));
    size_t arity = MathIntrinsicArity(f);
    if (args.size() != arity) {
      return Error(name, absl::StrCat("'", f, "' takes ", arity, " argument", arity == 1 ? "" : "s", ", found ",
                                      args.size()));
    }
    for (const PrimExpr& a : args) {
      if (a.dtype() != args[0].dtype()) return Error(name, absl::StrCat("arguments of '", f, "' differ in type"));
    }
    return Call(f, std::move(args));
  }
  if (FindIntrinsic(f) != nullptr) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> args, ParsePrimList(")"));
    if (absl::Status fits = CheckIntrinsicCall(f, args); !fits.ok()) return Error(name, std::string(fits.message()));
    return Call(f, std::move(args));
  }
  auto dtype = DataType::Parse(f);
  if (dtype.ok()) return ParseTypedLiteral(name, *dtype);
  if (const std::string long_name = DataType::LongName(f); !long_name.empty()) {
    return Error(name, absl::StrCat("unknown function '", f, "' (a typed literal is written ", long_name, "(...))"));
  }
  return Error(name, absl::StrCat("unknown function '", f,
                                  "' (expected floordiv, floormod, min, max, select, cast, reinterpret, ramp, "
                                  "broadcast, a math intrinsic or a typed literal like int32(3))"));
}

absl::Status TirParser::CheckConstantIndices(const Token& name, const Buffer& buffer,
                                             const std::vector<PrimExpr>& indices) const {
  // A constant index outside a constant dimension reads or writes another object's memory
  // once compiled: nothing checks indices at run time.
  for (size_t i = 0; i < indices.size(); ++i) {
    std::optional<int64_t> index = indices[i].as_int();
    if (!index) continue;
    std::optional<int64_t> extent = buffer->shape[i].as_int();
    if (*index < 0 || (extent && *index >= *extent)) {
      return Error(name, absl::StrCat("index ", i, " of buffer '", name.text, "' is ", *index, ", outside [0, ",
                                      extent ? absl::StrCat(*extent) : ToString(buffer->shape[i]), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PrimExpr> TirParser::ParseAtom() {
  const Token& t = Peek();
  if (t.kind == TokenKind::kInt) {
    KILN_ASSIGN_OR_RETURN(int64_t value, ParseInt("an integer", false));
    return IntImm(DataType::Int64(), value);
  }
  if (t.kind == TokenKind::kFloat) {
    KILN_ASSIGN_OR_RETURN(double value, FloatLiteral(Next(), DataType::Float32()));
    return FloatImm(DataType::Float32(), value);
  }
  if (AcceptPunct("(")) {
    KILN_ASSIGN_OR_RETURN(PrimExpr e, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return e;
  }
  if (t.kind != TokenKind::kIdent) return Expected("an expression");
  Token name = Next();
  if (name.text == "true" || name.text == "false") return IntImm(DataType::Bool(), name.text == "true");
  if (AcceptPunct("(")) return ParseCallForm(name);
  if (AcceptPunct("[")) {
    const Buffer* buffer = LookupBuffer(name.text);
    if (buffer == nullptr) return Error(name, absl::StrCat("undefined buffer '", name.text, "'"));
    Buffer b = *buffer;
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> indices, ParsePrimList("]"));
    if (static_cast<int>(indices.size()) != b.ndim()) {
      return Error(name, absl::StrCat("buffer '", name.text, "' has ", b.ndim(), " dimension", b.ndim() == 1 ? "" : "s",
                                      ", found ", indices.size(), " index", indices.size() == 1 ? "" : "es"));
    }
    for (size_t i = 0; i + 1 < indices.size(); ++i) {
      if (!indices[i].dtype().is_scalar()) return Error(name, "only the last index may be a vector");
    }
    KILN_RETURN_IF_ERROR(CheckConstantIndices(name, b, indices));
    PrimExpr load = b.Load(std::move(indices));
    Record(load.get(), name);  // where verify_index_bounds points an index out of range
    return load;
  }
  if (const Var* var = LookupTirVar(name.text)) return *var;
  if (defining_) return DefineSymVar(name, DataType::Int64(), /*shape_var=*/true);
  return Error(name, absl::StrCat("undefined variable '", name.text, "'"));
}

// ---------------------------------------------------------------- TIR statements

absl::StatusOr<Buffer> TirParser::ParseBufferType(const std::string& name) {
  KILN_RETURN_IF_ERROR(ExpectKeyword("Buffer"));
  KILN_RETURN_IF_ERROR(ExpectPunct("("));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ParseDims());
  KILN_RETURN_IF_ERROR(ExpectPunct(","));
  KILN_ASSIGN_OR_RETURN(DataType dtype, ParseDataType());
  std::vector<PrimExpr> strides;
  std::string scope = "global";
  bool seen_strides = false;
  bool seen_scope = false;
  while (AcceptPunct(",")) {
    if (IsKeyword("strides") && !seen_strides && !seen_scope) {
      const Token& at = Next();
      seen_strides = true;
      KILN_RETURN_IF_ERROR(ExpectPunct("="));
      KILN_ASSIGN_OR_RETURN(strides, ParseDims(/*shape=*/false));
      if (strides.size() != shape.size()) {
        return Error(at, absl::StrCat("buffer '", name, "' has ", shape.size(), " dimensions but ", strides.size(),
                                      " strides"));
      }
    } else if (IsKeyword("scope") && !seen_scope) {
      Next();
      seen_scope = true;
      KILN_RETURN_IF_ERROR(ExpectPunct("="));
      if (Peek().kind != TokenKind::kString) return Expected("a scope string (\"global\", \"shared\", \"local\")");
      scope = Next().text;
    } else {
      return Expected(seen_scope ? "')'" : "'strides=' or 'scope='");
    }
  }
  KILN_RETURN_IF_ERROR(ExpectPunct(")"));
  return Buffer(name, dtype, std::move(shape), std::move(strides), scope);
}

absl::StatusOr<std::vector<Stmt>> TirParser::ParseStmtsUntilClose() {
  std::vector<Stmt> stmts;
  while (!AcceptPunct("}")) {
    KILN_ASSIGN_OR_RETURN(Stmt s, ParseStmt());
    stmts.push_back(std::move(s));
  }
  return stmts;
}

absl::StatusOr<Stmt> TirParser::ParseStmtBlock() {
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  tir_scopes_.emplace_back();
  buffer_scopes_.emplace_back();
  auto stmts = ParseStmtsUntilClose();
  tir_scopes_.pop_back();
  buffer_scopes_.pop_back();
  if (!stmts.ok()) return stmts.status();
  return SeqStmt(std::move(*stmts));
}

// `allocate NAME: TYPE { ... }` or `decl_buffer NAME: TYPE = DATA { ... }`: the buffer is
// defined for the body only.
absl::StatusOr<Stmt> TirParser::ParseBufferScope() {
  const bool declared = Next().text == "decl_buffer";
  if (Peek().kind != TokenKind::kIdent) return Expected("a buffer name");
  Token name = Next();
  KILN_RETURN_IF_ERROR(ExpectPunct(":"));
  KILN_ASSIGN_OR_RETURN(Buffer buffer, ParseBufferType(name.text));
  PrimExpr data;
  if (declared) {
    KILN_RETURN_IF_ERROR(ExpectPunct("="));
    Token data_at = Peek();
    KILN_ASSIGN_OR_RETURN(data, ParsePrimExpr());
    if (data.dtype() != DataType::Handle()) {
      return Error(data_at, "a decl_buffer's data must be a handle, found " + data.dtype().ToString());
    }
  }
  buffer_scopes_.emplace_back();
  absl::Status defined = DefineBuffer(name, buffer);
  absl::StatusOr<Stmt> body = defined.ok() ? ParseStmtBlock() : absl::StatusOr<Stmt>(defined);
  buffer_scopes_.pop_back();
  if (!body.ok()) return body.status();
  return declared ? DeclBuffer(buffer, data, *body) : Allocate(buffer, *body);
}

absl::StatusOr<Stmt> TirParser::ParseStmt() {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  const Token& t = Peek();
  if (t.kind == TokenKind::kIdent) {
    if (t.text == "for") return ParseFor();
    if (t.text == "block" && Peek(1).kind == TokenKind::kString) return ParseBlock();
    if (t.text == "if") {
      Token at = Next();
      KILN_ASSIGN_OR_RETURN(PrimExpr cond, ParsePrimExpr());
      if (!cond.dtype().is_bool()) return Error(at, "if condition must be bool, found " + cond.dtype().ToString());
      KILN_ASSIGN_OR_RETURN(Stmt then_case, ParseStmtBlock());
      Stmt else_case;
      if (AcceptKeyword("else")) {
        KILN_ASSIGN_OR_RETURN(else_case, ParseStmtBlock());
      }
      return IfThenElse(cond, then_case, else_case);
    }
    if (t.text == "allocate" || t.text == "decl_buffer") return ParseBufferScope();
    if (t.text == "let") {
      Next();
      if (Peek().kind != TokenKind::kIdent) return Expected("a variable name after 'let'");
      Token name = Next();
      KILN_RETURN_IF_ERROR(ExpectPunct("="));
      KILN_ASSIGN_OR_RETURN(PrimExpr value, ParsePrimExpr());
      Var var(name.text, value.dtype());
      tir_scopes_.emplace_back();
      absl::Status defined = DefineTirVar(name, var);
      absl::StatusOr<Stmt> body = defined.ok() ? ParseStmtBlock() : absl::StatusOr<Stmt>(defined);
      tir_scopes_.pop_back();
      if (!body.ok()) return body.status();
      return LetStmt(var, value, *body);
    }
    if (t.text == "evaluate") {
      Next();
      KILN_ASSIGN_OR_RETURN(PrimExpr value, ParsePrimExpr());
      return Evaluate(value);
    }
    if (t.text == "assert") {
      Token at = Next();
      KILN_ASSIGN_OR_RETURN(PrimExpr cond, ParsePrimExpr());
      if (cond.dtype() != DataType::Bool()) {
        return Error(at, "assert condition must be a scalar bool, found " + cond.dtype().ToString());
      }
      KILN_RETURN_IF_ERROR(ExpectPunct(","));
      if (Peek().kind != TokenKind::kString) return Expected("the assert's message (a string)");
      Token message = Next();
      int placeholders = CountAssertPlaceholders(message.text);
      if (placeholders < 0) return Error(message, "unmatched brace in the assert's message (write {{ or }} for a brace)");
      std::vector<PrimExpr> values;
      while (AcceptPunct(",")) {
        Token value_at = Peek();
        KILN_ASSIGN_OR_RETURN(PrimExpr value, ParsePrimExpr());
        if (!value.dtype().is_integer() || !value.dtype().is_scalar()) {
          return Error(value_at, "an assert's values must be scalar integers, found " + value.dtype().ToString());
        }
        values.push_back(value);
      }
      if (static_cast<int>(values.size()) != placeholders) {
        return Error(message, absl::StrCat("the assert's message has ", placeholders, " {} placeholder",
                                           placeholders == 1 ? "" : "s", " but ", values.size(), " value",
                                           values.size() == 1 ? "" : "s", " follow"));
      }
      return Assert(cond, message.text, std::move(values));
    }
    if (Peek(1).kind == TokenKind::kPunct && Peek(1).text == "[") return ParseBufferStore();
  }
  return Expected("a statement (for, block, if, allocate, decl_buffer, let, evaluate, assert or a buffer store)");
}

absl::StatusOr<Stmt> TirParser::ParseBufferStore() {
  Token name = Next();
  const Buffer* found = LookupBuffer(name.text);
  if (found == nullptr) return Error(name, absl::StrCat("undefined buffer '", name.text, "'"));
  Buffer buffer = *found;
  KILN_RETURN_IF_ERROR(ExpectPunct("["));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> indices, ParsePrimList("]"));
  if (static_cast<int>(indices.size()) != buffer.ndim()) {
    return Error(name, absl::StrCat("buffer '", name.text, "' has ", buffer.ndim(), " dimension",
                                    buffer.ndim() == 1 ? "" : "s", ", found ", indices.size(), " index",
                                    indices.size() == 1 ? "" : "es"));
  }
  KILN_RETURN_IF_ERROR(CheckConstantIndices(name, buffer, indices));
  Token eq = Peek();
  KILN_RETURN_IF_ERROR(ExpectPunct("="));
  KILN_ASSIGN_OR_RETURN(PrimExpr value, ParsePrimExpr());
  if (value.dtype().element_of() != buffer->dtype) {
    return Error(eq, absl::StrCat("store of ", value.dtype().ToString(), " to buffer '", name.text, "' of ",
                                  buffer->dtype.ToString()));
  }
  Stmt store = BufferStore(buffer, value, std::move(indices));
  Record(store.get(), name);  // where verify_index_bounds points an index out of range
  return store;
}

absl::StatusOr<Stmt> TirParser::ParseFor() {
  Next();  // for
  if (Peek().kind != TokenKind::kIdent) return Expected("a loop variable name");
  Token name = Next();
  KILN_RETURN_IF_ERROR(ExpectKeyword("in"));
  static constexpr ForKind kKinds[] = {ForKind::kSerial, ForKind::kParallel,
                                            ForKind::kVectorized, ForKind::kUnrolled,
                                            ForKind::kThreadBinding};
  std::optional<ForKind> kind;
  for (ForKind k : kKinds) {
    if (IsKeyword(ForKindName(k))) kind = k;
  }
  if (!kind) return Expected("a loop kind (serial, parallel, vectorized, unroll, thread_binding)");
  Next();
  KILN_RETURN_IF_ERROR(ExpectPunct("("));
  KILN_ASSIGN_OR_RETURN(PrimExpr min, ParsePrimExpr());
  KILN_RETURN_IF_ERROR(ExpectPunct(","));
  Token extent_at = Peek();
  KILN_ASSIGN_OR_RETURN(PrimExpr extent, ParsePrimExpr());
  std::string tag;
  if (*kind == ForKind::kThreadBinding) {
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    if (Peek().kind != TokenKind::kString || Peek().text.empty()) return Expected("a thread tag string like \"threadIdx.x\"");
    tag = Next().text;
  }
  KILN_RETURN_IF_ERROR(ExpectPunct(")"));
  if (min.dtype() != extent.dtype() || !min.dtype().is_scalar() || !(min.dtype().is_integer())) {
    return Error(extent_at, absl::StrCat("loop bounds must be integers of one type, found ", min.dtype().ToString(),
                                         " and ", extent.dtype().ToString()));
  }
  Var var(name.text, min.dtype());
  tir_scopes_.emplace_back();
  loop_vars_.push_back(var.get());
  absl::Status defined = DefineTirVar(name, var);
  absl::StatusOr<Stmt> body = defined.ok() ? ParseStmtBlock() : absl::StatusOr<Stmt>(defined);
  loop_vars_.pop_back();
  tir_scopes_.pop_back();
  if (!body.ok()) return body.status();
  return For(var, min, extent, *kind, *body, tag);
}

absl::StatusOr<Stmt> TirParser::ParseBlock() {
  Next();  // block
  std::string name = Next().text;
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  tir_scopes_.emplace_back();
  buffer_scopes_.emplace_back();
  auto result = [&]() -> absl::StatusOr<Stmt> {
    std::vector<IterVar> iter_vars;
    std::vector<std::pair<Token, Var>> to_define;
    // Iteration variables: `vi = spatial(extent, value)`; values see only the enclosing loops.
    while (Peek().kind == TokenKind::kIdent && (IsPunct("=", 1) || IsPunct(":", 1))) {
      Token var_name = Next();
      std::optional<DataType> dtype;
      if (AcceptPunct(":")) {
        KILN_ASSIGN_OR_RETURN(dtype, ParseDataType());
      }
      KILN_RETURN_IF_ERROR(ExpectPunct("="));
      IterVar iv;
      if (AcceptKeyword("spatial")) {
        iv.type = IterType::kSpatial;
      } else if (AcceptKeyword("reduce")) {
        iv.type = IterType::kReduction;
      } else {
        return Expected("'spatial' or 'reduce'");
      }
      KILN_RETURN_IF_ERROR(ExpectPunct("("));
      const Token extent_at = Peek();
      KILN_ASSIGN_OR_RETURN(iv.extent, ParsePrimExpr());
      // An iteration domain is the same for every iteration of the loops around the block
      // (`vi = spatial(k, i)` inside `for k` passed kiln check and broke the scheduler).
      VarUseCollector uses;
      uses.VisitExpr(iv.extent);
      for (const Var& v : uses.vars()) {
        if (std::find(loop_vars_.begin(), loop_vars_.end(), v.get()) == loop_vars_.end()) continue;
        return Error(extent_at, absl::StrCat("the extent of iteration variable '", var_name.text, "' uses loop variable '",
                                             v.name(), "': an iteration domain cannot change with the loops around "
                                             "the block (use the function's sizes)"));
      }
      KILN_RETURN_IF_ERROR(ExpectPunct(","));
      KILN_ASSIGN_OR_RETURN(iv.value, ParsePrimExpr());
      KILN_RETURN_IF_ERROR(ExpectPunct(")"));
      iv.var = Var(var_name.text, dtype.value_or(DataType::Int64()));
      to_define.emplace_back(var_name, iv.var);
      iter_vars.push_back(std::move(iv));
    }
    for (const auto& [at, var] : to_define) KILN_RETURN_IF_ERROR(DefineTirVar(at, var));
    PrimExpr predicate;
    if (IsKeyword("where")) {
      Token at = Next();
      KILN_ASSIGN_OR_RETURN(predicate, ParsePrimExpr());
      if (!predicate.dtype().is_bool()) return Error(at, "block predicate must be bool, found " + predicate.dtype().ToString());
    }
    std::vector<Buffer> allocs;
    while (IsKeyword("alloc")) {
      Next();
      if (Peek().kind != TokenKind::kIdent) return Expected("a buffer name");
      Token buffer_name = Next();
      KILN_RETURN_IF_ERROR(ExpectPunct(":"));
      KILN_ASSIGN_OR_RETURN(Buffer buffer, ParseBufferType(buffer_name.text));
      KILN_RETURN_IF_ERROR(DefineBuffer(buffer_name, buffer));
      allocs.push_back(std::move(buffer));
    }
    Stmt init;
    if (IsKeyword("init") && IsPunct("{", 1)) {
      Next();
      KILN_ASSIGN_OR_RETURN(init, ParseStmtBlock());
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Stmt> body, ParseStmtsUntilClose());
    return Block(name, std::move(iter_vars), SeqStmt(std::move(body)), init, predicate, std::move(allocs));
  }();
  tir_scopes_.pop_back();
  buffer_scopes_.pop_back();
  return result;
}

// ---------------------------------------------------------------- PrimFunc

absl::Status TirParser::CheckParamVarsBound(const std::vector<PrimFuncParam>& params) const {
  // A caller's tensors give the values of the bare dimensions and strides of the buffer
  // parameters (`n` in `Buffer((n, 4), ...)`); a variable named only inside an expression
  // (`floordiv(b, 2)`) has no value unless it is also a scalar parameter or a bare dimension.
  std::unordered_set<const VarNode*> bound;
  for (const PrimFuncParam& param : params) {
    if (!param.is_buffer()) {
      bound.insert(param.var.get());
      continue;
    }
    for (const auto* dims : {&param.buffer->shape, &param.buffer->strides}) {
      for (const PrimExpr& d : *dims) {
        if (const auto* v = d.as<VarNode>()) bound.insert(v);
      }
    }
  }
  const Var* first_unbound = nullptr;
  SourceLocation first_at;
  for (const auto& [name, var] : tir_scopes_.front()) {
    if (bound.count(var.get())) continue;
    auto at = locations_.find(var.get());
    if (at == locations_.end()) continue;
    bool earlier = first_unbound == nullptr || at->second.line < first_at.line ||
                   (at->second.line == first_at.line && at->second.column < first_at.column);
    if (earlier) {
      first_unbound = &var;
      first_at = at->second;
    }
  }
  if (first_unbound == nullptr) return absl::OkStatus();
  Token at{TokenKind::kIdent, first_unbound->name(), first_at.line, first_at.column};
  return Error(at, absl::StrCat("symbolic variable '", first_unbound->name(),
                                "' appears only inside an expression of the parameters' shapes, so no argument "
                                "gives its value: make it a whole dimension of a buffer parameter (Buffer((",
                                first_unbound->name(), ", ...), ...)) or a scalar parameter (",
                                first_unbound->name(), ": int64)"));
}

absl::StatusOr<PrimFunc> TirParser::ParsePrimFunc(const Token& name_token) {
  tir_scopes_.assign(1, {});
  buffer_scopes_.assign(1, {});
  loop_vars_.clear();
  pending_bounds_.clear();
  size_t where_at = FindWhereClause();
  size_t after_where = 0;
  if (where_at != 0) {
    size_t saved = pos_;
    pos_ = where_at;
    KILN_RETURN_IF_ERROR(ParseBounds());
    after_where = pos_;
    pos_ = saved;
  }
  KILN_RETURN_IF_ERROR(ExpectPunct("("));
  std::vector<PrimFuncParam> params;
  if (!AcceptPunct(")")) {
    while (true) {
      if (Peek().kind != TokenKind::kIdent) return Expected("a parameter name");
      Token name = Next();
      KILN_RETURN_IF_ERROR(ExpectPunct(":"));
      PrimFuncParam param;
      if (IsKeyword("Buffer")) {
        defining_ = true;
        auto buffer = ParseBufferType(name.text);
        defining_ = false;
        if (!buffer.ok()) return buffer.status();
        KILN_RETURN_IF_ERROR(DefineBuffer(name, *buffer));
        param.buffer = *buffer;
      } else {
        KILN_ASSIGN_OR_RETURN(DataType dtype, ParseDataType());
        if (const Var* existing = LookupTirVar(name.text)) {
          // The same variable as a symbolic dimension of an earlier buffer parameter.
          if (existing->dtype() != dtype) {
            return Error(name, absl::StrCat("'", name.text, "' is ", existing->dtype().ToString(), ", not ",
                                            dtype.ToString()));
          }
          param.var = *existing;
        } else {
          param.var = DefineSymVar(name, dtype, /*shape_var=*/false);
        }
      }
      params.push_back(std::move(param));
      if (AcceptPunct(")")) break;
      KILN_RETURN_IF_ERROR(ExpectPunct(","));
      if (AcceptPunct(")")) break;  // a trailing comma, as in shapes
    }
  }
  KILN_RETURN_IF_ERROR(CheckParamVarsBound(params));
  if (IsKeyword("where")) {
    if (after_where == 0) return Expected("'{'");
    pos_ = after_where;
  }
  KILN_RETURN_IF_ERROR(CheckBoundsUsed());
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  std::map<std::string, std::string> attrs;
  while (IsKeyword("attr")) {
    Next();
    Token key = Peek();
    if (key.kind != TokenKind::kIdent && key.kind != TokenKind::kString) return Expected("an attribute name");
    Next();
    if (attrs.count(key.text)) return Error(key, absl::StrCat("duplicate attribute '", key.text, "'"));
    KILN_RETURN_IF_ERROR(ExpectPunct("="));
    if (Peek().kind != TokenKind::kString) return Expected("a string (PrimFunc attributes are strings)");
    attrs[key.text] = Next().text;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Stmt> body, ParseStmtsUntilClose());
  PrimFunc func(std::move(params), SeqStmt(std::move(body)), std::move(attrs));
  Record(func.get(), name_token);
  return func;
}

}  // namespace kiln::tir::text_internal

namespace kiln::tir {

absl::StatusOr<ParsedPrimFunc> text_internal::TirParser::ParseLonePrimFunc() {
  KILN_RETURN_IF_ERROR(ExpectKeyword("prim_func"));
  if (Peek().kind != TokenKind::kGlobal) return Expected("a function name like @main");
  Token name = Next();
  KILN_ASSIGN_OR_RETURN(PrimFunc func, ParsePrimFunc(name));
  if (Peek().kind != TokenKind::kEnd) return Expected("end of input");
  return ParsedPrimFunc{name.text, std::move(func), std::move(locations_)};
}

absl::StatusOr<PrimExpr> text_internal::TirParser::ParseLonePrimExpr(const std::vector<Var>& vars) {
  tir_scopes_.emplace_back();
  for (const Var& v : vars) {
    auto [it, fresh] = tir_scopes_.back().emplace(v.name(), v);
    if (!fresh && !it->second.same_as(v)) {
      return Error(Peek(), absl::StrCat("two variables are named '", v.name(), "'"));
    }
  }
  KILN_ASSIGN_OR_RETURN(PrimExpr expr, ParsePrimExpr());
  if (Peek().kind != TokenKind::kEnd) return Expected("end of input");
  return expr;
}

absl::StatusOr<PrimExpr> ParsePrimExpr(std::string_view text, const std::vector<Var>& vars, std::string file_name) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(text, file_name));
  text_internal::TirParser parser(std::move(tokens), std::move(file_name));
  return parser.ParseLonePrimExpr(vars);
}

absl::StatusOr<ParsedPrimFunc> ParsePrimFunc(std::string_view text, std::string file_name) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(text, file_name));
  text_internal::TirParser parser(std::move(tokens), std::move(file_name));
  return parser.ParseLonePrimFunc();
}

}  // namespace kiln::tir
