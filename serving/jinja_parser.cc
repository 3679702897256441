#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "serving/jinja_syntax.h"
#include "support/status_macros.h"

namespace kiln::serving::jinja {
namespace {

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

  absl::Status Error(const Token& at, std::string_view message) const { return jinja::Error(name_, at.pos, message); }
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
      return jinja::Error(name_, pos, absl::StrCat("expression nested more than ", kMaxDepth, " deep"));
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
  absl::Status Error(Pos pos, std::string_view message) const { return jinja::Error(name_, pos, message); }

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

}  // namespace

absl::StatusOr<NodeP> ParseSegments(const std::vector<Segment>& segments, const std::string& name) {
  return StatementParser(segments, name).ParseTemplate();
}

}  // namespace kiln::serving::jinja
