#include "serving/jinja_template.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace kiln::serving {
namespace {

struct Pos {
  int line = 1;
  int column = 1;
};

// ---------------------------------------------------------------------------------------
// Tokens of expressions inside {{ }} and {% %}.

enum class Tok { kName, kInt, kFloat, kString, kOp, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // name, operator, or a string literal's value
  Pos pos;
  int64_t int_value = 0;
  double float_value = 0;
};

// One piece of the template source: text, an output {{ }}, a block tag {% %} or a comment.
struct Segment {
  enum Kind { kText, kOutput, kBlock, kComment } kind = kText;
  std::string text;
  Pos pos;
  std::vector<Token> tokens;
  size_t begin = 0;            // source offset where the text starts
  bool strip_before = false;   // "{%-": strip whitespace before the tag
  bool strip_after = false;    // "-%}": strip whitespace after the tag
  bool keep_indent = false;    // "{%+": no lstrip_blocks for this tag
};

// Operators, longest first so "//" wins over "/".
constexpr const char* kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",", ":",
                                      ".", "|", "~", "+", "-", "*", "/", "%", "<", ">", "="};

class Splitter {
 public:
  Splitter(std::string_view source, const std::string& name) : source_(source), name_(name) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Pos PosOf(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  absl::Status Error(size_t offset, std::string_view message) const {
    Pos p = PosOf(offset);
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": line ", p.line, ", column ", p.column, ": ", std::string(message)));
  }

  absl::StatusOr<std::vector<Segment>> Split() {
    std::vector<Segment> segments;
    size_t pos = 0;
    while (pos <= source_.size()) {
      size_t at = pos;
      while (at + 1 < source_.size() &&
             !(source_[at] == '{' && (source_[at + 1] == '{' || source_[at + 1] == '%' || source_[at + 1] == '#'))) {
        ++at;
      }
      if (at + 1 >= source_.size()) at = source_.size();
      Segment text;
      text.kind = Segment::kText;
      text.text = std::string(source_.substr(pos, at - pos));
      text.pos = PosOf(pos);
      text.begin = pos;
      segments.push_back(std::move(text));
      if (at == source_.size()) break;

      Segment tag;
      tag.kind = source_[at + 1] == '{' ? Segment::kOutput : source_[at + 1] == '%' ? Segment::kBlock : Segment::kComment;
      tag.pos = PosOf(at);
      size_t p = at + 2;
      if (p < source_.size() && source_[p] == '-') {
        tag.strip_before = true;
        ++p;
      } else if (p < source_.size() && source_[p] == '+') {
        tag.keep_indent = true;
        ++p;
      }
      if (tag.kind == Segment::kComment) {
        size_t end = source_.find("#}", p);
        if (end == std::string_view::npos) return Error(at, "unterminated comment");
        tag.strip_after = end > p && source_[end - 1] == '-';
        p = end + 2;
      } else {
        const char* close = tag.kind == Segment::kOutput ? "}}" : "%}";
        KILN_RETURN_IF_ERROR(LexTag(at, close, &p, &tag));
      }
      // trim_blocks: the first newline after a block tag or comment goes.
      if (tag.kind != Segment::kOutput && p < source_.size() && source_[p] == '\n') ++p;
      segments.push_back(std::move(tag));
      pos = p;
    }
    ApplyWhitespaceControl(&segments);
    return segments;
  }

 private:
  absl::Status LexTag(size_t tag_start, const char* close, size_t* p, Segment* tag) {
    const std::string_view end(close, 2);
    while (true) {
      while (*p < source_.size() && std::isspace(static_cast<unsigned char>(source_[*p]))) ++*p;
      if (*p >= source_.size()) {
        return Error(tag_start, absl::StrCat("unterminated ", tag->kind == Segment::kOutput ? "{{" : "{%"));
      }
      std::string_view rest = source_.substr(*p);
      if (rest.substr(0, 2) == end) {
        *p += 2;
        break;
      }
      if (rest.size() >= 3 && rest[0] == '-' && rest.substr(1, 2) == end) {
        tag->strip_after = true;
        *p += 3;
        break;
      }
      Token token;
      token.pos = PosOf(*p);
      const char c = rest[0];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t n = 1;
        while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
        token.kind = Tok::kName;
        token.text = std::string(rest.substr(0, n));
        *p += n;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t n = 0;
        while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
        bool is_float = false;
        if (n + 1 < rest.size() && rest[n] == '.' && std::isdigit(static_cast<unsigned char>(rest[n + 1]))) {
          is_float = true;
          ++n;
          while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
        }
        if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
          size_t m = n + 1;
          if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
          if (m < rest.size() && std::isdigit(static_cast<unsigned char>(rest[m]))) {
            is_float = true;
            n = m;
            while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
          }
        }
        std::string number(rest.substr(0, n));
        if (is_float) {
          token.kind = Tok::kFloat;
          token.float_value = std::strtod(number.c_str(), nullptr);
        } else {
          token.kind = Tok::kInt;
          errno = 0;
          token.int_value = std::strtoll(number.c_str(), nullptr, 10);
          if (errno == ERANGE) return Error(*p, absl::StrCat("integer ", number, " is too large"));
        }
        *p += n;
      } else if (c == '\'' || c == '"') {
        size_t n = 1;
        std::string value;
        while (true) {
          if (n >= rest.size()) return Error(*p, "unterminated string");
          char d = rest[n];
          if (d == c) break;
          if (d == '\\' && n + 1 < rest.size()) {
            char e = rest[n + 1];
            switch (e) {
              case 'n': value += '\n'; break;
              case 't': value += '\t'; break;
              case 'r': value += '\r'; break;
              case '\\': value += '\\'; break;
              case '\'': value += '\''; break;
              case '"': value += '"'; break;
              default: value += '\\'; value += e; break;  // Python keeps unknown escapes
            }
            n += 2;
            continue;
          }
          value += d;
          ++n;
        }
        token.kind = Tok::kString;
        token.text = std::move(value);
        *p += n + 1;
      } else {
        bool found = false;
        for (const char* op : kOperators) {
          const size_t len = std::strlen(op);
          if (rest.substr(0, len) == op) {
            token.kind = Tok::kOp;
            token.text = op;
            *p += len;
            found = true;
            break;
          }
        }
        if (!found) return Error(*p, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      tag->tokens.push_back(std::move(token));
    }
    Token end_token;
    end_token.pos = PosOf(*p - 2);
    tag->tokens.push_back(end_token);
    return absl::OkStatus();
  }

  // "-" strips all whitespace on its side; lstrip_blocks strips the spaces and tabs between
  // the start of a line and a block tag or comment.
  void ApplyWhitespaceControl(std::vector<Segment>* segments) const {
    for (size_t i = 0; i < segments->size(); ++i) {
      Segment& s = (*segments)[i];
      if (s.kind != Segment::kText) continue;
      if (i > 0 && (*segments)[i - 1].strip_after) {
        size_t k = 0;
        while (k < s.text.size() && std::isspace(static_cast<unsigned char>(s.text[k]))) ++k;
        s.text.erase(0, k);
      }
      if (i + 1 >= segments->size()) continue;
      const Segment& next = (*segments)[i + 1];
      if (next.strip_before) {
        while (!s.text.empty() && std::isspace(static_cast<unsigned char>(s.text.back()))) s.text.pop_back();
      } else if (next.kind != Segment::kOutput && !next.keep_indent) {
        const size_t line_start = s.text.rfind('\n') == std::string::npos ? 0 : s.text.rfind('\n') + 1;
        const bool at_line_start = line_start > 0 || s.begin == 0 || source_[s.begin - 1] == '\n';
        if (at_line_start && s.text.find_first_not_of(" \t", line_start) == std::string::npos) {
          s.text.erase(line_start);
        }
      }
    }
  }

  std::string_view source_;
  const std::string& name_;
  std::vector<size_t> line_starts_;
};

// ---------------------------------------------------------------------------------------
// Expressions.

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  enum Kind {
    kLiteral, kName, kList, kDict, kAttr, kIndex, kSlice, kCall, kFilter, kTest,
    kNeg, kBinary, kAnd, kOr, kNot, kCond,
  } kind;
  Pos pos;
  JinjaValue literal;
  std::string name;                 // variable, attribute, filter, test, function, operator
  std::vector<ExprP> args;          // operands; for calls and filters the callee/subject first
  std::vector<std::string> kwargs;  // keyword names of the last args (calls)
  bool negate = false;              // is not
  int depth = 1;                    // of the tree below, bounded by kMaxDepth
};

// Deeper expressions (and block nesting) are refused: parsing, rendering and freeing them
// recurse, and a template comes from a file.
constexpr int kMaxDepth = 200;

const std::set<std::string>& KnownFilters() {
  static const auto* filters = new std::set<std::string>{
      "trim", "length", "count", "upper", "lower", "capitalize", "title", "default", "d", "string", "int",
      "float", "first", "last", "join", "list", "reverse", "tojson", "items", "safe"};
  return *filters;
}

const std::set<std::string>& KnownTests() {
  static const auto* tests = new std::set<std::string>{
      "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "mapping",
      "sequence", "iterable", "true", "false", "even", "odd"};
  return *tests;
}

const std::set<std::string>& KnownFunctions() {
  static const auto* functions = new std::set<std::string>{"raise_exception", "namespace", "range"};
  return *functions;
}

const std::set<std::string>& KnownMethods() {
  static const auto* methods = new std::set<std::string>{
      "strip", "lstrip", "rstrip", "upper", "lower", "startswith", "endswith", "split", "replace", "title",
      "items", "keys", "values", "get"};
  return *methods;
}

class ExprParser {
 public:
  ExprParser(const std::vector<Token>& tokens, size_t start, const std::string& name)
      : tokens_(tokens), i_(start), name_(name) {}

  absl::Status Error(const Token& at, std::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": line ", at.pos.line, ", column ", at.pos.column, ": ", std::string(message)));
  }
  const Token& Peek(size_t ahead = 0) const { return tokens_[std::min(i_ + ahead, tokens_.size() - 1)]; }
  bool IsOp(std::string_view op, size_t ahead = 0) const { return Peek(ahead).kind == Tok::kOp && Peek(ahead).text == op; }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).kind == Tok::kName && Peek(ahead).text == name;
  }
  bool AtEnd() const { return Peek().kind == Tok::kEnd; }
  const Token& Next() { return tokens_[std::min(i_++, tokens_.size() - 1)]; }
  size_t position() const { return i_; }

  absl::Status Expect(std::string_view op) {
    if (!IsOp(op)) return Error(Peek(), absl::StrCat("expected '", std::string(op), "', found ", Describe(Peek())));
    Next();
    return absl::OkStatus();
  }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Tok::kEnd: return "the end of the tag";
      case Tok::kString: return "a string";
      case Tok::kInt:
      case Tok::kFloat: return "a number";
      default: return absl::StrCat("'", t.text, "'");
    }
  }

  absl::StatusOr<std::string> ExpectName() {
    if (Peek().kind != Tok::kName) return Error(Peek(), absl::StrCat("expected a name, found ", Describe(Peek())));
    return Next().text;
  }

  absl::StatusOr<ExprP> Parse() { return ParseCond(); }

 private:
  absl::StatusOr<ExprP> Make(Expr::Kind kind, Pos pos, std::string name, std::vector<ExprP> args,
                             std::vector<std::string> kwargs = {}, bool negate = false) {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->pos = pos;
    e->name = std::move(name);
    e->args = std::move(args);
    e->kwargs = std::move(kwargs);
    e->negate = negate;
    for (const ExprP& arg : e->args) e->depth = std::max(e->depth, arg->depth + 1);
    if (e->depth > kMaxDepth) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": line ", pos.line, ", column ", pos.column,
                                                     ": expression nested more than ", kMaxDepth, " deep"));
    }
    return ExprP(std::move(e));
  }

  // Bounds the parser's own recursion (parentheses, lists, `not not ...`, `- - ...`).
  absl::Status Enter(const Token& at) {
    if (++recursion_ > kMaxDepth) return Error(at, absl::StrCat("expression nested more than ", kMaxDepth, " deep"));
    return absl::OkStatus();
  }
  struct Leave {
    int* recursion;
    ~Leave() { --*recursion; }
  };

  absl::StatusOr<ExprP> ParseCond() {
    KILN_ASSIGN_OR_RETURN(ExprP value, ParseOr());
    if (!IsName("if")) return value;
    Pos pos = Next().pos;
    KILN_ASSIGN_OR_RETURN(ExprP cond, ParseOr());
    ExprP otherwise = std::make_shared<Expr>(Expr{Expr::kLiteral, pos, JinjaValue(), "", {}, {}, false});
    if (IsName("else")) {
      Next();
      KILN_ASSIGN_OR_RETURN(otherwise, ParseCond());
    }
    return Make(Expr::kCond, pos, "", {cond, value, otherwise});
  }

  absl::StatusOr<ExprP> ParseOr() {
    KILN_ASSIGN_OR_RETURN(ExprP left, ParseAnd());
    while (IsName("or")) {
      Pos pos = Next().pos;
      KILN_ASSIGN_OR_RETURN(ExprP right, ParseAnd());
      KILN_ASSIGN_OR_RETURN(left, Make(Expr::kOr, pos, "or", {left, right}));
    }
    return left;
  }

  absl::StatusOr<ExprP> ParseAnd() {
    KILN_ASSIGN_OR_RETURN(ExprP left, ParseNot());
    while (IsName("and")) {
      Pos pos = Next().pos;
      KILN_ASSIGN_OR_RETURN(ExprP right, ParseNot());
      KILN_ASSIGN_OR_RETURN(left, Make(Expr::kAnd, pos, "and", {left, right}));
    }
    return left;
  }

  absl::StatusOr<ExprP> ParseNot() {
    if (IsName("not")) {
      KILN_RETURN_IF_ERROR(Enter(Peek()));
      Leave leave{&recursion_};
      Pos pos = Next().pos;
      KILN_ASSIGN_OR_RETURN(ExprP operand, ParseNot());
      return Make(Expr::kNot, pos, "not", {operand});
    }
    return ParseCompare();
  }

  absl::StatusOr<ExprP> ParseCompare() {
    KILN_ASSIGN_OR_RETURN(ExprP left, ParseMath1());
    while (true) {
      std::string op;
      Pos pos = Peek().pos;
      if (Peek().kind == Tok::kOp && (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" ||
                                      Peek().text == "<=" || Peek().text == ">" || Peek().text == ">=")) {
        op = Next().text;
      } else if (IsName("in")) {
        Next();
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        op = "not in";
      } else {
        return left;
      }
      KILN_ASSIGN_OR_RETURN(ExprP right, ParseMath1());
      KILN_ASSIGN_OR_RETURN(left, Make(Expr::kBinary, pos, op, {left, right}));
    }
  }

  template <typename Sub>
  absl::StatusOr<ExprP> ParseBinaryLevel(std::initializer_list<const char*> ops, Sub sub) {
    KILN_ASSIGN_OR_RETURN(ExprP left, (this->*sub)());
    while (true) {
      const char* matched = nullptr;
      for (const char* op : ops) {
        if (IsOp(op)) matched = op;
      }
      if (matched == nullptr) return left;
      Pos pos = Next().pos;
      KILN_ASSIGN_OR_RETURN(ExprP right, (this->*sub)());
      KILN_ASSIGN_OR_RETURN(left, Make(Expr::kBinary, pos, matched, {left, right}));
    }
  }

  absl::StatusOr<ExprP> ParseMath1() { return ParseBinaryLevel({"+", "-"}, &ExprParser::ParseConcat); }
  absl::StatusOr<ExprP> ParseConcat() { return ParseBinaryLevel({"~"}, &ExprParser::ParseMath2); }
  absl::StatusOr<ExprP> ParseMath2() { return ParseBinaryLevel({"*", "/", "//", "%"}, &ExprParser::ParsePow); }
  absl::StatusOr<ExprP> ParsePow() { return ParseBinaryLevel({"**"}, &ExprParser::ParseUnary); }

  absl::StatusOr<ExprP> ParseUnary() {
    ExprP node;
    if (IsOp("-") || IsOp("+")) {
      KILN_RETURN_IF_ERROR(Enter(Peek()));
      Leave leave{&recursion_};
      const Token& sign = Next();
      KILN_ASSIGN_OR_RETURN(ExprP operand, ParseUnary());
      node = operand;
      if (sign.text == "-") {
        KILN_ASSIGN_OR_RETURN(node, Make(Expr::kNeg, sign.pos, "-", {operand}));
      }
    } else {
      KILN_ASSIGN_OR_RETURN(node, ParsePrimary());
      KILN_ASSIGN_OR_RETURN(node, ParsePostfix(node));
    }
    return ParseFilters(node);
  }

  absl::StatusOr<std::vector<ExprP>> ParseArgs(std::vector<std::string>* kwargs) {
    std::vector<ExprP> args;
    KILN_RETURN_IF_ERROR(Expect("("));
    while (!IsOp(")")) {
      if (Peek().kind == Tok::kName && IsOp("=", 1)) {
        kwargs->push_back(Next().text);
        Next();
      } else if (!kwargs->empty()) {
        return Error(Peek(), "a positional argument after a keyword argument");
      }
      KILN_ASSIGN_OR_RETURN(ExprP arg, ParseCond());
      args.push_back(arg);
      if (!IsOp(",")) break;
      Next();
    }
    KILN_RETURN_IF_ERROR(Expect(")"));
    return args;
  }

  absl::StatusOr<ExprP> ParseFilters(ExprP node) {
    while (true) {
      if (IsOp("|")) {
        Next();
        const Token& name_token = Peek();
        KILN_ASSIGN_OR_RETURN(std::string filter, ExpectName());
        if (!KnownFilters().count(filter)) return Error(name_token, absl::StrCat("unsupported filter '", filter, "'"));
        std::vector<ExprP> args = {node};
        std::vector<std::string> kwargs;
        if (IsOp("(")) {
          KILN_ASSIGN_OR_RETURN(std::vector<ExprP> extra, ParseArgs(&kwargs));
          args.insert(args.end(), extra.begin(), extra.end());
        }
        KILN_ASSIGN_OR_RETURN(node, Make(Expr::kFilter, name_token.pos, filter, std::move(args), std::move(kwargs)));
      } else if (IsName("is")) {
        Next();
        bool negate = false;
        if (IsName("not")) {
          Next();
          negate = true;
        }
        const Token& name_token = Peek();
        std::string test;
        if (IsName("none") || IsName("true") || IsName("false")) {
          test = Next().text;
        } else {
          KILN_ASSIGN_OR_RETURN(test, ExpectName());
        }
        if (!KnownTests().count(test)) return Error(name_token, absl::StrCat("unsupported test '", test, "'"));
        KILN_ASSIGN_OR_RETURN(node, Make(Expr::kTest, name_token.pos, test, {node}, {}, negate));
      } else {
        return node;
      }
    }
  }

  absl::StatusOr<ExprP> ParsePostfix(ExprP node) {
    while (true) {
      if (IsOp(".")) {
        Next();
        const Token& name_token = Peek();
        KILN_ASSIGN_OR_RETURN(std::string attr, ExpectName());
        KILN_ASSIGN_OR_RETURN(node, Make(Expr::kAttr, name_token.pos, attr, {node}));
      } else if (IsOp("[")) {
        Pos pos = Next().pos;
        // x[i], x[a:b], x[a:], x[:b]
        ExprP start, stop;
        bool slice = false;
        if (!IsOp(":")) {
          KILN_ASSIGN_OR_RETURN(start, ParseCond());
        }
        if (IsOp(":")) {
          slice = true;
          Next();
          if (!IsOp("]")) {
            KILN_ASSIGN_OR_RETURN(stop, ParseCond());
          }
        }
        KILN_RETURN_IF_ERROR(Expect("]"));
        if (slice) {
          ExprP none = std::make_shared<Expr>(Expr{Expr::kLiteral, pos, JinjaValue::None(), "", {}, {}, false});
          KILN_ASSIGN_OR_RETURN(node, Make(Expr::kSlice, pos, "", {node, start ? start : none, stop ? stop : none}));
        } else {
          KILN_ASSIGN_OR_RETURN(node, Make(Expr::kIndex, pos, "", {node, start}));
        }
      } else if (IsOp("(")) {
        const Token& paren = Peek();
        if (node->kind == Expr::kName) {
          if (!KnownFunctions().count(node->name)) {
            return Error(paren, absl::StrCat("unsupported function '", node->name, "'"));
          }
        } else if (node->kind == Expr::kAttr) {
          if (!KnownMethods().count(node->name)) {
            return Error(paren, absl::StrCat("unsupported method '", node->name, "'"));
          }
        } else {
          return Error(paren, "only functions and methods can be called");
        }
        std::vector<std::string> kwargs;
        KILN_ASSIGN_OR_RETURN(std::vector<ExprP> args, ParseArgs(&kwargs));
        args.insert(args.begin(), node);
        KILN_ASSIGN_OR_RETURN(node, Make(Expr::kCall, node->pos, node->name, std::move(args), std::move(kwargs)));
      } else {
        return node;
      }
    }
  }

  absl::StatusOr<ExprP> ParsePrimary() {
    const Token& t = Next();
    auto literal = [&](JinjaValue v) {
      return std::make_shared<Expr>(Expr{Expr::kLiteral, t.pos, std::move(v), "", {}, {}, false});
    };
    switch (t.kind) {
      case Tok::kString: {
        std::string text = t.text;
        // Adjacent string literals concatenate, as in Python.
        while (Peek().kind == Tok::kString) text += Next().text;
        return literal(JinjaValue::String(text));
      }
      case Tok::kInt: return literal(JinjaValue::Int(t.int_value));
      case Tok::kFloat: return literal(JinjaValue::Float(t.float_value));
      case Tok::kName: {
        if (t.text == "true" || t.text == "True") return literal(JinjaValue::Bool(true));
        if (t.text == "false" || t.text == "False") return literal(JinjaValue::Bool(false));
        if (t.text == "none" || t.text == "None") return literal(JinjaValue::None());
        return Make(Expr::kName, t.pos, t.text, {});
      }
      case Tok::kOp: {
        KILN_RETURN_IF_ERROR(Enter(t));
        Leave leave{&recursion_};
        if (t.text == "(") {
          KILN_ASSIGN_OR_RETURN(ExprP inner, ParseCond());
          if (IsOp(",")) return Error(Peek(), "unsupported construct: tuple");
          KILN_RETURN_IF_ERROR(Expect(")"));
          return inner;
        }
        if (t.text == "[") {
          std::vector<ExprP> items;
          while (!IsOp("]")) {
            KILN_ASSIGN_OR_RETURN(ExprP item, ParseCond());
            items.push_back(item);
            if (!IsOp(",")) break;
            Next();
          }
          KILN_RETURN_IF_ERROR(Expect("]"));
          return Make(Expr::kList, t.pos, "", std::move(items));
        }
        if (t.text == "{") {
          std::vector<ExprP> items;  // key, value, key, value, ...
          while (!IsOp("}")) {
            KILN_ASSIGN_OR_RETURN(ExprP key, ParseCond());
            KILN_RETURN_IF_ERROR(Expect(":"));
            KILN_ASSIGN_OR_RETURN(ExprP value, ParseCond());
            items.push_back(key);
            items.push_back(value);
            if (!IsOp(",")) break;
            Next();
          }
          KILN_RETURN_IF_ERROR(Expect("}"));
          return Make(Expr::kDict, t.pos, "", std::move(items));
        }
        break;
      }
      default: break;
    }
    return Error(t, absl::StrCat("expected an expression, found ", Describe(t)));
  }

  const std::vector<Token>& tokens_;
  size_t i_;
  const std::string& name_;
  int recursion_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Statements.

struct JinjaTemplate::Node {
  enum Kind { kBody, kText, kOutput, kIf, kFor, kSet } kind = kBody;
  Pos pos;
  std::string text;
  ExprP expr;                                    // output, set value, for iterable
  std::vector<std::shared_ptr<const Node>> body, else_body;
  std::vector<std::pair<ExprP, std::vector<std::shared_ptr<const Node>>>> branches;  // if / elif
  std::vector<std::string> targets;              // for variables; set: name [, attribute]
  ExprP filter;                                  // for ... if filter
};

namespace {

using Node = JinjaTemplate::Node;
using NodeP = std::shared_ptr<const Node>;

class StatementParser {
 public:
  StatementParser(const std::vector<Segment>& segments, const std::string& name) : segments_(segments), name_(name) {}

  absl::StatusOr<NodeP> ParseTemplate() {
    auto root = std::make_shared<Node>();
    std::string stop;
    KILN_RETURN_IF_ERROR(ParseBody({}, &root->body, &stop, nullptr));
    return root;
  }

 private:
  absl::Status Error(Pos pos, std::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": line ", pos.line, ", column ", pos.column, ": ", std::string(message)));
  }

  // Parses nodes until a block tag whose keyword is in `stops` (returned in `stop`, with the
  // tag's parser positioned after the keyword in `tag`).
  absl::Status ParseBody(const std::set<std::string>& stops, std::vector<NodeP>* body, std::string* stop,
                         const Segment** tag) {
    while (i_ < segments_.size()) {
      const Segment& s = segments_[i_++];
      switch (s.kind) {
        case Segment::kComment: break;
        case Segment::kText:
          if (!s.text.empty()) {
            auto node = std::make_shared<Node>();
            node->kind = Node::kText;
            node->pos = s.pos;
            node->text = s.text;
            body->push_back(node);
          }
          break;
        case Segment::kOutput: {
          ExprParser parser(s.tokens, 0, name_);
          KILN_ASSIGN_OR_RETURN(ExprP expr, parser.Parse());
          if (!parser.AtEnd()) return parser.Error(parser.Peek(), absl::StrCat("expected '}}', found ", ExprParser::Describe(parser.Peek())));
          auto node = std::make_shared<Node>();
          node->kind = Node::kOutput;
          node->pos = s.pos;
          node->expr = expr;
          body->push_back(node);
          break;
        }
        case Segment::kBlock: {
          if (s.tokens.empty() || s.tokens[0].kind != Tok::kName) return Error(s.pos, "expected a tag name after '{%'");
          const std::string& keyword = s.tokens[0].text;
          if (stops.count(keyword)) {
            *stop = keyword;
            if (tag != nullptr) *tag = &s;
            return absl::OkStatus();
          }
          if (keyword == "if") {
            KILN_RETURN_IF_ERROR(ParseIf(s, body));
          } else if (keyword == "for") {
            KILN_RETURN_IF_ERROR(ParseFor(s, body));
          } else if (keyword == "set") {
            KILN_RETURN_IF_ERROR(ParseSet(s, body));
          } else if (keyword == "elif" || keyword == "else" || keyword == "endif" || keyword == "endfor") {
            return Error(s.tokens[0].pos, absl::StrCat("unexpected '", keyword, "'"));
          } else {
            return Error(s.tokens[0].pos, absl::StrCat("unsupported tag '", keyword, "'"));
          }
          break;
        }
      }
    }
    if (!stops.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": the template ends inside a block (missing '{% ",
                                                     *stops.rbegin(), " %}')"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ExprP> ParseTagExpr(ExprParser* parser) {
    KILN_ASSIGN_OR_RETURN(ExprP expr, parser->Parse());
    if (!parser->AtEnd()) {
      return parser->Error(parser->Peek(), absl::StrCat("expected '%}', found ", ExprParser::Describe(parser->Peek())));
    }
    return expr;
  }

  // Bounds block nesting (ParseBody recursion).
  absl::Status Enter(const Segment& s) {
    if (++depth_ > kMaxDepth) return Error(s.pos, absl::StrCat("blocks nested more than ", kMaxDepth, " deep"));
    return absl::OkStatus();
  }
  struct Leave {
    int* depth;
    ~Leave() { --*depth; }
  };

  absl::Status ParseIf(const Segment& s, std::vector<NodeP>* body) {
    KILN_RETURN_IF_ERROR(Enter(s));
    Leave leave{&depth_};
    auto node = std::make_shared<Node>();
    node->kind = Node::kIf;
    node->pos = s.pos;
    const Segment* tag = &s;
    while (true) {
      ExprParser parser(tag->tokens, 1, name_);
      KILN_ASSIGN_OR_RETURN(ExprP cond, ParseTagExpr(&parser));
      std::vector<NodeP> branch;
      std::string stop;
      KILN_RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, &branch, &stop, &tag));
      node->branches.emplace_back(cond, std::move(branch));
      if (stop == "elif") continue;
      if (stop == "else") {
        KILN_RETURN_IF_ERROR(ExpectBare(*tag));
        KILN_RETURN_IF_ERROR(ParseBody({"endif"}, &node->else_body, &stop, &tag));
      }
      KILN_RETURN_IF_ERROR(ExpectBare(*tag));
      break;
    }
    body->push_back(node);
    return absl::OkStatus();
  }

  // else / endif / endfor take nothing after the keyword.
  absl::Status ExpectBare(const Segment& tag) {
    if (tag.tokens.size() > 2) {
      return Error(tag.tokens[1].pos, absl::StrCat("unexpected ", ExprParser::Describe(tag.tokens[1]), " after '",
                                                   tag.tokens[0].text, "'"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseFor(const Segment& s, std::vector<NodeP>* body) {
    KILN_RETURN_IF_ERROR(Enter(s));
    Leave leave{&depth_};
    auto node = std::make_shared<Node>();
    node->kind = Node::kFor;
    node->pos = s.pos;
    ExprParser parser(s.tokens, 1, name_);
    KILN_ASSIGN_OR_RETURN(std::string target, parser.ExpectName());
    node->targets.push_back(target);
    if (parser.IsOp(",")) {
      parser.Next();
      KILN_ASSIGN_OR_RETURN(std::string second, parser.ExpectName());
      node->targets.push_back(second);
    }
    if (!parser.IsName("in")) return parser.Error(parser.Peek(), "expected 'in' in a for loop");
    parser.Next();
    // The iterable stops before a loop filter's `if` (parsed below).
    KILN_ASSIGN_OR_RETURN(node->expr, ParseIterable(&parser));
    if (parser.IsName("if")) {
      parser.Next();
      KILN_ASSIGN_OR_RETURN(node->filter, ParseTagExpr(&parser));
    } else if (parser.IsName("recursive")) {
      return parser.Error(parser.Peek(), "unsupported construct: recursive loops");
    } else if (!parser.AtEnd()) {
      return parser.Error(parser.Peek(), absl::StrCat("expected '%}', found ", ExprParser::Describe(parser.Peek())));
    }
    std::string stop;
    const Segment* tag = nullptr;
    KILN_RETURN_IF_ERROR(ParseBody({"else", "endfor"}, &node->body, &stop, &tag));
    if (stop == "else") {
      KILN_RETURN_IF_ERROR(ExpectBare(*tag));
      KILN_RETURN_IF_ERROR(ParseBody({"endfor"}, &node->else_body, &stop, &tag));
    }
    KILN_RETURN_IF_ERROR(ExpectBare(*tag));
    body->push_back(node);
    return absl::OkStatus();
  }

  // `for x in EXPR if COND`: EXPR is parsed below the conditional expression so that its
  // `if` is the loop filter.
  absl::StatusOr<ExprP> ParseIterable(ExprParser* parser) {
    // Parse an or-expression: conditional expressions are not iterable in practice.
    std::vector<Token> head;
    size_t depth = 0, k = parser->position();
    // Find the loop filter's `if` at bracket depth 0.
    const Token* t;
    while ((t = &parser->Peek(k - parser->position()))->kind != Tok::kEnd) {
      if (t->kind == Tok::kOp && (t->text == "(" || t->text == "[" || t->text == "{")) ++depth;
      if (t->kind == Tok::kOp && (t->text == ")" || t->text == "]" || t->text == "}") && depth > 0) --depth;
      if (depth == 0 && t->kind == Tok::kName && (t->text == "if" || t->text == "recursive")) break;
      head.push_back(*t);
      ++k;
    }
    Token end;
    end.pos = t->pos;
    head.push_back(end);
    ExprParser sub(head, 0, name_);
    KILN_ASSIGN_OR_RETURN(ExprP iterable, sub.Parse());
    if (!sub.AtEnd()) return sub.Error(sub.Peek(), absl::StrCat("unexpected ", ExprParser::Describe(sub.Peek())));
    while (parser->position() < k) parser->Next();
    return iterable;
  }

  absl::Status ParseSet(const Segment& s, std::vector<NodeP>* body) {
    auto node = std::make_shared<Node>();
    node->kind = Node::kSet;
    node->pos = s.pos;
    ExprParser parser(s.tokens, 1, name_);
    KILN_ASSIGN_OR_RETURN(std::string target, parser.ExpectName());
    node->targets.push_back(target);
    if (parser.IsOp(".")) {
      parser.Next();
      KILN_ASSIGN_OR_RETURN(std::string attr, parser.ExpectName());
      node->targets.push_back(attr);
    }
    if (parser.IsOp(",")) return parser.Error(parser.Peek(), "unsupported construct: assignment to several names");
    if (parser.AtEnd()) return parser.Error(parser.Peek(), "unsupported construct: block assignment ({% set %}...{% endset %})");
    KILN_RETURN_IF_ERROR(parser.Expect("="));
    KILN_ASSIGN_OR_RETURN(node->expr, ParseTagExpr(&parser));
    body->push_back(node);
    return absl::OkStatus();
  }

  const std::vector<Segment>& segments_;
  const std::string& name_;
  size_t i_ = 0;
  int depth_ = 0;
};

// ---------------------------------------------------------------------------------------
// Rendering.

// Limits that keep a hostile template from hanging or exhausting memory: evaluation steps
// (expressions evaluated and loop iterations), and the length of any string it builds.
constexpr int64_t kMaxRange = 1 << 20;
constexpr int64_t kMaxSteps = 20'000'000;
constexpr size_t kMaxString = 16u << 20;

size_t CodePointCount(const std::string& text) {
  size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

std::string AsciiCase(std::string text, bool upper) {
  for (char& c : text) c = upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string Title(const std::string& text) {
  std::string out = text;
  bool start = true;
  for (char& c : out) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c));
    c = alpha ? static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c))) : c;
    start = !alpha;
  }
  return out;
}

std::string Strip(const std::string& text, bool left, bool right, const std::string& chars = " \t\n\r\f\v") {
  size_t b = 0, e = text.size();
  if (left) {
    while (b < e && chars.find(text[b]) != std::string::npos) ++b;
  }
  if (right) {
    while (e > b && chars.find(text[e - 1]) != std::string::npos) --e;
  }
  return text.substr(b, e - b);
}

class Renderer {
 public:
  Renderer(const std::string& name, const std::map<std::string, JinjaValue>& variables) : name_(name) {
    scopes_.emplace_back(variables.begin(), variables.end());
  }

  absl::Status Render(const std::vector<NodeP>& body, std::string* out) {
    for (const NodeP& node : body) KILN_RETURN_IF_ERROR(RenderNode(*node, out));
    return absl::OkStatus();
  }

 private:
  absl::Status Error(Pos pos, std::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": line ", pos.line, ", column ", pos.column, ": ", std::string(message)));
  }

  absl::Status RenderNode(const Node& node, std::string* out) {
    switch (node.kind) {
      case Node::kBody: return Render(node.body, out);
      case Node::kText:
      case Node::kOutput: {
        if (node.kind == Node::kText) {
          *out += node.text;
        } else {
          KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*node.expr));
          *out += value.ToString();
        }
        if (out->size() > kMaxString) {
          return Error(node.pos, absl::StrCat("the output is longer than ", kMaxString, " bytes"));
        }
        return absl::OkStatus();
      }
      case Node::kIf: {
        for (const auto& [cond, branch] : node.branches) {
          KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*cond));
          if (value.Truthy()) return Render(branch, out);
        }
        return Render(node.else_body, out);
      }
      case Node::kSet: {
        KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*node.expr));
        if (node.targets.size() == 1) {
          scopes_.back()[node.targets[0]] = std::move(value);
          return absl::OkStatus();
        }
        JinjaValue target = Lookup(node.targets[0]);
        if (!target.is_namespace()) {
          return Error(node.pos, absl::StrCat("cannot set attribute '", node.targets[1], "' of ",
                                              std::string(target.TypeName()), " '", node.targets[0],
                                              "' (only a namespace's)"));
        }
        target.SetAttribute(node.targets[1], std::move(value));
        return absl::OkStatus();
      }
      case Node::kFor: return RenderFor(node, out);
    }
    return absl::OkStatus();
  }

  absl::Status Bind(const Node& node, const JinjaValue& item, std::map<std::string, JinjaValue>* scope) {
    if (node.targets.size() == 1) {
      (*scope)[node.targets[0]] = item;
      return absl::OkStatus();
    }
    if (item.kind() != JinjaValue::Kind::kList || item.AsList().size() != node.targets.size()) {
      return Error(node.pos, absl::StrCat("cannot unpack ", std::string(item.TypeName()), " into ",
                                          node.targets.size(), " loop variables"));
    }
    for (size_t k = 0; k < node.targets.size(); ++k) (*scope)[node.targets[k]] = item.AsList()[k];
    return absl::OkStatus();
  }

  absl::Status RenderFor(const Node& node, std::string* out) {
    KILN_ASSIGN_OR_RETURN(JinjaValue iterable, Eval(*node.expr));
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(iterable, node.pos));
    if (node.filter) {
      std::vector<JinjaValue> kept;
      for (const JinjaValue& item : items) {
        scopes_.emplace_back();
        absl::Status bound = Bind(node, item, &scopes_.back());
        absl::StatusOr<JinjaValue> keep = bound.ok() ? Eval(*node.filter) : absl::StatusOr<JinjaValue>(bound);
        scopes_.pop_back();
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) kept.push_back(item);
      }
      items.swap(kept);
    }
    if (items.empty()) return Render(node.else_body, out);
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      KILN_RETURN_IF_ERROR(Step(node.pos));
      scopes_.emplace_back();
      KILN_RETURN_IF_ERROR(Bind(node, items[static_cast<size_t>(i)], &scopes_.back()));
      scopes_.back()["loop"] = JinjaValue::MakeDict({
          {"index", JinjaValue::Int(i + 1)},
          {"index0", JinjaValue::Int(i)},
          {"revindex", JinjaValue::Int(n - i)},
          {"revindex0", JinjaValue::Int(n - i - 1)},
          {"first", JinjaValue::Bool(i == 0)},
          {"last", JinjaValue::Bool(i == n - 1)},
          {"length", JinjaValue::Int(n)},
          {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : JinjaValue()},
          {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : JinjaValue()},
      });
      absl::Status status = Render(node.body, out);
      scopes_.pop_back();
      KILN_RETURN_IF_ERROR(status);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<JinjaValue>> Iterate(const JinjaValue& value, Pos pos) {
    std::vector<JinjaValue> items;
    switch (value.kind()) {
      case JinjaValue::Kind::kUndefined: return items;
      case JinjaValue::Kind::kList: return value.AsList();
      case JinjaValue::Kind::kDict:
        for (const auto& [key, v] : value.AsDict()) items.push_back(JinjaValue::String(key));
        return items;
      case JinjaValue::Kind::kString: {
        const std::string& text = value.AsString();
        for (size_t i = 0; i < text.size();) {
          size_t n = 1;
          while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
          items.push_back(JinjaValue::String(text.substr(i, n)));
          i += n;
        }
        return items;
      }
      default: return Error(pos, absl::StrCat("cannot iterate over ", std::string(value.TypeName())));
    }
  }

  JinjaValue Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return JinjaValue();
  }

  absl::StatusOr<JinjaValue> Item(const JinjaValue& object, const JinjaValue& key, Pos pos, const std::string& what) {
    switch (object.kind()) {
      case JinjaValue::Kind::kUndefined:
        return Error(pos, absl::StrCat("cannot read ", what, " of an undefined value"));
      case JinjaValue::Kind::kDict: {
        if (key.kind() != JinjaValue::Kind::kString) return JinjaValue();
        const JinjaValue* v = object.Find(key.AsString());
        return v != nullptr ? *v : JinjaValue();
      }
      case JinjaValue::Kind::kList:
      case JinjaValue::Kind::kString: {
        if (key.kind() != JinjaValue::Kind::kInt) return JinjaValue();
        KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(object, pos));
        int64_t i = key.AsInt();
        const auto n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return JinjaValue();
        return items[static_cast<size_t>(i)];
      }
      default: return JinjaValue();
    }
  }

  absl::Status Step(Pos pos) {
    if (++steps_ > kMaxSteps) return Error(pos, absl::StrCat("the template takes more than ", kMaxSteps, " steps"));
    return absl::OkStatus();
  }

  absl::StatusOr<JinjaValue> Text(std::string text, Pos pos) {
    if (text.size() > kMaxString) return Error(pos, absl::StrCat("a string longer than ", kMaxString, " bytes"));
    return JinjaValue::String(std::move(text));
  }

  absl::StatusOr<JinjaValue> Eval(const Expr& e) {
    KILN_RETURN_IF_ERROR(Step(e.pos));
    switch (e.kind) {
      case Expr::kLiteral: return e.literal;
      case Expr::kName: return Lookup(e.name);
      case Expr::kList: {
        JinjaValue::List items;
        for (const ExprP& item : e.args) {
          KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*item));
          items.push_back(std::move(v));
        }
        return JinjaValue::MakeList(std::move(items));
      }
      case Expr::kDict: {
        JinjaValue::Dict items;
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          KILN_ASSIGN_OR_RETURN(JinjaValue key, Eval(*e.args[k]));
          KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*e.args[k + 1]));
          if (key.kind() != JinjaValue::Kind::kString) return Error(e.args[k]->pos, "dictionary keys must be strings");
          items.emplace_back(key.AsString(), std::move(value));
        }
        return JinjaValue::MakeDict(std::move(items));
      }
      case Expr::kAttr: {
        KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*e.args[0]));
        return Item(object, JinjaValue::String(e.name), e.pos, absl::StrCat("attribute '", e.name, "'"));
      }
      case Expr::kIndex: {
        KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*e.args[0]));
        KILN_ASSIGN_OR_RETURN(JinjaValue key, Eval(*e.args[1]));
        return Item(object, key, e.pos, absl::StrCat("item ", key.Repr()));
      }
      case Expr::kSlice: return EvalSlice(e);
      case Expr::kNeg: {
        KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[0]));
        if (v.kind() == JinjaValue::Kind::kFloat) return JinjaValue::Float(-v.AsFloat());
        if (v.is_number()) return JinjaValue::Int(-v.AsInt());
        return Error(e.pos, absl::StrCat("cannot negate ", std::string(v.TypeName())));
      }
      case Expr::kNot: {
        KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[0]));
        return JinjaValue::Bool(!v.Truthy());
      }
      case Expr::kAnd: {
        KILN_ASSIGN_OR_RETURN(JinjaValue a, Eval(*e.args[0]));
        if (!a.Truthy()) return a;
        return Eval(*e.args[1]);
      }
      case Expr::kOr: {
        KILN_ASSIGN_OR_RETURN(JinjaValue a, Eval(*e.args[0]));
        if (a.Truthy()) return a;
        return Eval(*e.args[1]);
      }
      case Expr::kCond: {
        KILN_ASSIGN_OR_RETURN(JinjaValue cond, Eval(*e.args[0]));
        return Eval(*e.args[cond.Truthy() ? 1 : 2]);
      }
      case Expr::kBinary: return EvalBinary(e);
      case Expr::kFilter: return EvalFilter(e);
      case Expr::kTest: return EvalTest(e);
      case Expr::kCall: return EvalCall(e);
    }
    return JinjaValue();
  }

  absl::StatusOr<JinjaValue> EvalSlice(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*e.args[0]));
    KILN_ASSIGN_OR_RETURN(JinjaValue start_value, Eval(*e.args[1]));
    KILN_ASSIGN_OR_RETURN(JinjaValue stop_value, Eval(*e.args[2]));
    if (object.kind() != JinjaValue::Kind::kList && object.kind() != JinjaValue::Kind::kString) {
      return Error(e.pos, absl::StrCat("cannot slice ", std::string(object.TypeName())));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(object, e.pos));
    const auto n = static_cast<int64_t>(items.size());
    auto clamp = [&](const JinjaValue& v, int64_t fallback) {
      if (!v.is_number()) return fallback;
      int64_t i = v.AsInt();
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, 0, n);
    };
    const int64_t start = clamp(start_value, 0), stop = clamp(stop_value, n);
    if (object.kind() == JinjaValue::Kind::kString) {
      std::string text;
      for (int64_t i = start; i < stop; ++i) text += items[static_cast<size_t>(i)].AsString();
      return JinjaValue::String(text);
    }
    return JinjaValue::MakeList(stop > start ? JinjaValue::List(items.begin() + start, items.begin() + stop)
                                             : JinjaValue::List());
  }

  absl::StatusOr<JinjaValue> EvalBinary(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(JinjaValue a, Eval(*e.args[0]));
    KILN_ASSIGN_OR_RETURN(JinjaValue b, Eval(*e.args[1]));
    const std::string& op = e.name;
    using K = JinjaValue::Kind;
    auto mismatch = [&]() {
      return Error(e.pos, absl::StrCat("cannot apply '", op, "' to ", std::string(a.TypeName()), " and ",
                                       std::string(b.TypeName())));
    };
    if (op == "==") return JinjaValue::Bool(a.Equals(b));
    if (op == "!=") return JinjaValue::Bool(!a.Equals(b));
    if (op == "~") return Text(a.ToString() + b.ToString(), e.pos);
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.kind() == K::kString) {
        if (a.kind() != K::kString) return mismatch();
        found = b.AsString().find(a.AsString()) != std::string::npos;
      } else if (b.kind() == K::kList) {
        for (const JinjaValue& item : b.AsList()) found = found || item.Equals(a);
      } else if (b.kind() == K::kDict) {
        found = a.kind() == K::kString && b.Find(a.AsString()) != nullptr;
      } else {
        return mismatch();
      }
      return JinjaValue::Bool(op == "in" ? found : !found);
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int order;
      if (a.is_number() && b.is_number()) {
        order = a.AsFloat() < b.AsFloat() ? -1 : a.AsFloat() > b.AsFloat() ? 1 : 0;
      } else if (a.kind() == K::kString && b.kind() == K::kString) {
        order = a.AsString().compare(b.AsString());
      } else {
        return mismatch();
      }
      return JinjaValue::Bool(op == "<" ? order < 0 : op == "<=" ? order <= 0 : op == ">" ? order > 0 : order >= 0);
    }
    if (op == "+") {
      if (a.kind() == K::kString && b.kind() == K::kString) return Text(a.AsString() + b.AsString(), e.pos);
      if (a.kind() == K::kList && b.kind() == K::kList) {
        JinjaValue::List items = a.AsList();
        items.insert(items.end(), b.AsList().begin(), b.AsList().end());
        return JinjaValue::MakeList(std::move(items));
      }
    }
    if (op == "*" && a.kind() == K::kString && (b.kind() == K::kInt)) {
      if (b.AsInt() > 0 && a.AsString().size() * static_cast<uint64_t>(b.AsInt()) > kMaxString) {
        return Error(e.pos, absl::StrCat("a string longer than ", kMaxString, " bytes"));
      }
      std::string text;
      for (int64_t i = 0; i < b.AsInt(); ++i) text += a.AsString();
      return JinjaValue::String(text);
    }
    if (!a.is_number() || !b.is_number()) return mismatch();
    const bool floats = a.kind() == K::kFloat || b.kind() == K::kFloat;
    const double x = a.AsFloat(), y = b.AsFloat();
    const int64_t i = a.AsInt(), j = b.AsInt();
    if (op == "+") return floats ? JinjaValue::Float(x + y) : JinjaValue::Int(i + j);
    if (op == "-") return floats ? JinjaValue::Float(x - y) : JinjaValue::Int(i - j);
    if (op == "*") return floats ? JinjaValue::Float(x * y) : JinjaValue::Int(i * j);
    if (op == "**") return floats || j < 0 ? JinjaValue::Float(std::pow(x, y)) : JinjaValue::Int(static_cast<int64_t>(std::pow(x, y)));
    if (y == 0) return Error(e.pos, "division by zero");
    if (op == "/") return JinjaValue::Float(x / y);
    if (op == "//") {
      if (floats) return JinjaValue::Float(std::floor(x / y));
      int64_t q = i / j;
      if ((i % j != 0) && ((i < 0) != (j < 0))) --q;
      return JinjaValue::Int(q);
    }
    if (op == "%") {
      if (floats) return JinjaValue::Float(x - y * std::floor(x / y));
      int64_t r = i % j;
      if (r != 0 && ((r < 0) != (j < 0))) r += j;
      return JinjaValue::Int(r);
    }
    return mismatch();
  }

  absl::StatusOr<std::vector<JinjaValue>> EvalArgs(const Expr& e, size_t from) {
    std::vector<JinjaValue> args;
    for (size_t k = from; k < e.args.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[k]));
      args.push_back(std::move(v));
    }
    return args;
  }

  absl::Status Arity(const Expr& e, const std::vector<JinjaValue>& args, size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi) {
      return Error(e.pos, absl::StrCat("'", e.name, "' takes ", lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, " to ", hi),
                                       " argument", hi == 1 ? "" : "s", ", got ", args.size()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<JinjaValue> EvalFilter(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> all, EvalArgs(e, 0));
    const JinjaValue v = all[0];
    std::vector<JinjaValue> args(all.begin() + 1, all.end());
    const std::string& f = e.name;
    using K = JinjaValue::Kind;
    auto needs = [&](K kind) -> absl::Status {
      if (v.kind() != kind) {
        return Error(e.pos, absl::StrCat("filter '", f, "' cannot take ", std::string(v.TypeName())));
      }
      return absl::OkStatus();
    };
    if (f == "default" || f == "d") {
      KILN_RETURN_IF_ERROR(Arity(e, args, 0, 2));
      const bool boolean = args.size() > 1 && args[1].Truthy();
      if (v.is_undefined() || (boolean && !v.Truthy())) return args.empty() ? JinjaValue::String("") : args[0];
      return v;
    }
    if (f == "safe") return v;
    if (f == "string") return JinjaValue::String(v.ToString());
    if (f == "tojson") return JinjaValue::String(v.ToJson());
    if (f == "length" || f == "count") {
      if (v.kind() == K::kString) return JinjaValue::Int(static_cast<int64_t>(CodePointCount(v.AsString())));
      if (v.kind() == K::kList) return JinjaValue::Int(static_cast<int64_t>(v.AsList().size()));
      if (v.kind() == K::kDict) return JinjaValue::Int(static_cast<int64_t>(v.AsDict().size()));
      return Error(e.pos, absl::StrCat("filter '", f, "' cannot take ", std::string(v.TypeName())));
    }
    if (f == "int") {
      if (v.is_number()) return JinjaValue::Int(v.AsInt());
      if (v.kind() == K::kString) return JinjaValue::Int(std::strtoll(v.AsString().c_str(), nullptr, 10));
      return JinjaValue::Int(0);
    }
    if (f == "float") {
      if (v.is_number()) return JinjaValue::Float(v.AsFloat());
      if (v.kind() == K::kString) return JinjaValue::Float(std::strtod(v.AsString().c_str(), nullptr));
      return JinjaValue::Float(0);
    }
    if (f == "items") {
      KILN_RETURN_IF_ERROR(needs(K::kDict));
      return Items(v);
    }
    if (f == "first" || f == "last" || f == "list" || f == "reverse" || f == "join") {
      KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(v, e.pos));
      if (f == "first") return items.empty() ? JinjaValue() : items.front();
      if (f == "last") return items.empty() ? JinjaValue() : items.back();
      if (f == "list") return JinjaValue::MakeList(std::move(items));
      if (f == "reverse") {
        std::reverse(items.begin(), items.end());
        if (v.kind() != K::kString) return JinjaValue::MakeList(std::move(items));
        std::string text;
        for (const JinjaValue& c : items) text += c.AsString();
        return JinjaValue::String(text);
      }
      KILN_RETURN_IF_ERROR(Arity(e, args, 0, 1));
      const std::string sep = args.empty() ? "" : args[0].ToString();
      std::string text;
      for (size_t k = 0; k < items.size() && text.size() <= kMaxString; ++k) {
        absl::StrAppend(&text, k ? sep : "", items[k].ToString());
      }
      return Text(std::move(text), e.pos);
    }
    KILN_RETURN_IF_ERROR(needs(K::kString));
    const std::string& s = v.AsString();
    if (f == "trim") return JinjaValue::String(Strip(s, true, true));
    if (f == "upper") return JinjaValue::String(AsciiCase(s, true));
    if (f == "lower") return JinjaValue::String(AsciiCase(s, false));
    if (f == "title") return JinjaValue::String(Title(s));
    if (f == "capitalize") {
      std::string out = AsciiCase(s, false);
      if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
      return JinjaValue::String(out);
    }
    return Error(e.pos, absl::StrCat("unsupported filter '", f, "'"));
  }

  static JinjaValue Items(const JinjaValue& dict) {
    JinjaValue::List items;
    for (const auto& [key, value] : dict.AsDict()) items.push_back(JinjaValue::MakeList({JinjaValue::String(key), value}));
    return JinjaValue::MakeList(std::move(items));
  }

  absl::StatusOr<JinjaValue> EvalTest(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[0]));
    using K = JinjaValue::Kind;
    const std::string& t = e.name;
    bool result = false;
    if (t == "defined") result = !v.is_undefined();
    else if (t == "undefined") result = v.is_undefined();
    else if (t == "none") result = v.kind() == K::kNone;
    else if (t == "string") result = v.kind() == K::kString;
    else if (t == "number") result = v.is_number();
    else if (t == "integer") result = v.kind() == K::kInt;
    else if (t == "float") result = v.kind() == K::kFloat;
    else if (t == "boolean") result = v.kind() == K::kBool;
    else if (t == "true") result = v.kind() == K::kBool && v.AsBool();
    else if (t == "false") result = v.kind() == K::kBool && !v.AsBool();
    else if (t == "mapping") result = v.kind() == K::kDict;
    else if (t == "sequence" || t == "iterable") result = v.kind() == K::kList || v.kind() == K::kString || v.kind() == K::kDict;
    else if (t == "even" || t == "odd") {
      if (v.kind() != K::kInt) return Error(e.pos, absl::StrCat("test '", t, "' needs an integer"));
      result = (v.AsInt() % 2 == 0) == (t == "even");
    }
    return JinjaValue::Bool(e.negate ? !result : result);
  }

  absl::StatusOr<JinjaValue> EvalCall(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::kName) {
      KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> args, EvalArgs(e, 1));
      if (e.name == "raise_exception") {
        return Error(e.pos, absl::StrCat("the template raised an error: ", args.empty() ? "" : args[0].ToString()));
      }
      if (e.name == "namespace") {
        if (args.size() != e.kwargs.size()) return Error(e.pos, "namespace() takes keyword arguments only");
        JinjaValue::Dict items;
        for (size_t k = 0; k < args.size(); ++k) items.emplace_back(e.kwargs[k], args[k]);
        return JinjaValue::MakeNamespace(std::move(items));
      }
      // range(stop) or range(start, stop)
      KILN_RETURN_IF_ERROR(Arity(e, args, 1, 2));
      for (const JinjaValue& a : args) {
        if (a.kind() != JinjaValue::Kind::kInt) return Error(e.pos, "range() takes integers");
      }
      const int64_t start = args.size() == 2 ? args[0].AsInt() : 0;
      const int64_t stop = args.back().AsInt();
      if (stop - start > kMaxRange) return Error(e.pos, absl::StrCat("range() of more than ", kMaxRange, " numbers"));
      JinjaValue::List items;
      for (int64_t i = start; i < stop; ++i) items.push_back(JinjaValue::Int(i));
      return JinjaValue::MakeList(std::move(items));
    }
    // A method: callee is x.name.
    KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*callee.args[0]));
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> args, EvalArgs(e, 1));
    const std::string& m = e.name;
    using K = JinjaValue::Kind;
    if (object.kind() == K::kDict) {
      if (m == "items") return Items(object);
      if (m == "keys" || m == "values") {
        JinjaValue::List items;
        for (const auto& [key, value] : object.AsDict()) items.push_back(m == "keys" ? JinjaValue::String(key) : value);
        return JinjaValue::MakeList(std::move(items));
      }
      if (m == "get") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 1, 2));
        const JinjaValue* found = args[0].kind() == K::kString ? object.Find(args[0].AsString()) : nullptr;
        if (found != nullptr) return *found;
        return args.size() > 1 ? args[1] : JinjaValue::None();
      }
    }
    if (object.kind() == K::kString) {
      const std::string& s = object.AsString();
      auto string_arg = [&](size_t k) { return args.size() > k && args[k].kind() == K::kString; };
      if (m == "strip" || m == "lstrip" || m == "rstrip") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 0, 1));
        const std::string chars = string_arg(0) ? args[0].AsString() : " \t\n\r\f\v";
        return JinjaValue::String(Strip(s, m != "rstrip", m != "lstrip", chars));
      }
      if (m == "upper" || m == "lower") return JinjaValue::String(AsciiCase(s, m == "upper"));
      if (m == "title") return JinjaValue::String(Title(s));
      if (m == "startswith" || m == "endswith") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 1, 1));
        if (!string_arg(0)) return Error(e.pos, absl::StrCat("'", m, "' takes a string"));
        const std::string& x = args[0].AsString();
        const bool hit = x.size() <= s.size() &&
                         (m == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
        return JinjaValue::Bool(hit);
      }
      if (m == "split") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 0, 1));
        JinjaValue::List parts;
        if (!string_arg(0)) {  // on runs of whitespace
          size_t i = 0;
          while (i < s.size()) {
            while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
            size_t j = i;
            while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
            if (j > i) parts.push_back(JinjaValue::String(s.substr(i, j - i)));
            i = j;
          }
        } else {
          const std::string& sep = args[0].AsString();
          if (sep.empty()) return Error(e.pos, "split() with an empty separator");
          size_t i = 0, j;
          while ((j = s.find(sep, i)) != std::string::npos) {
            parts.push_back(JinjaValue::String(s.substr(i, j - i)));
            i = j + sep.size();
          }
          parts.push_back(JinjaValue::String(s.substr(i)));
        }
        return JinjaValue::MakeList(std::move(parts));
      }
      if (m == "replace") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 2, 2));
        if (!string_arg(0) || !string_arg(1)) return Error(e.pos, "replace() takes strings");
        const std::string& from = args[0].AsString();
        const std::string& to = args[1].AsString();
        if (from.empty()) return JinjaValue::String(s);
        std::string out;
        size_t i = 0, j;
        while ((j = s.find(from, i)) != std::string::npos) {
          out += s.substr(i, j - i) + to;
          i = j + from.size();
        }
        return JinjaValue::String(out + s.substr(i));
      }
    }
    return Error(e.pos, absl::StrCat(std::string(object.TypeName()), " has no method '", m, "'"));
  }

  const std::string& name_;
  std::vector<std::map<std::string, JinjaValue>> scopes_;
  int64_t steps_ = 0;
};

}  // namespace

absl::StatusOr<JinjaTemplate> JinjaTemplate::Parse(std::string_view source, std::string name) {
  JinjaTemplate result;
  result.name_ = std::move(name);
  Splitter splitter(source, result.name_);
  KILN_ASSIGN_OR_RETURN(std::vector<Segment> segments, splitter.Split());
  StatementParser parser(segments, result.name_);
  KILN_ASSIGN_OR_RETURN(result.root_, parser.ParseTemplate());
  return result;
}

absl::StatusOr<std::string> JinjaTemplate::Render(const std::map<std::string, JinjaValue>& variables) const {
  Renderer renderer(name_, variables);
  std::string out;
  KILN_RETURN_IF_ERROR(renderer.Render(root_->body, &out));
  return out;
}

}  // namespace kiln::serving
