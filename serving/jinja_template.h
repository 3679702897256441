// A Jinja subset interpreter, enough for the chat templates that GGUF files carry
// (tokenizer.chat_template): ChatML-style (SmolLM2, Qwen2), Llama-3-style and the like.
// Templates render as Hugging Face transformers renders them: Jinja with trim_blocks (the
// first newline after a block tag is removed) and lstrip_blocks (spaces and tabs before a
// block tag at the start of a line are removed).
//
// Supported:
//   {{ expr }}, {# comments #}, whitespace control {%- -%} {{- -}} {#- -#}, {%+ (no lstrip);
//   {% if %}{% elif %}{% else %}{% endif %};
//   {% for x in xs [if cond] %}...{% else %}...{% endfor %} (also `for k, v in d.items()`),
//     with loop.index, index0, revindex, revindex0, first, last, length, previtem, nextitem;
//     every iteration has its own scope, as in Jinja;
//   {% set x = expr %}, {% set ns.attr = expr %} on a namespace(...);
//   literals (strings with \n \t \r \\ \' \" escapes, integers, floats, true/false/none in
//     either case, lists, dicts), names, x.attr, x['key'], x[i], x[a:b];
//   operators: `a if c else b`, or, and, not, == != < <= > >=, in, not in, is [not] TEST,
//     + - (numbers, string and list +), ~ (string concatenation), * / // % **, unary -;
//   filters: trim, length, count, upper, lower, capitalize, title, default(d), string, int,
//     float, first, last, join(sep), list, reverse, tojson, items, safe;
//   tests: defined, undefined, none, string, number, integer, float, boolean, mapping,
//     sequence, iterable, true, false, even, odd;
//   functions: raise_exception(message), namespace(k=v, ...), range(n | a, b);
//   methods: strip, lstrip, rstrip, upper, lower, startswith, endswith, split, replace,
//     title (strings); items, keys, values, get (dicts).
// Anything else (macros, includes, blocks, call, filter blocks, other filters, tests or
// functions) is refused when the template is parsed, with an error naming the construct and
// its line and column; errors while rendering (raise_exception, adding a string to a
// number, an attribute of an undefined value) name the line and column too. A template comes
// from a file, so its cost is bounded: expressions and blocks nest at most 200 deep, a render
// takes at most 2 million steps (expressions and loop iterations), strings and the output
// are at most 16 MiB, lists at most 2^20 items; beyond that it fails with an error. Integers
// are 64-bit: arithmetic whose result does not fit (Python's would grow) is an error, as is
// `int` of a float beyond that range or NaN.
//
// Implementation: serving/jinja_syntax.h (the tree), jinja_lexer.cc, jinja_parser.cc,
// jinja_renderer.cc.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "serving/jinja_value.h"

namespace kiln::serving {

namespace jinja {
struct Node;
}  // namespace jinja

class JinjaTemplate {
 public:

  // `name` stands for the template in errors ("chat template: line 1, column 5: ...").
  static absl::StatusOr<JinjaTemplate> Parse(std::string_view source, std::string name = "template");

  absl::StatusOr<std::string> Render(const std::map<std::string, JinjaValue>& variables) const;

 private:
  std::string name_;
  std::shared_ptr<const jinja::Node> root_;
};

}  // namespace kiln::serving
