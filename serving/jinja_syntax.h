// The internals of the Jinja interpreter (serving/jinja_template.h), shared by its three
// stages: the lexer splits the source into text, output, block and comment segments with
// their tokens (trim_blocks, lstrip_blocks and "-" applied); the parser builds the tree of
// nodes and expressions; the renderer evaluates it. Not an API for other code.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "serving/jinja_value.h"

namespace kiln::serving::jinja {

// A line and column of the template source, 1-based, for errors.
struct Pos {
  int line = 1;
  int column = 1;
};

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

// "<template>: line L, column C: message", the form of every error.
absl::Status Error(const std::string& name, Pos pos, std::string_view message);

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

struct Node {
  enum Kind { kBody, kText, kOutput, kIf, kFor, kSet } kind = kBody;
  Pos pos;
  std::string text;
  ExprP expr;                                    // output, set value, for iterable
  std::vector<std::shared_ptr<const Node>> body, else_body;
  std::vector<std::pair<ExprP, std::vector<std::shared_ptr<const Node>>>> branches;  // if / elif
  std::vector<std::string> targets;              // for variables; set: name [, attribute]
  ExprP filter;                                  // for ... if filter
};
using NodeP = std::shared_ptr<const Node>;

// The stages.
absl::StatusOr<std::vector<Segment>> SplitTemplate(std::string_view source, const std::string& name);
absl::StatusOr<NodeP> ParseSegments(const std::vector<Segment>& segments, const std::string& name);
absl::StatusOr<std::string> RenderTemplate(const Node& root, const std::string& name,
                                           const std::map<std::string, JinjaValue>& variables);

}  // namespace kiln::serving::jinja
