#include "serving/chat_template.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/file_io.h"
#include "tests/formats/tiny_llama_gguf.h"
#include "tests/model_path.h"

namespace kiln::serving {
namespace {

#include "tests/serving/token_cases.inc"

using ::testing::HasSubstr;

std::vector<ChatMessage> Messages(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<ChatMessage> messages;
  for (const auto& [role, content] : pairs) messages.push_back({role, content});
  return messages;
}

// Expected strings rendered by jinja2 (tests/serving/make_token_cases.py).
TEST(ChatTemplate, SmolLm2TemplateFromTheBundledModel) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  auto file = formats::GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto tokenizer = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::FromGguf(**file, **tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status();
  for (const TemplateCase& c : kSmolLmTemplateCases) {
    absl::StatusOr<std::string> prompt = chat->Apply(Messages(c.messages), c.add_generation_prompt);
    ASSERT_TRUE(prompt.ok()) << prompt.status();
    EXPECT_EQ(*prompt, c.expected);
  }
  // The 3-message conversation, written out.
  EXPECT_EQ(*chat->Apply(Messages({{"system", "You are a pirate."}, {"user", "Hello!"}, {"assistant", "Arr, hello matey."}}),
                         true),
            "<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\nArr, hello matey.<|im_end|>\n<|im_start|>assistant\n");
  // The prompt encodes with control tokens.
  std::vector<int32_t> ids = *(*tokenizer)->Encode(*chat->Apply(Messages({{"user", "Hi"}}), true), true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 3);
}

// A GGUF of the tiny tokenizer (tests/formats/tiny_llama_gguf.h) without a chat template,
// plus `extra` keys, opened from a temporary file.
std::shared_ptr<const formats::GgufFile> TinyTokenizerFile(const std::string& name,
                                                           const std::function<void(formats::testing::GgufWriter&)>& extra) {
  formats::testing::GgufWriter w;
  formats::testing::AddTinyTokenizer(w, 80, /*chat_template=*/false);
  extra(w);
  const std::string path = ::testing::TempDir() + "/chat_template_" + name + ".gguf";
  EXPECT_TRUE(support::WriteFile(path, w.Build()).ok());
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> file = formats::GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status();
  std::remove(path.c_str());
  return file.ok() ? *file : nullptr;
}

// Without tokenizer.chat_template, llama.cpp (common_chat_templates_init) takes the file's
// tokenizer.chat_template.tool_use, else ChatML; Kiln does the same and says which.
TEST(ChatTemplate, WithoutATemplateFallsBackAsLlamaCppDoes) {
  using formats::testing::Str;
  auto none = TinyTokenizerFile("none", [](formats::testing::GgufWriter&) {});
  ASSERT_NE(none, nullptr);
  auto tokenizer = Tokenizer::FromGguf(*none);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::FromGguf(*none, **tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->fallback(), "ChatML");
  // llama.cpp's ChatML: each message "<|im_start|>ROLE\nCONTENT<|im_end|>\n", then the
  // assistant's turn; no system message is added.
  const std::vector<ChatMessage> conversation =
      Messages({{"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}, {"user", "Bye"}});
  EXPECT_EQ(*chat->Apply(conversation, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(*chat->Apply(Messages({{"user", "Hi"}}), false), "<|im_start|>user\nHi<|im_end|>\n");
  // Its control tokens are the vocabulary's (ids 1 and 2), not text.
  std::vector<int32_t> ids = *(*tokenizer)->EncodeChatPrompt(*chat->Apply(Messages({{"user", "Hi"}}), true));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);

  // Only a tool-use template: that one.
  auto tool_use = TinyTokenizerFile("tool_use", [](formats::testing::GgufWriter& w) {
    w.Add("tokenizer.chat_template.tool_use", Str("{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"));
  });
  ASSERT_NE(tool_use, nullptr);
  chat = ChatTemplate::FromGguf(*tool_use, **tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->fallback(), "tokenizer.chat_template.tool_use");
  EXPECT_EQ(*chat->Apply(Messages({{"user", "Hi"}}), true), "[user] Hi");

  // The file's own template: no fallback. One that does not parse, or a key of another type,
  // stays an error (ChatML in its place would silently be the wrong format).
  auto own = TinyTokenizerFile("own", [](formats::testing::GgufWriter& w) {
    w.Add("tokenizer.chat_template", Str("{{ messages[0].content }}!"));
  });
  ASSERT_NE(own, nullptr);
  chat = ChatTemplate::FromGguf(*own, **tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->fallback(), "");
  EXPECT_EQ(*chat->Apply(Messages({{"user", "Hi"}}), true), "Hi!");
  auto broken = TinyTokenizerFile("broken", [](formats::testing::GgufWriter& w) {
    w.Add("tokenizer.chat_template", Str("{% macro m() %}{% endmacro %}"));
  });
  ASSERT_NE(broken, nullptr);
  chat = ChatTemplate::FromGguf(*broken, **tokenizer);
  ASSERT_FALSE(chat.ok());
  EXPECT_THAT(chat.status().message(), HasSubstr("unsupported tag 'macro'"));
  auto number = TinyTokenizerFile("number", [](formats::testing::GgufWriter& w) {
    w.Add("tokenizer.chat_template", formats::testing::U32(7));
  });
  ASSERT_NE(number, nullptr);
  chat = ChatTemplate::FromGguf(*number, **tokenizer);
  ASSERT_FALSE(chat.ok());
  EXPECT_THAT(chat.status().message(), HasSubstr("tokenizer.chat_template"));
}

TEST(ChatTemplate, Llama3StyleAndTheRestOfTheSubset) {
  int k = 0;
  for (const TemplateCase& c : kOtherTemplateCases) {
    absl::StatusOr<ChatTemplate> chat = ChatTemplate::Parse(c.template_text, kOtherTemplateTokens[k][0], kOtherTemplateTokens[k][1]);
    ++k;
    ASSERT_TRUE(chat.ok()) << chat.status();
    absl::StatusOr<std::string> prompt = chat->Apply(Messages(c.messages), c.add_generation_prompt);
    ASSERT_TRUE(prompt.ok()) << prompt.status();
    EXPECT_EQ(*prompt, c.expected) << c.template_text;
  }
}

std::string Render(std::string_view source, const std::map<std::string, JinjaValue>& variables = {}) {
  absl::StatusOr<JinjaTemplate> t = JinjaTemplate::Parse(source, "t");
  if (!t.ok()) return std::string(t.status().message());
  absl::StatusOr<std::string> out = t->Render(variables);
  return out.ok() ? *out : std::string(out.status().message());
}

// Hand-worked against Jinja's documented behaviour.
TEST(JinjaTemplate, Expressions) {
  EXPECT_EQ(Render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ 7 % 3 }} {{ 2 ** 10 }}"), "7 3 -4 3.5 1 1024");
  EXPECT_EQ(Render("{{ 1.0 }} {{ 1e3 }} {{ [1, 'a', none, true] }} {{ {'k': 'v'} }}"),
            "1.0 1000.0 [1, 'a', None, True] {'k': 'v'}");
  EXPECT_EQ(Render("{{ 1e20 }} {{ 1.5e-7 }} {{ 0.001 }} {{ 123456789.125 }} {{ 0.1 + 0.2 }}"),
            "1e+20 1.5e-07 0.001 123456789.125 0.30000000000000004");
  EXPECT_EQ(Render("{{ 'a' ~ 1 ~ none }} {{ 'x' * 3 }} {{ 'ab' + 'cd' }} {{ [1] + [2] }}"), "a1None xxx abcd [1, 2]");
  EXPECT_EQ(Render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}"), "True True True True");
  EXPECT_EQ(Render("{{ 1 if false }}|{{ 'y' if 0 else 'n' }}|{{ not 1 }}|{{ 0 or 'x' }}|{{ 1 and 2 }}"), "|n|False|x|2");
  EXPECT_EQ(Render("{{ 'abcdef'[1:3] }} {{ [1, 2, 3][-1] }} {{ 'abc'[::] if false else 'abc'[:2] }}"),
            "t: line 1, column 51: expected an expression, found ':'");
  EXPECT_EQ(Render("{{ 'abcdef'[1:3] }} {{ [1, 2, 3][-1] }} {{ 'abc'[:2] }} {{ 'abc'[5] }}."), "bc 3 ab .");
  EXPECT_EQ(Render("{{ ' x '|trim|upper }} {{ 'héllo'|length }} {{ [3, 4]|first }} {{ [3, 4]|last }} {{ [1, 2]|join(', ') }}"),
            "X 5 3 4 1, 2");
  EXPECT_EQ(Render("{{ x|default('d') }} {{ ''|default('e', true) }} {{ {'a': [1, 'é']}|tojson }} {{ 'ab'|reverse }}"),
            "d e {\"a\": [1, \"é\"]} ba");
  EXPECT_EQ(Render("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ 3 is odd }} {{ 1 is not number }}"),
            "False True True True False");
  EXPECT_EQ(Render("{{ ' a b '.strip() }} {{ 'abc'.startswith('ab') }} {{ 'a,b'.split(',') }} {{ 'aXa'.replace('a', 'b') }}"),
            "a b True ['a', 'b'] bXb");
  EXPECT_EQ(Render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(Render("{{ d.get('x', 5) }} {{ d.a }} {{ d['a'] }} {{ d.missing }}.",
                   {{"d", JinjaValue::MakeDict({{"a", JinjaValue::Int(1)}})}}),
            "5 1 1 .");
}

TEST(JinjaTemplate, StatementsScopesAndWhitespace) {
  // Every iteration has its own scope; a namespace carries values out of the loop.
  EXPECT_EQ(Render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}"),
            "111,111,1");
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"), "6");
  EXPECT_EQ(Render("{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}/{{ loop.length }}{% else %}none{% endfor %}"), "1/22/2");
  EXPECT_EQ(Render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(Render("{% for x in 'ab' %}{{ loop.revindex0 }}{{ x }}{{ loop.previtem }}{% endfor %}"), "1a0ba");
  EXPECT_EQ(Render("{% if 0 %}a{% elif 1 %}b{% else %}c{% endif %}"), "b");
  // trim_blocks, lstrip_blocks, {%+ and - (the same cases as jinja2 renders them).
  EXPECT_EQ(Render("a  {% if true %}\n  b\n  {% endif %}  c\n    {%+ if true %}d{% endif %}"), "a    b\n  c\n    d");
  EXPECT_EQ(Render("x  {{- ' y ' -}}  z {#- comment -#} w"), "x y zw");
  EXPECT_EQ(Render("{# c #}\n  {% if true %}\nyes\n  {% endif %}\n"), "yes\n");
}

TEST(JinjaTemplate, UnsupportedConstructsAndErrorsNameTheirPosition) {
  EXPECT_EQ(Render("ok\n  {% macro f() %}{% endmacro %}"), "t: line 2, column 6: unsupported tag 'macro'");
  EXPECT_EQ(Render("{% include 'x' %}"), "t: line 1, column 4: unsupported tag 'include'");
  EXPECT_EQ(Render("{{ x | wordwrap }}"), "t: line 1, column 8: unsupported filter 'wordwrap'");
  EXPECT_EQ(Render("{{ x is divisibleby(3) }}"), "t: line 1, column 9: unsupported test 'divisibleby'");
  EXPECT_EQ(Render("{{ strftime_now('%Y') }}"), "t: line 1, column 16: unsupported function 'strftime_now'");
  EXPECT_EQ(Render("{{ x.format(1) }}"), "t: line 1, column 12: unsupported method 'format'");
  EXPECT_EQ(Render("{% set a, b = 1, 2 %}"), "t: line 1, column 9: unsupported construct: assignment to several names");
  EXPECT_EQ(Render("{{ (1, 2) }}"), "t: line 1, column 6: unsupported construct: tuple");
  EXPECT_EQ(Render("{% for x in xs %}"), "t: the template ends inside a block (missing '{% endfor %}')");
  EXPECT_EQ(Render("{% if x %}{% endfor %}"), "t: line 1, column 14: unexpected 'endfor'");
  EXPECT_EQ(Render("{{ 'abc }}"), "t: line 1, column 4: unterminated string");
  EXPECT_EQ(Render("{{ 1 + "), "t: line 1, column 1: unterminated {{");
  EXPECT_EQ(Render("a {# b"), "t: line 1, column 3: unterminated comment");
  EXPECT_EQ(Render("{{ 1 2 }}"), "t: line 1, column 6: expected '}}', found a number");
  // Errors while rendering.
  EXPECT_EQ(Render("{% if true %}\n{{ raise_exception('roles must alternate') }}{% endif %}"),
            "t: line 2, column 4: the template raised an error: roles must alternate");
  EXPECT_EQ(Render("{{ 'a' + 1 }}"), "t: line 1, column 8: cannot apply '+' to string and int");
  EXPECT_EQ(Render("{{ x.role }}"), "t: line 1, column 6: cannot read attribute 'role' of an undefined value");
  EXPECT_EQ(Render("{{ 1 // 0 }}"), "t: line 1, column 6: division by zero");
  EXPECT_EQ(Render("{% set s = 'x' %}{% set s.a = 1 %}"),
            "t: line 1, column 18: cannot set attribute 'a' of string 's' (only a namespace's)");
}

// A chat template comes from a file: deep nesting, endless loops and huge strings are
// refused, not a crash or a hang.
TEST(JinjaTemplate, HostileTemplatesAreRefused) {
  EXPECT_THAT(Render("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}"),
              HasSubstr("expression nested more than 200 deep"));
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_THAT(Render(chain + " }}"), HasSubstr("expression nested more than 200 deep"));
  EXPECT_THAT(Render("{{ " + std::string(50000, '-') + "1 }}"), HasSubstr("nested more than 200 deep"));
  std::string blocks;
  for (int i = 0; i < 50000; ++i) blocks += "{% if true %}";
  EXPECT_THAT(Render(blocks), HasSubstr("blocks nested more than 200 deep"));
  EXPECT_THAT(Render("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}"),
              HasSubstr("steps"));
  EXPECT_THAT(Render("{{ 'x' * 100000000 }}"), HasSubstr("a string longer than 16777216 bytes"));
  EXPECT_THAT(Render("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
              HasSubstr("a string longer than"));
  EXPECT_THAT(Render("{{ range(100000000) }}"), HasSubstr("range() of more than"));
}

// Integers are 64-bit: a result that does not fit is an error naming the operation, never a
// wrapped value, a SIGFPE (INT64_MIN // -1) or an endless loop (a range whose length wraps).
TEST(JinjaTemplate, IntegerOverflowIsAnError) {
  EXPECT_THAT(Render("{{ 9223372036854775807 + 1 }}"),
              HasSubstr("line 1, column 24: integer overflow in 9223372036854775807 + 1"));
  EXPECT_THAT(Render("{{ -9223372036854775807 - 2 }}"), HasSubstr("integer overflow"));
  EXPECT_THAT(Render("{{ 4294967296 * 4294967296 }}"), HasSubstr("integer overflow"));
  EXPECT_THAT(Render("{{ 2 ** 63 }}"), HasSubstr("integer overflow in 2 ** 63"));
  EXPECT_THAT(Render("{{ (-9223372036854775807 - 1) // -1 }}"), HasSubstr("integer overflow"));
  EXPECT_THAT(Render("{{ (-9223372036854775807 - 1) % -1 }}"), HasSubstr("integer overflow"));
  EXPECT_THAT(Render("{{ -(-9223372036854775807 - 1) }}"), HasSubstr("integer overflow in unary '-'"));
  EXPECT_THAT(Render("{{ 1e300|int }}"), HasSubstr("cannot convert 1e+300 to a 64-bit integer"));
  EXPECT_THAT(Render("{{ range(-9223372036854775807, 9223372036854775807) }}"), HasSubstr("range() of more than"));
  EXPECT_THAT(Render("{{ 'abc' * 6148914691236517206 }}"), HasSubstr("a string longer than"));
  EXPECT_EQ(Render("[{{ '' * 9223372036854775807 }}]"), "[]");  // was 2^63 empty appends
  // The edges that fit are exact.
  EXPECT_EQ(Render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ -9223372036854775807 - 1 }} {{ 3 ** 0 }} {{ 2 ** -1 }}"),
            "4611686018427387904 -9223372036854775808 -9223372036854775808 1 0.5");
  EXPECT_EQ(Render("{{ 1e308 * 10 }} {{ 'abc'[1e300:] }}|{{ 'abc'[-1e300:] }} {{ -2.5|int }}"), "inf |abc -2");
}

// Random expressions over the values at int64's edges, floats, strings and lists: each renders
// or fails with a located error (under UndefinedBehaviorSanitizer: no overflow, no
// float-to-int conversion out of range, no division trap).
TEST(JinjaTemplate, RandomArithmeticFailsCleanly) {
  const char* kLeaves[] = {"0", "1", "-1", "2", "3", "63", "64", "9223372036854775807", "(-9223372036854775807 - 1)",
                           "4294967296", "1e308", "-1e308", "0.5", "'ab'", "[1, 2]", "none", "true"};
  const char* kBinary[] = {" + ", " - ", " * ", " // ", " % ", " ** ", " / ", " ~ "};
  std::mt19937 rng(27);
  std::function<std::string(int)> expr = [&](int depth) -> std::string {
    if (depth == 0 || rng() % 4 == 0) return kLeaves[rng() % std::size(kLeaves)];
    switch (rng() % 6) {
      case 0: return "-(" + expr(depth - 1) + ")";
      case 1: return "(" + expr(depth - 1) + ")|int";
      case 2: return "range(" + expr(depth - 1) + ", " + expr(depth - 1) + ")|length";
      case 3: return "'xyz'[" + expr(depth - 1) + ":" + expr(depth - 1) + "]";
      default: return "(" + expr(depth - 1) + kBinary[rng() % std::size(kBinary)] + expr(depth - 1) + ")";
    }
  };
  int rendered = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string source = "{{ " + expr(4) + " }}";
    absl::StatusOr<JinjaTemplate> t = JinjaTemplate::Parse(source, "m");
    ASSERT_TRUE(t.ok()) << source << ": " << t.status();
    absl::StatusOr<std::string> out = t->Render({});
    if (out.ok()) {
      ++rendered;
    } else {
      ASSERT_EQ(out.status().message().substr(0, 3), "m: ") << source << ": " << out.status();
    }
  }
  EXPECT_GT(rendered, 300);
}

// Lists and replace() are bounded like strings (each step doubles the list, or multiplies the
// string by 16 MiB).
TEST(JinjaTemplate, GrowingListsAndReplacementsAreRefused) {
  EXPECT_THAT(Render("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"),
              HasSubstr("a list longer than 1048576 items"));
  EXPECT_THAT(Render("{% set big = 'a' * 16000000 %}{{ big.replace('a', big) }}"), HasSubstr("a string longer than"));
}

// Mutants of real templates parse and render or fail with a located error (run under
// AddressSanitizer by scripts/sanitizer_tests.sh).
TEST(JinjaTemplate, MutantsFailCleanly) {
  std::vector<std::string> corpus;
  for (const TemplateCase& c : kOtherTemplateCases) corpus.push_back(c.template_text);
  const std::string kSmolLm =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
      "You are SmolLM<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
      "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
  corpus.push_back(kSmolLm);
  const char* kInserts[] = {"{%", "%}", "{{", "}}", "{#", "#}", "-", "(", ")", "[", "]", "'", "\"", " if ", " for ",
                            " in ", " else ", "endif", "endfor", "|", ".", ",", "~", "+", "loop", "set", "not"};
  JinjaValue::List messages;
  for (const char* role : {"system", "user", "assistant"}) {
    messages.push_back(JinjaValue::MakeDict({{"role", JinjaValue::String(role)}, {"content", JinjaValue::String("hi")}}));
  }
  const std::map<std::string, JinjaValue> variables = {{"messages", JinjaValue::MakeList(messages)},
                                                       {"add_generation_prompt", JinjaValue::Bool(true)},
                                                       {"bos_token", JinjaValue::String("<s>")},
                                                       {"eos_token", JinjaValue::String("</s>")}};
  std::mt19937 rng(11);
  int rendered = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = corpus[static_cast<size_t>(i) % corpus.size()];
    for (int r = 0; r < 1 + static_cast<int>(rng() % 3); ++r) {
      size_t at = rng() % (text.size() + 1);
      switch (rng() % 3) {
        case 0: text.erase(at, 1 + rng() % 8); break;
        case 1: text.insert(at, kInserts[rng() % std::size(kInserts)]); break;
        default: text.insert(at, text.substr(rng() % text.size(), rng() % 16)); break;
      }
    }
    absl::StatusOr<JinjaTemplate> t = JinjaTemplate::Parse(text, "m");
    if (!t.ok()) {
      EXPECT_EQ(t.status().message().substr(0, 3), "m: ") << t.status();
      continue;
    }
    absl::StatusOr<std::string> out = t->Render(variables);
    if (out.ok()) {
      ++rendered;
    } else {
      EXPECT_EQ(out.status().message().substr(0, 3), "m: ") << out.status();
    }
  }
  EXPECT_GT(rendered, 100);
}

}  // namespace
}  // namespace kiln::serving
