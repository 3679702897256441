// The module and Relax productions of the text parser (see text_parser.h for its promises
// and docs/ir.md for the grammar). PrimExprs and TIR are the TIR parser's
// (tir/text_parser.cc).
#include "relax/text_parser.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "relax/text_parser_impl.h"
#include "support/file_format.h"
#include "support/status_macros.h"

namespace kiln::relax {

namespace text_internal {

namespace {

bool IsHex(const std::string& text) { return text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'); }

}  // namespace

bool Parser::IsStructInfoKeyword(size_t offset) const {
  const Token& t = Peek(offset);
  if (t.kind != TokenKind::kIdent) return false;
  return t.text == "Object" || t.text == "Prim" || t.text == "Shape" || t.text == "Tensor" ||
         t.text == "Tuple" || t.text == "Func";
}

bool Parser::ValueIsMatchCast() const {
  int depth = 0;
  for (size_t i = pos_; i + 2 < tokens_.size(); ++i) {
    const Token& t = tokens_[i];
    if (t.kind == TokenKind::kEnd) return false;
    if (t.kind != TokenKind::kPunct) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    if (t.text == ")" || t.text == "]" || t.text == "}") {
      if (--depth < 0) return false;
    }
    if (t.text == "=" && depth == 0) {
      return tokens_[i + 1].kind == TokenKind::kIdent && tokens_[i + 1].text == "match_cast" &&
             tokens_[i + 2].kind == TokenKind::kPunct && tokens_[i + 2].text == "(";
    }
  }
  return false;
}

absl::Status Parser::DefineRelaxVar(const Token& at, const std::string& key, const Var& var, bool outer) {
  for (const auto& scope : relax_scopes_) {
    if (scope.count(key)) return Error(at, absl::StrCat("redefinition of variable '", key, "'"));
  }
  size_t index = relax_scopes_.size() - 1;
  if (outer && index > 0) --index;
  relax_scopes_[index][key] = var;
  Record(var.get(), at);
  return absl::OkStatus();
}

// ---------------------------------------------------------------- module

absl::StatusOr<ParsedModule> Parser::ParseModule() {
  ParsedModule result;
  if (Peek().kind == TokenKind::kGlobal || IsKeyword("import") || IsKeyword("from")) {
    // TVMScript (@I.ir_module, @R.function, import tvm) looks close enough to be tried.
    return Expected("'module' (Kiln's text format, docs/ir.md: module { func @main(...) ... }; "
                    "TVMScript is not read)");
  }
  KILN_RETURN_IF_ERROR(ExpectKeyword("module"));
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  while (!AcceptPunct("}")) {
    bool pure = true;
    if (IsKeyword("impure") && IsKeyword("func", 1)) {
      Next();
      pure = false;
    }
    bool relax = IsKeyword("func");
    if (!relax && !IsKeyword("prim_func")) return Expected("'func', 'impure func', 'prim_func' or '}'");
    Next();
    if (Peek().kind != TokenKind::kGlobal) return Expected("a function name like @main");
    Token name = Next();
    BaseFunc func;
    if (relax) {
      KILN_ASSIGN_OR_RETURN(func, ParseFunction(name, pure));
    } else {
      KILN_ASSIGN_OR_RETURN(func, ParsePrimFunc(name));
    }
    if (!result.module.Add(name.text, std::move(func)).ok()) {
      return Error(name, absl::StrCat("redefinition of function '@", name.text, "'"));
    }
  }
  if (Peek().kind != TokenKind::kEnd) return Expected("end of input");
  for (const Token& use : global_uses_) {
    if (result.module.Find(use.text) == nullptr) {
      return Error(use, absl::StrCat("undefined function '@", use.text, "'"));
    }
  }
  result.locations = std::move(locations_);
  return result;
}

// ---------------------------------------------------------------- functions

absl::Status Parser::ParseAttrLine(Attrs* attrs) {
  KILN_RETURN_IF_ERROR(ExpectKeyword("attr"));
  Token key = Peek();
  if (key.kind != TokenKind::kIdent && key.kind != TokenKind::kString) return Expected("an attribute name");
  Next();
  if (attrs->count(key.text)) return Error(key, absl::StrCat("duplicate attribute '", key.text, "'"));
  KILN_RETURN_IF_ERROR(ExpectPunct("="));
  KILN_ASSIGN_OR_RETURN(AttrValue value, ParseAttrValue());
  (*attrs)[key.text] = std::move(value);
  return absl::OkStatus();
}

absl::StatusOr<Expr> Parser::ParseFunction(const Token& name_token, bool pure) {
  relax_scopes_.assign(1, {});
  tir_scopes_.assign(1, {});
  buffer_scopes_.assign(1, {});
  pending_bounds_.clear();
  in_dataflow_ = false;
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
  std::vector<Var> params;
  if (!AcceptPunct(")")) {
    while (true) {
      if (Peek().kind != TokenKind::kIdent) return Expected("a parameter name");
      Token name = Next();
      StructInfo sinfo;
      if (AcceptPunct(":")) {
        defining_ = true;
        auto parsed = ParseStructInfo();
        defining_ = false;
        if (!parsed.ok()) return parsed.status();
        sinfo = *parsed;
      }
      Var param(name.text, sinfo);
      KILN_RETURN_IF_ERROR(DefineRelaxVar(name, name.text, param, false));
      params.push_back(std::move(param));
      if (AcceptPunct(")")) break;
      KILN_RETURN_IF_ERROR(ExpectPunct(","));
      if (AcceptPunct(")")) break;  // a trailing comma, as in shapes: (x: ..., y: ...,)
    }
  }
  StructInfo ret;
  if (AcceptPunct("->")) {
    KILN_ASSIGN_OR_RETURN(ret, ParseStructInfo());
  }
  if (IsKeyword("where")) {
    if (after_where == 0) return Expected("'{'");
    pos_ = after_where;
  }
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  Attrs attrs;
  while (IsKeyword("attr") && (Peek(1).kind == TokenKind::kIdent || Peek(1).kind == TokenKind::kString) &&
         IsPunct("=", 2)) {
    KILN_RETURN_IF_ERROR(ParseAttrLine(&attrs));
  }
  KILN_ASSIGN_OR_RETURN(Expr body, ParseSeq("return"));
  KILN_RETURN_IF_ERROR(CheckBoundsUsed());
  Expr func = Function(std::move(params), body, ret, pure, std::move(attrs));
  Record(func.get(), name_token);
  return func;
}

absl::StatusOr<Expr> Parser::ParseSeq(std::string_view terminator) {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  relax_scopes_.emplace_back();
  auto result = [&]() -> absl::StatusOr<Expr> {
    std::vector<BindingBlock> blocks;
    bool open_plain = false;
    while (!IsKeyword(terminator)) {
      bool dataflow = IsKeyword("dataflow") && IsPunct("{", 1);
      if (dataflow || (IsKeyword("block") && IsPunct("{", 1))) {
        Next();
        Next();
        BindingBlock block;
        block.dataflow = dataflow;
        if (dataflow) relax_scopes_.emplace_back();
        in_dataflow_ = dataflow;
        absl::Status status = ParseBindings(&block);
        in_dataflow_ = false;
        if (dataflow) relax_scopes_.pop_back();
        KILN_RETURN_IF_ERROR(status);
        blocks.push_back(std::move(block));
        open_plain = false;
        continue;
      }
      if (Peek().kind != TokenKind::kIdent && Peek().kind != TokenKind::kDataflow) {
        return Expected(absl::StrCat("a binding, 'dataflow {' or '", absl::string_view(terminator.data(), terminator.size()), "'"));
      }
      if (!open_plain) {
        blocks.emplace_back();
        open_plain = true;
      }
      KILN_RETURN_IF_ERROR(ParseBinding(&blocks.back()));
    }
    Next();
    KILN_ASSIGN_OR_RETURN(Expr body, ParseExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct("}"));
    return SeqExpr(std::move(blocks), body);
  }();
  relax_scopes_.pop_back();
  return result;
}

absl::Status Parser::ParseBindings(BindingBlock* block) {
  while (!AcceptPunct("}")) {
    if (Peek().kind != TokenKind::kIdent && Peek().kind != TokenKind::kDataflow) {
      return Expected("a binding or '}'");
    }
    if ((IsKeyword("return") || IsKeyword("yield")) && !IsPunct("=", 1) && !IsPunct(":", 1)) {
      return Error(Peek(), absl::StrCat("'", Peek().text, "' goes after the block's closing '}': bind the result to "
                                        "a name without '%' inside the block, then ", Peek().text, " that name"));
    }
    KILN_RETURN_IF_ERROR(ParseBinding(block));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseBinding(BindingBlock* block) {
  Token name = Next();
  bool dataflow = name.kind == TokenKind::kDataflow;
  std::string key = dataflow ? absl::StrCat("%", name.text) : name.text;
  if (dataflow && !in_dataflow_) {
    return Error(name, absl::StrCat("dataflow variable '", key, "' outside a dataflow block"));
  }
  bool match_cast = ValueIsMatchCast();
  StructInfo annotation;
  if (AcceptPunct(":")) {
    defining_ = match_cast;
    auto parsed = ParseStructInfo();
    defining_ = false;
    if (!parsed.ok()) return parsed.status();
    annotation = *parsed;
  }
  KILN_RETURN_IF_ERROR(ExpectPunct("="));
  Binding binding;
  if (match_cast) {
    Next();
    Next();
    KILN_ASSIGN_OR_RETURN(binding.value, ParseExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    defining_ = true;
    auto parsed = ParseStructInfo();
    defining_ = false;
    if (!parsed.ok()) return parsed.status();
    binding.match_cast_sinfo = *parsed;
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
  } else if (IsKeyword("if")) {
    if (in_dataflow_) return Error(Peek(), "'if' is not allowed in a dataflow block");
    KILN_ASSIGN_OR_RETURN(binding.value, ParseIf());
  } else {
    KILN_ASSIGN_OR_RETURN(binding.value, ParseExpr());
  }
  binding.var = Var(name.text, annotation, dataflow);
  KILN_RETURN_IF_ERROR(DefineRelaxVar(name, key, binding.var, in_dataflow_ && !dataflow));
  block->bindings.push_back(std::move(binding));
  return absl::OkStatus();
}

absl::StatusOr<Expr> Parser::ParseIf() {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  Next();  // if
  KILN_ASSIGN_OR_RETURN(Expr condition, ParseExpr());
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  KILN_ASSIGN_OR_RETURN(Expr then_branch, ParseSeq("yield"));
  KILN_RETURN_IF_ERROR(ExpectKeyword("else"));
  KILN_RETURN_IF_ERROR(ExpectPunct("{"));
  KILN_ASSIGN_OR_RETURN(Expr else_branch, ParseSeq("yield"));
  return If(condition, then_branch, else_branch);
}

// ---------------------------------------------------------------- expressions

absl::StatusOr<Expr> Parser::ParseExpr() {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  KILN_ASSIGN_OR_RETURN(Expr e, ParsePrimary());
  // Each call or tuple index applied to `e` nests it one level deeper (`x[0][0]...` is as
  // deep as the brackets are many), so each opens a level too: otherwise a long postfix
  // chain parses flat and the block builder recurses once per link.
  struct Postfix {
    int& depth;
    int levels = 0;
    ~Postfix() { depth -= levels; }
  } postfix{depth_};
  while (true) {
    if (IsPunct("(") || IsPunct("[")) {
      ++postfix.levels;
      ++depth_;
      if (depth_ > kMaxTextNesting) return TooDeep();
    }
    if (AcceptPunct("(")) {
      KILN_ASSIGN_OR_RETURN(e, ParseCallArgs(e));
    } else if (AcceptPunct("[")) {
      const Token& at = Peek();
      KILN_ASSIGN_OR_RETURN(int64_t index, ParseInt("a tuple index", false));
      if (index > std::numeric_limits<int>::max()) return Error(at, "tuple index too large");
      KILN_RETURN_IF_ERROR(ExpectPunct("]"));
      e = TupleGetItem(e, static_cast<int>(index));
    } else {
      return e;
    }
  }
}

absl::StatusOr<Expr> Parser::ParsePrimary() {
  const Token& t = Peek();
  switch (t.kind) {
    case TokenKind::kIdent: {
      if (t.text == "R" && IsPunct(".", 1)) return ParseRForm();
      for (auto it = relax_scopes_.rbegin(); it != relax_scopes_.rend(); ++it) {
        auto found = it->find(t.text);
        if (found != it->end()) {
          Next();
          return Expr(found->second);
        }
      }
      for (const auto& scope : tir_scopes_) {
        if (scope.count(t.text)) {
          // A new user's natural spelling of a shape value, R.reshape(x, (n, 5)), lands here.
          return Error(t, absl::StrCat("'", t.text,
                                       "' is a symbolic dimension, not a Relax value: write a shape "
                                       "as R.shape([...]) and a scalar as R.prim(...)"));
        }
      }
      if (IsPunct("(", 1)) {
        return Error(t, absl::StrCat("undefined variable '", t.text, "': an operator is called as R.", t.text,
                                     "(...), a function of the module as @", t.text, "(...)"));
      }
      return Error(t, absl::StrCat("undefined variable '", t.text, "'"));
    }
    case TokenKind::kDataflow: {
      std::string key = absl::StrCat("%", t.text);
      for (auto it = relax_scopes_.rbegin(); it != relax_scopes_.rend(); ++it) {
        auto found = it->find(key);
        if (found != it->end()) {
          Next();
          return Expr(found->second);
        }
      }
      if (!in_dataflow_) {
        return Error(t, absl::StrCat("undefined variable '", key, "': a %name is local to its dataflow block; bind "
                                     "the value the block gives out to a name without '%'"));
      }
      return Error(t, absl::StrCat("undefined variable '", key, "'"));
    }
    case TokenKind::kGlobal:
      global_uses_.push_back(t);
      return GlobalVar(Next().text);
    case TokenKind::kString:
      return StringImm(Next().text);
    default:
      break;
  }
  if (AcceptPunct("(")) {
    if (AcceptPunct(")")) return Tuple({});
    KILN_ASSIGN_OR_RETURN(Expr first, ParseExpr());
    if (AcceptPunct(")")) return first;
    KILN_RETURN_IF_ERROR(ExpectPunct(","));
    std::vector<Expr> fields{first};
    while (!AcceptPunct(")")) {
      KILN_ASSIGN_OR_RETURN(Expr f, ParseExpr());
      fields.push_back(std::move(f));
      if (AcceptPunct(")")) break;
      if (!AcceptPunct(",")) return Expected("',' or ')'");
    }
    return Tuple(std::move(fields));
  }
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) {
    return Error(t, absl::StrCat("a bare number is not a Relax value: write a scalar tensor as "
                                 "R.const(DTYPE, [], [", t.text, "]) (docs/ir.md, Constants)"));
  }
  return Expected("an expression");
}

absl::StatusOr<Expr> Parser::ParseRForm() {
  Next();  // R
  Next();  // .
  if (Peek().kind != TokenKind::kIdent) return Expected("an operator name after 'R.'");
  const Token& name_at = Peek();
  std::string name = Next().text;
  if (IsPunct(".") && Peek(1).kind == TokenKind::kIdent) {
    // TVM's R.nn.softmax, R.op.add: Kiln's operators have no namespaces.
    std::string full = absl::StrCat("R.", name), last = name;
    for (size_t at = 0; IsPunct(".", at) && Peek(at + 1).kind == TokenKind::kIdent; at += 2) {
      last = Peek(at + 1).text;
      absl::StrAppend(&full, ".", last);
    }
    return Error(name_at, absl::StrCat("operators have no namespaces: write '", full, "' as 'R.", last, "' (docs/ir.md)"));
  }
  if (name == "shape") {
    KILN_RETURN_IF_ERROR(ExpectPunct("("));
    KILN_RETURN_IF_ERROR(ExpectPunct("["));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> values, ParsePrimList("]"));
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return ShapeExpr(std::move(values));
  }
  if (name == "prim") {
    KILN_RETURN_IF_ERROR(ExpectPunct("("));
    KILN_ASSIGN_OR_RETURN(PrimExpr value, ParsePrimExpr());
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return PrimValue(value);
  }
  if (name == "extern") {
    KILN_RETURN_IF_ERROR(ExpectPunct("("));
    if (Peek().kind != TokenKind::kString) return Expected("a symbol string");
    std::string symbol = Next().text;
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return ExternFunc(symbol);
  }
  if (name == "const") return ParseConstant();
  return Op(name);
}

absl::StatusOr<Expr> Parser::ParseConstant() {
  KILN_RETURN_IF_ERROR(ExpectPunct("("));
  const Token& dtype_at = Peek();
  if (dtype_at.kind == TokenKind::kInt || dtype_at.kind == TokenKind::kFloat) {
    return Error(dtype_at, absl::StrCat("R.const takes the data type first, then the shape and the "
                                        "elements: R.const(float32, [], [", dtype_at.text, "])"));
  }
  KILN_ASSIGN_OR_RETURN(DataType dtype, ParseDataType());
  // Sub-byte constants would need packed data (tir/data_type.h); none is written in text yet.
  if (!dtype.is_scalar() || dtype.is_handle() || dtype.is_sub_byte()) {
    return Error(dtype_at, absl::StrCat("constants of type ", dtype.ToString(), " are not supported"));
  }
  KILN_RETURN_IF_ERROR(ExpectPunct(","));
  KILN_RETURN_IF_ERROR(ExpectPunct("["));
  std::vector<int64_t> shape;
  int64_t numel = 1;
  while (!AcceptPunct("]")) {
    KILN_ASSIGN_OR_RETURN(int64_t d, ParseInt("a dimension", false));
    if (d != 0 && numel > (int64_t{1} << 40) / d) return Error(dtype_at, "constant too large");
    numel *= d;
    shape.push_back(d);
    if (AcceptPunct("]")) break;
    if (!AcceptPunct(",")) return Expected("',' or ']'");
  }
  KILN_RETURN_IF_ERROR(ExpectPunct(","));
  if (IsKeyword("external") && IsPunct("=", 1)) {
    Next();
    Next();
    if (Peek().kind != TokenKind::kString || Peek().text.empty()) return Expected("a weight name string");
    ConstantData data{dtype, std::move(shape), nullptr, Next().text};
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return Constant(std::move(data));
  }
  const Token& values_at = Peek();
  KILN_RETURN_IF_ERROR(ExpectPunct("["));
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  int width = dtype.bytes();
  int64_t count = 0;
  auto append = [&](uint64_t bits) {
    for (int i = 0; i < width; ++i) bytes->push_back(static_cast<uint8_t>(bits >> (8 * i)));
  };
  while (!AcceptPunct("]")) {
    const Token& at = Peek();
    bool negative = false;
    if (IsPunct("-")) {
      Next();
      negative = true;
    }
    const Token& v = Peek();
    if (dtype.is_floating()) {
      if (v.kind == TokenKind::kInt && IsHex(v.text) && !negative) {
        uint64_t bits = 0;
        if (!tir::ParseUnsignedLiteral(v.text, &bits) || (dtype.bits() < 64 && bits >> dtype.bits()) != 0) {
          return Error(at, absl::StrCat("bit pattern ", v.text, " does not fit in ", dtype.ToString()));
        }
        Next();
        append(bits);
      } else if (dtype.bits() == 16) {
        return Error(at, absl::StrCat(dtype.ToString(), " constant elements are written as bit patterns like 0x3c00"));
      } else {
        double value = 0;
        if (v.kind == TokenKind::kInt || v.kind == TokenKind::kFloat) {
          if (IsHex(v.text)) return Expected("a number");
          KILN_ASSIGN_OR_RETURN(value, FloatLiteral(v, dtype));
        } else if (v.kind == TokenKind::kIdent && v.text == "inf") {
          value = std::numeric_limits<double>::infinity();
        } else if (v.kind == TokenKind::kIdent && v.text == "nan") {
          // The word is the quiet NaN (0x7fc00000); other NaNs are written as bit patterns.
          value = std::numeric_limits<double>::quiet_NaN();
        } else {
          return Expected(absl::StrCat("a ", dtype.ToString(), " value"));
        }
        Next();
        if (negative) value = -value;
        if (dtype.bits() == 32) {
          float f = static_cast<float>(value);
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          append(bits);
        } else {
          uint64_t bits;
          std::memcpy(&bits, &value, 8);
          append(bits);
        }
      }
    } else if (dtype.is_bool() && !negative && v.kind == TokenKind::kIdent && (v.text == "true" || v.text == "false")) {
      Next();
      append(v.text == "true" ? 1 : 0);
    } else {
      if (v.kind != TokenKind::kInt) return Expected(absl::StrCat("a ", dtype.ToString(), " value"));
      uint64_t magnitude = 0;
      bool ok = tir::ParseUnsignedLiteral(v.text, &magnitude);
      int bits = dtype.bits();
      if (dtype.is_bool()) {
        ok = ok && !negative && magnitude <= 1;  // a bool byte other than 0 or 1 is no bool
      } else if (dtype.is_int()) {
        uint64_t limit = (uint64_t{1} << (bits - 1)) - (negative ? 0 : 1);
        ok = ok && magnitude <= limit;
      } else {
        ok = ok && !negative && (bits == 64 || magnitude < (uint64_t{1} << bits));
      }
      if (!ok) {
        return Error(at, absl::StrCat("value ", negative ? "-" : "", v.text, " is out of range for ", dtype.ToString(),
                                      dtype.is_bool() ? " (true, false, 1 or 0)" : ""));
      }
      Next();
      append(negative ? uint64_t{0} - magnitude : magnitude);
    }
    ++count;
    if (count > numel) return Error(at, absl::StrCat("more values than the ", numel, " elements of the shape"));
    if (AcceptPunct("]")) break;
    if (!AcceptPunct(",")) return Expected("',' or ']'");
  }
  if (count != numel) {
    return Error(values_at, absl::StrCat("constant has ", count, " values but its shape has ", numel, " elements"));
  }
  KILN_RETURN_IF_ERROR(ExpectPunct(")"));
  ConstantData data{dtype, std::move(shape), std::move(bytes), ""};
  return Constant(std::move(data));
}

absl::StatusOr<AttrValue> Parser::ParseAttrValue() {
  const Token& t = Peek();
  if (IsPunct("-")) {
    const Token& n = Peek(1);
    if (n.kind == TokenKind::kInt) {
      KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt("an integer", true));
      return AttrValue(v);
    }
    if (n.kind == TokenKind::kFloat) {
      Next();
      KILN_ASSIGN_OR_RETURN(double value, FloatLiteral(Next(), DataType::Float(64)));
      return AttrValue(-value);
    }
    if (n.kind == TokenKind::kIdent && n.text == "inf") {
      Next();
      Next();
      return AttrValue(-std::numeric_limits<double>::infinity());
    }
    return Expected("an attribute value");
  }
  switch (t.kind) {
    case TokenKind::kInt: {
      KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt("an integer", false));
      return AttrValue(v);
    }
    case TokenKind::kFloat: {
      KILN_ASSIGN_OR_RETURN(double value, FloatLiteral(Next(), DataType::Float(64)));
      return AttrValue(value);
    }
    case TokenKind::kString:
      return AttrValue(Next().text);
    case TokenKind::kIdent: {
      if (t.text == "true" || t.text == "false") return AttrValue(Next().text == "true");
      if (t.text == "inf") {
        Next();
        return AttrValue(std::numeric_limits<double>::infinity());
      }
      if (t.text == "nan") {
        Next();
        return AttrValue(std::numeric_limits<double>::quiet_NaN());
      }
      auto dtype = DataType::Parse(t.text);
      if (dtype.ok()) {
        Next();
        return AttrValue(*dtype);
      }
      break;
    }
    default:
      break;
  }
  if (AcceptPunct("[")) {
    // Integers, or numbers when any element is not an integer.
    std::vector<int64_t> ints;
    std::vector<double> numbers;
    bool all_ints = true;
    while (!AcceptPunct("]")) {
      if (IsPunct("[")) return Expected("a number");
      KILN_ASSIGN_OR_RETURN(AttrValue v, ParseAttrValue());
      if (const auto* i = std::get_if<int64_t>(&v)) {
        ints.push_back(*i);
        numbers.push_back(static_cast<double>(*i));
      } else if (const auto* d = std::get_if<double>(&v)) {
        all_ints = false;
        numbers.push_back(*d);
      } else {
        return Expected("a number");
      }
      if (AcceptPunct("]")) break;
      if (!AcceptPunct(",")) return Expected("',' or ']'");
    }
    if (all_ints) return AttrValue(std::move(ints));
    return AttrValue(std::move(numbers));
  }
  return ExpectedDataType("an attribute value (integer, number, bool, string, data type or [numbers])");
}

absl::StatusOr<Expr> Parser::ParseCallArgs(Expr callee) {
  std::vector<Expr> args;
  Attrs attrs;
  std::vector<StructInfo> sinfo_args;
  bool keywords = false;
  if (!AcceptPunct(")")) {
    while (true) {
      if (Peek().kind == TokenKind::kIdent && IsPunct("=", 1)) {
        Token key = Next();
        Next();
        keywords = true;
        if (IsStructInfoKeyword()) {
          if (key.text != "out_sinfo") {
            return Error(key, absl::StrCat("struct info arguments are written out_sinfo=..., found '", key.text, "='"));
          }
          KILN_ASSIGN_OR_RETURN(StructInfo s, ParseStructInfo());
          sinfo_args.push_back(std::move(s));
        } else {
          if (attrs.count(key.text)) return Error(key, absl::StrCat("duplicate attribute '", key.text, "'"));
          KILN_ASSIGN_OR_RETURN(AttrValue v, ParseAttrValue());
          attrs[key.text] = std::move(v);
        }
      } else {
        if (keywords) return Error(Peek(), "positional argument after keyword arguments");
        KILN_ASSIGN_OR_RETURN(Expr arg, ParseExpr());
        args.push_back(std::move(arg));
      }
      if (AcceptPunct(")")) break;
      if (!AcceptPunct(",")) return Expected("',' or ')'");
      // A trailing comma, as a shape or a parameter list may end; it was reported as a
      // "positional argument after keyword arguments".
      if (AcceptPunct(")")) break;
    }
  }
  return Call(std::move(callee), std::move(args), std::move(attrs), std::move(sinfo_args));
}

// ---------------------------------------------------------------- struct info

absl::StatusOr<StructInfo> Parser::ParseStructInfo() {
  Depth depth(this);
  if (depth.too_deep()) return TooDeep();
  if (IsKeyword("R") && IsPunct(".", 1) && Peek(2).kind == TokenKind::kIdent) {
    // TVMScript's R.Tensor((n, 4), "float32").
    return Error(Peek(), absl::StrCat("struct info is written without 'R.': ", Peek(2).text,
                                      "(...), e.g. Tensor((n, 4), float32)"));
  }
  if (!IsStructInfoKeyword()) return Expected("struct info (Object, Prim, Shape, Tensor, Tuple or Func)");
  std::string kind = Next().text;
  if (kind == "Object") return ObjectSInfo();
  if (kind == "Prim") {
    KILN_RETURN_IF_ERROR(ExpectPunct("("));
    KILN_ASSIGN_OR_RETURN(DataType dtype, ParseDataType());
    PrimExpr value;
    if (AcceptPunct(",")) {
      KILN_RETURN_IF_ERROR(ExpectKeyword("value"));
      KILN_RETURN_IF_ERROR(ExpectPunct("="));
      const Token& at = Peek();
      bool defines = defining_ && at.kind == TokenKind::kIdent && IsPunct(")", 1) && at.text != "true" &&
                     at.text != "false" && LookupTirVar(at.text) == nullptr;
      if (defines) {
        value = DefineSymVar(at, dtype, /*shape_var=*/true);
        Next();
      } else {
        KILN_ASSIGN_OR_RETURN(value, ParsePrimExpr());
      }
      if (value.dtype() != dtype) {
        return Error(at, absl::StrCat("Prim value has type ", value.dtype().ToString(), ", not ", dtype.ToString()));
      }
    }
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return PrimSInfo(dtype, value);
  }
  if (kind == "Shape") {
    if (!AcceptPunct("(")) return ShapeSInfoOfNdim(kUnknownNdim);
    StructInfo result;
    if (IsPunct("[")) {
      // R.shape([n, 4]) is a value in brackets; its struct info's dims are in parentheses.
      return Error(Peek(), "a shape's dims are written in parentheses: Shape((n, 4)), as in Tensor((n, 4), float32)");
    }
    if (IsKeyword("ndim")) {
      Next();
      KILN_RETURN_IF_ERROR(ExpectPunct("="));
      KILN_ASSIGN_OR_RETURN(int64_t ndim, ParseInt("a rank", false));
      if (ndim > 1 << 20) return Error(Peek(), "rank too large");
      result = ShapeSInfoOfNdim(static_cast<int>(ndim));
    } else {
      KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> values, ParseDims());
      result = ShapeSInfo(std::move(values));
    }
    KILN_RETURN_IF_ERROR(ExpectPunct(")"));
    return result;
  }
  if (kind == "Tensor") {
    if (!AcceptPunct("(")) return TensorSInfoOfNdim(kUnknownNdim, std::nullopt);
    std::optional<std::vector<PrimExpr>> shape;
    int ndim = kUnknownNdim;
    std::optional<DataType> dtype;
    std::string device;
    int state = 0;  // 1: after shape/ndim, 2: after dtype, 3: after device
    bool first = true;
    while (!AcceptPunct(")")) {
      if (!first && !AcceptPunct(",")) return Expected("',' or ')'");
      first = false;
      if (state < 1 && IsPunct("(")) {
        KILN_ASSIGN_OR_RETURN(shape, ParseDims());
        state = 1;
      } else if (state < 1 && IsPunct("[")) {
        return Error(Peek(), "a tensor's shape is written in parentheses: Tensor((n, 4), float32)");
      } else if (state < 1 && IsKeyword("ndim") && IsPunct("=", 1)) {
        Next();
        Next();
        KILN_ASSIGN_OR_RETURN(int64_t n, ParseInt("a rank", false));
        if (n > 1 << 20) return Error(Peek(), "rank too large");
        ndim = static_cast<int>(n);
        state = 1;
      } else if (state < 3 && IsKeyword("device") && IsPunct("=", 1)) {
        Next();
        Next();
        if (Peek().kind != TokenKind::kString) return Expected("a device string like \"cuda:0\"");
        device = Next().text;
        state = 3;
      } else if (state < 2 && Peek().kind == TokenKind::kIdent && DataType::Parse(Peek().text).ok()) {
        dtype = *DataType::Parse(Next().text);
        state = 2;
      } else if (state < 2 && Peek().kind == TokenKind::kString && DataType::Parse(Peek().text).ok()) {
        return Error(Peek(), absl::StrCat("a data type is written without quotes: ", Peek().text));
      } else if (state < 2 && IsKeyword("dtype") && IsPunct("=", 1)) {
        return Error(Peek(), "a tensor's data type is written alone, without 'dtype=': Tensor((n, 4), float32)");
      } else {
        if (state >= 2) return Expected("device=\"...\"");
        return ExpectedDataType(state < 1 ? "a shape like (n, 4), ndim=N, a data type or device=\"...\""
                                          : "a data type or device=\"...\"");
      }
    }
    if (shape) return TensorSInfo(std::move(*shape), dtype, device);
    return TensorSInfoOfNdim(ndim, dtype, device);
  }
  if (kind == "Tuple") {
    KILN_RETURN_IF_ERROR(ExpectPunct("("));
    std::vector<StructInfo> fields;
    while (!AcceptPunct(")")) {
      KILN_ASSIGN_OR_RETURN(StructInfo f, ParseStructInfo());
      fields.push_back(std::move(f));
      if (AcceptPunct(")")) break;
      if (!AcceptPunct(",")) return Expected("',' or ')'");
    }
    return TupleSInfo(std::move(fields));
  }
  // Func. Its parameters define their own symbolic variables (a callee's `n` in the struct
  // info of `f = @callee`), visible in its return struct info and nowhere else.
  KILN_RETURN_IF_ERROR(ExpectPunct("("));
  tir_scopes_.emplace_back();
  const size_t outer_sym_scope = sym_scope_;
  const bool outer_defining = defining_;
  sym_scope_ = tir_scopes_.size() - 1;
  std::optional<std::vector<StructInfo>> params;
  if (!AcceptPunct("...")) {
    if (!AcceptPunct("[")) return Expected("'[' or '...'");
    params.emplace();
    defining_ = true;
    while (!AcceptPunct("]")) {
      KILN_ASSIGN_OR_RETURN(StructInfo p, ParseStructInfo());
      params->push_back(std::move(p));
      if (AcceptPunct("]")) break;
      if (!AcceptPunct(",")) return Expected("',' or ']'");
    }
  }
  defining_ = false;
  KILN_RETURN_IF_ERROR(ExpectPunct("->"));
  KILN_ASSIGN_OR_RETURN(StructInfo ret, ParseStructInfo());
  tir_scopes_.pop_back();
  sym_scope_ = outer_sym_scope;
  defining_ = outer_defining;
  bool pure = true;
  if (AcceptPunct(",")) {
    KILN_RETURN_IF_ERROR(ExpectKeyword("impure"));
    pure = false;
  }
  KILN_RETURN_IF_ERROR(ExpectPunct(")"));
  if (params) return FuncSInfo(std::move(*params), ret, pure);
  return OpaqueFuncSInfo(ret, pure);
}

}  // namespace text_internal

absl::StatusOr<ParsedModule> ParseModule(std::string_view text, std::string file_name) {
  // A binary file of a known kind (an executable or a GGUF given to kiln check) is named,
  // instead of failing on its first byte.
  if (const std::string format = support::FileFormatName(text.substr(0, 16)); !format.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": error: not IR text (docs/ir.md): the file is ", format));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<tir::Token> tokens, tir::Lex(text, file_name));
  text_internal::Parser parser(std::move(tokens), std::move(file_name));
  return parser.ParseModule();
}

}  // namespace kiln::relax
