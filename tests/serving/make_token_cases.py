#!/usr/bin/env python3
"""Writes tests/serving/token_cases.inc: reference data for the tokenizer and chat template
tests, computed by independent implementations, never by Kiln.

  - Token ids of test strings for the bundled model (SmolLM2-135M-Instruct Q4_1 GGUF), from
    Hugging Face `tokenizers` (Rust) with a byte-level BPE built from the GGUF's own
    vocabulary and merges (read with the `gguf` package) and SmolLM2's pre-tokenizer: digits
    split one by one, then the GPT-2 regex.
  - The vocabulary's tokens whose text does not encode back to themselves.
  - How each named pre-tokenizer (gpt2, smollm, llama-bpe, qwen2) splits test strings,
    through `tokenizers`' Split with the regexes of the original tokenizer.json files.
  - Chat templates rendered by `jinja2` the way `transformers` does (trim_blocks,
    lstrip_blocks).

Run once in a throwaway virtual environment, never in CI:
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf tokenizers jinja2
  /tmp/venv/bin/python tests/serving/make_token_cases.py MODEL.gguf > tests/serving/token_cases.inc
"""
import sys

import jinja2
from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
          r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2 = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
         r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")

TEXTS = [
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine, we've done it, you're right, he'd know.",
    "I'M SHOUTING, DON'T YOU HEAR?",
    "Numbers: 0 7 42 123 4096 3.14159 1,000,000 and 2024-11-23",
    "  leading spaces, trailing spaces   ",
    "a  b   c    d\t\te\n\nf\r\ng",
    "line one\nline two\n\n\nline five\n",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe \u00e5ngstr\u00f6m",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u5b57\u7b26",
    "\ud55c\uad6d\uc5b4 \u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea \u0939\u093f\u0928\u094d\u0926\u0940",
    "Emoji: \U0001F600\U0001F680 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f",
    "def f(x):\n    return x ** 2  # square\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more <|im_end|>",
    "<|im_start",
    "\u00a0non-breaking\u00a0space and \u2003em space",
    "",
    " ",
    "\n",
    "!!!???...,,,;;;",
    "https://example.com/path?query=1&other=two#frag",
    "MixedCASE camelCase snake_case kebab-case 123abc abc123",
    "bytes without a token: \x04 and \x1d",
]

SPLIT_TEXTS = [
    "Hello world",
    "I'm sure they'll say IT'S fine",
    "Numbers 1234567 and 3.14",
    "  spaces   here \n\n tabs\t\tend  ",
    "line\r\nbreaks\n\n\nhere",
    "caf\u00e9 \u65e5\u672c\u8a9e \U0001F600!",
    "punct!!! (parens) [brackets] {braces} --dash",
    "\u00a0nbsp x",
]

SMOLLM_TEMPLATE_CONVERSATIONS = [
    ([("system", "You are a pirate."), ("user", "Hello!"), ("assistant", "Arr, hello matey.")], True),
    ([("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?")], True),
    ([("user", "Hi")], False),
]

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim"
    " + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
LLAMA3_CONVERSATION = [("system", "  Be brief.  "), ("user", "Name a color.\n"), ("assistant", "Blue.")]

# Exercises the rest of the supported subset: whitespace control, elif, loop.last,
# loop.index, ~, in / not in, length, filters, dot access, raise_exception not taken,
# newlines after block tags (trim_blocks) and indented tags (lstrip_blocks).
SUBSET_TEMPLATE = """{%- if messages | length > 3 -%}
  {{ raise_exception('too many messages') }}
{%- endif -%}
{% for m in messages %}
  {% if m.role == 'system' %}
[SYS {{ loop.index }}/{{ messages|length }}] {{ m.content | upper }}
  {% elif m.role in ['user', 'human'] and not (m.content == '') %}
[USER] {{ m['content'] ~ '!' }}{% if loop.last %} (last){% endif %}

  {% else %}
[{{ m.role | lower }}] {{ m['content'] | trim }}
  {% endif %}
{% endfor %}
{%- if add_generation_prompt and 'x' not in eos_token %}{{ eos_token }}{% endif %}
"""
SUBSET_CONVERSATION = [("system", "be nice"), ("assistant", "  ok  "), ("user", "hi")]


def c_string(data):
    """A C++ string literal for arbitrary bytes (octal escapes never run into digits)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = []
    for b in data:
        c = chr(b)
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif 32 <= b < 127 and c != "?":
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


def field(reader, key):
    return reader.fields[key].contents()


def main():
    reader = GGUFReader(sys.argv[1])
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    merges = field(reader, "tokenizer.ggml.merges")
    unk = field(reader, "tokenizer.ggml.unknown_token_id")
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], unk_token=tokens[unk],
                     fuse_unk=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3])

    print("// Generated by tests/serving/make_token_cases.py from SmolLM2-135M-Instruct.Q4_1.gguf; do not edit.")
    print("// Token ids from Hugging Face tokenizers, pre-tokenizer splits from tokenizers' Split, chat")
    print("// templates rendered by jinja2 (trim_blocks, lstrip_blocks), as that script explains.")
    print()
    print("struct TokenCase { const char* text; std::vector<int32_t> ids; };")
    print("const TokenCase kTokenCases[] = {")
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert unk in ids or tok.decode(ids, skip_special_tokens=False) == text, text
        print("  {%s, {%s}}," % (c_string(text), ", ".join(map(str, ids))))
    print("};")
    print()

    # Normal tokens whose (valid UTF-8) text does not encode to the token alone.
    byte_decoder = {}
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_decoder = {chr(c): b for b, c in zip(bs, cs)}
    not_self, invalid = [], 0
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty != 1:
            continue
        raw = bytes(byte_decoder[c] for c in t)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            invalid += 1
            continue
        if tok.encode(text, add_special_tokens=False).ids != [i]:
            not_self.append(i)
    print("// Normal tokens whose text is valid UTF-8 but does not encode to the token alone (%d);" % len(not_self))
    print("// %d normal tokens are not valid UTF-8 on their own." % invalid)
    print("const std::vector<int32_t> kNotSelfEncoding = {")
    for k in range(0, len(not_self), 16):
        print("  " + ", ".join(map(str, not_self[k:k + 16])) + ",")
    print("};")
    print("constexpr int kTokensNotValidUtf8 = %d;" % invalid)
    print()

    splitters = {
        "gpt2": pre_tokenizers.Split(Regex(GPT2), behavior="isolated"),
        "smollm": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                           pre_tokenizers.Split(Regex(GPT2), behavior="isolated")]),
        "llama-bpe": pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
        "qwen2": pre_tokenizers.Split(Regex(QWEN2), behavior="isolated"),
    }
    print("struct SplitCase { const char* pre; const char* text; std::vector<std::string> pieces; };")
    print("const SplitCase kSplitCases[] = {")
    for name, splitter in splitters.items():
        for text in SPLIT_TEXTS:
            pieces = [p for p, _ in splitter.pre_tokenize_str(text)]
            assert "".join(pieces) == text
            print("  {%s, %s, {%s}}," % (c_string(name), c_string(text), ", ".join(c_string(p) for p in pieces)))
    print("};")
    print()

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message):
        raise jinja2.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    smollm = env.from_string(field(reader, "tokenizer.chat_template"))
    print("struct TemplateCase { const char* template_text; std::vector<std::pair<std::string, std::string>> messages;")
    print("                      bool add_generation_prompt; const char* expected; };")
    print("const TemplateCase kSmolLmTemplateCases[] = {")
    for conversation, gen in SMOLLM_TEMPLATE_CONVERSATIONS:
        out = smollm.render(messages=[{"role": r, "content": c} for r, c in conversation], add_generation_prompt=gen,
                            bos_token="<|im_start|>", eos_token="<|im_end|>")
        msgs = ", ".join("{%s, %s}" % (c_string(r), c_string(c)) for r, c in conversation)
        print("  {nullptr, {%s}, %s, %s}," % (msgs, "true" if gen else "false", c_string(out)))
    print("};")
    print()
    print("const TemplateCase kOtherTemplateCases[] = {")
    for template, conversation, bos, eos in [(LLAMA3_TEMPLATE, LLAMA3_CONVERSATION, "<|begin_of_text|>", "<|eot_id|>"),
                                             (SUBSET_TEMPLATE, SUBSET_CONVERSATION, "<s>", "</s>")]:
        for gen in (True, False):
            out = env.from_string(template).render(messages=[{"role": r, "content": c} for r, c in conversation],
                                                   add_generation_prompt=gen, bos_token=bos, eos_token=eos)
            msgs = ", ".join("{%s, %s}" % (c_string(r), c_string(c)) for r, c in conversation)
            print("  {%s, {%s}, %s, %s}," % (c_string(template), msgs, "true" if gen else "false", c_string(out)))
    print("};")
    print("// bos and eos of kOtherTemplateCases, in order.")
    print('const char* const kOtherTemplateTokens[][2] = {{"<|begin_of_text|>", "<|eot_id|>"}, '
          '{"<|begin_of_text|>", "<|eot_id|>"}, {"<s>", "</s>"}, {"<s>", "</s>"}};')


if __name__ == "__main__":
    main()
