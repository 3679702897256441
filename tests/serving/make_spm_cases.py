#!/usr/bin/env python3
"""Writes the SentencePiece (tokenizer.ggml.model "llama") test vocabularies and their reference
tokenizations, computed by independent implementations, never by Kiln:

  - tests/serving/spm_bpe.gguf and spm_unigram.gguf: a SentencePiece BPE and a unigram model,
    trained by PyPI `sentencepiece` on the text below with Llama's settings (byte fallback,
    digits split, identity normalization, a dummy prefix), written by PyPI `gguf` the way
    llama.cpp's convert script writes a `llama` vocabulary: every piece's text, score and type
    (normal, unknown, control, user-defined, unused, byte), the bos/eos/unknown ids and the
    add_bos / add_eos / add_space_prefix flags. The unigram file says add_space_prefix = false
    and add_eos = true, so both settings of each flag are covered. Only the tokenizer and a few
    hyperparameters are written (no tensors): llama.cpp opens them with vocab_only.
  - tests/serving/spm_cases.inc: llama.cpp's own tokenization (llama_tokenize with
    parse_special, no bos/eos) of the test strings, its detokenization (llama_detokenize) of
    those ids, and the ids it gives each vocabulary piece's text (less a leading space where
    one is added); the chat templates of Llama 2, Mistral and Zephyr (TinyLlama) rendered by
    jinja2 as transformers renders them, and llama.cpp's ids of each rendered prompt.

Run once in throwaway virtual environments, never in CI (llama_cpp is llama-cpp-python, which
bundles llama.cpp):
  python3 -m venv /tmp/spm/venv && /tmp/spm/venv/bin/pip install sentencepiece protobuf gguf
  /tmp/spm/venv/bin/python tests/serving/make_spm_cases.py write-vocabularies tests/serving
  LLAMA_VENV/bin/python tests/serving/make_spm_cases.py write-cases tests/serving > tests/serving/spm_cases.inc

End to end, by hand: a tiny random-weight `llama` model with spm_bpe.gguf's vocabulary, and
llama.cpp's greedy continuations (of its own tokenization of each prompt, with bos) next to
`kiln generate --temperature 0` of the same text (Kiln's tokenizer, model and decoder):
  /tmp/spm/venv/bin/python tests/serving/make_spm_cases.py write-tiny-model /tmp/spm/tiny.gguf
  KILN=build/kiln LLAMA_VENV/bin/python tests/serving/make_spm_cases.py compare-greedy /tmp/spm/tiny.gguf
"""
import ctypes
import os
import sys

# Training text: prose, code, digits, accents and a little CJK, so that the vocabularies hold
# multi-character pieces of each (emoji and most CJK are left to byte fallback).
TRAINING = """The quick brown fox jumps over the lazy dog. A tokenizer splits text into pieces.
Hello world! How are you today? I'm fine, thanks; we've done it and they'll say it's good.
def main(argv):
    for i in range(10):
        print(i * 2, "hello")
    return 0
int main() { return 42; }
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2024-11-27 3.14159
caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe \u00e5ngstr\u00f6m cr\u00e8me br\u00fbl\u00e9e
\u65e5\u672c\u8a9e \u4e2d\u6587 \u65e5\u672c \u4e2d\u6587\u5b57
The model reads the text, the text becomes tokens, and the tokens become text again.
Spaces    and\ttabs
and new lines.
"""

USER_DEFINED = ["<|user|>"]
CONTROL = ["<|im_end|>"]

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine, we've done it.",
    " leading space",
    "   three leading spaces",
    "trailing spaces   ",
    "repeated    spaces  between   words",
    "line one\nline two\n\n\nline five\n",
    "tabs\tand\t\ttabs",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe",
    "\u00e5ngstr\u00f6m \u00c5NGSTR\u00d6M \u00f1 \u00e7",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u5b57\u7b26",
    "Emoji: \U0001F600\U0001F680 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467",
    "Numbers: 0 7 42 123 4096 3.14159 1,000,000 and 2024-11-27",
    "def f(x):\n    return x ** 2  # square\n",
    "int main() { return 42; }",
    "<s>Hello</s>",
    "<s> [INST] What is 2+2? [/INST]",
    "text<|im_end|>more <|im_end|>",
    "a<|user|>b <|user|> c",
    "<|im_end",
    "<unk> is unknown",
    "",
    " ",
    "  ",
    "\n",
    "x",
    "\u2581already escaped",
    "!!!???...,,,;;;",
    "\u00a0non-breaking\u00a0space",
    # Invalid UTF-8: a lead byte takes the escaped space's bytes into its "character".
    b"\xe3 a",
    b"x\xe3 a\xf0 b\x80\xff",
]


# Chat templates of SentencePiece models, as their tokenizer_config.json files have them.
LLAMA2_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}")
ZEPHYR_TEMPLATE = """{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>
'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}"""
TEMPLATE_CASES = [
    ("llama2", LLAMA2_TEMPLATE, [("system", "You are terse."), ("user", " Hi there! "), ("assistant", "Hello."),
                                 ("user", "2+2?")], True),
    ("llama2", LLAMA2_TEMPLATE, [("user", "What is a fox?")], True),
    ("mistral", MISTRAL_TEMPLATE, [("user", "Hi"), ("assistant", "Hello!"), ("user", "Name a color.")], True),
    ("zephyr", ZEPHYR_TEMPLATE, [("system", "Be kind."), ("user", "Hello world"), ("assistant", "Hi."),
                                 ("user", "caf\u00e9?")], True),
    ("zephyr", ZEPHYR_TEMPLATE, [("user", "Hello")], False),
]


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


def write_vocabularies(folder):
    import io

    import gguf
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    for kind, vocab_size in (("bpe", 420), ("unigram", 400)):
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(TRAINING.splitlines() * 4), model_writer=model, model_type=kind,
            vocab_size=vocab_size, byte_fallback=True, split_digits=True, normalization_rule_name="identity",
            add_dummy_prefix=True, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
            user_defined_symbols=USER_DEFINED, control_symbols=CONTROL, character_coverage=0.9995,
            hard_vocab_limit=False, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
        # The piece types of the model file are llama.cpp's token types (normal 1, unknown 2,
        # control 3, user-defined 4, unused 5, byte 6).
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(model.getvalue())
        tokens = [p.piece for p in proto.pieces]
        scores = [p.score for p in proto.pieces]
        types = [int(p.type) for p in proto.pieces]
        assert tokens == [sp.id_to_piece(i) for i in range(sp.vocab_size())]
        # Two padding tokens as the convert script adds for a vocabulary smaller than the model's.
        for i in range(2):
            tokens.append(f"[PAD{len(tokens)}]")
            scores.append(-1000.0)
            types.append(gguf.TokenType.UNUSED)
        path = os.path.join(folder, f"spm_{kind}.gguf")
        writer = gguf.GGUFWriter(path, "llama")
        writer.add_name(f"spm-{kind}-test")
        writer.add_context_length(64)
        writer.add_embedding_length(8)
        writer.add_block_count(1)
        writer.add_feed_forward_length(16)
        writer.add_head_count(2)
        writer.add_head_count_kv(2)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_rope_dimension_count(4)
        writer.add_tokenizer_model("llama")
        writer.add_tokenizer_pre("default")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores)
        writer.add_token_types(types)
        writer.add_bos_token_id(sp.bos_id())
        writer.add_eos_token_id(sp.eos_id())
        writer.add_unk_token_id(sp.unk_id())
        writer.add_add_bos_token(True)
        writer.add_add_eos_token(kind == "unigram")
        if kind == "unigram":
            writer.add_add_space_prefix(False)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        print(f"{path}: {len(tokens)} tokens", file=sys.stderr)


def write_cases(folder):
    import llama_cpp

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    print("// Generated by tests/serving/make_spm_cases.py with llama.cpp (llama-cpp-python "
          f"{llama_cpp.__version__}); do not edit.")
    print("// Ids from llama_tokenize (parse_special, no bos/eos), text from llama_detokenize.")
    print()
    print("struct SpmCase { const char* text; std::vector<int32_t> ids; const char* decoded; };")
    for kind in ("bpe", "unigram"):
        model = llama_cpp.llama_model_load_from_file(os.path.join(folder, f"spm_{kind}.gguf").encode(), params)
        assert model, kind
        vocab = llama_cpp.llama_model_get_vocab(model)
        n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)

        def tokenize(data, add_special=False, parse_special=True):
            buf = (llama_cpp.llama_token * (len(data) + 8))()
            n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, len(buf), add_special, parse_special)
            assert n >= 0
            return list(buf[:n])

        def detokenize(ids):
            arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
            buf = ctypes.create_string_buffer(16 * len(ids) + 16)
            n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, len(buf), False, True)
            assert n >= 0
            return buf.raw[:n]

        def piece(i):
            buf = ctypes.create_string_buffer(256)
            n = llama_cpp.llama_token_to_piece(vocab, i, buf, len(buf), 0, True)
            assert n >= 0
            return buf.raw[:n]

        name = "Bpe" if kind == "bpe" else "Unigram"
        print()
        print(f"const SpmCase kSpm{name}Cases[] = {{")
        for text in TEXTS:
            data = text if isinstance(text, bytes) else text.encode()
            ids = tokenize(data)
            print("  {%s, {%s}, %s}," % (c_string(data), ", ".join(map(str, ids)), c_string(detokenize(ids))))
        print("};")
        # With bos / eos as the file asks (add_special).
        print(f"const std::vector<int32_t> kSpm{name}WithSpecial = {{%s}};" %
              ", ".join(map(str, tokenize(b"Hello world", add_special=True))))
        # Each piece's text (as token_to_piece renders it, less the space that tokenizing puts
        # back where add_space_prefix) tokenized back, without special parsing.
        space_prefix = kind == "bpe"
        print(f"const std::vector<std::vector<int32_t>> kSpm{name}PieceIds = {{")
        for i in range(n_vocab):
            text = piece(i)
            if space_prefix and text.startswith(b" "):
                text = text[1:]
            print("  {%s}," % ", ".join(map(str, tokenize(text, parse_special=False))))
        print("};")
        eog = [i for i in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, i)]
        print(f"const std::vector<int32_t> kSpm{name}EndOfGeneration = {{%s}};" % ", ".join(map(str, eog)))
        if kind == "bpe":
            write_template_cases(tokenize)
        llama_cpp.llama_model_free(model)


def write_template_cases(tokenize):
    """Templates rendered by jinja2 as transformers renders them (trim_blocks, lstrip_blocks),
    llama.cpp's ids of the result in the BPE vocabulary (special tokens parsed), and its ids
    of the prompt as its chat path makes them (bos added once)."""
    import jinja2

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message):
        raise jinja2.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    print()
    print("struct SpmTemplateCase { const char* name; const char* template_text;")
    print("                         std::vector<std::pair<std::string, std::string>> messages;")
    print("                         bool add_generation_prompt; const char* expected; std::vector<int32_t> ids;")
    print("                         std::vector<int32_t> chat_ids; };")
    print("const SpmTemplateCase kSpmTemplateCases[] = {")
    for name, source, conversation, gen in TEMPLATE_CASES:
        out = env.from_string(source).render(messages=[{"role": r, "content": c} for r, c in conversation],
                                             add_generation_prompt=gen, bos_token="<s>", eos_token="</s>")
        msgs = ", ".join("{%s, %s}" % (c_string(r), c_string(c)) for r, c in conversation)
        ids = tokenize(out.encode())
        # llama.cpp's chat path (common_chat_templates_apply, then tokenizing with add_special):
        # the template's leading bos text is dropped where the vocabulary adds bos itself.
        chat = out[len("<s>"):] if out.startswith("<s>") else out
        chat_ids = tokenize(chat.encode(), add_special=True)
        print("  {%s, %s, {%s}, %s, %s, {%s}, {%s}}," % (
            c_string(name), c_string(source), msgs, "true" if gen else "false", c_string(out),
            ", ".join(map(str, ids)), ", ".join(map(str, chat_ids))))
    print("};")


def write_tiny_model(path):
    """A tiny random-weight `llama` model (2 layers, hidden 64, f32) with spm_bpe.gguf's
    vocabulary, for comparing greedy generation end to end (text in, text out) with llama.cpp;
    see compare-greedy. Not committed: it is regenerated from the seed."""
    import gguf
    import numpy as np

    vocab = gguf.GGUFReader(os.path.join(os.path.dirname(os.path.abspath(__file__)), "spm_bpe.gguf"))
    field = lambda key: vocab.fields[key].contents()
    tokens, scores, types = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.scores"), field("tokenizer.ggml.token_type")
    rng = np.random.default_rng(20)
    n_vocab, hidden, ffn, layers, heads, kv_heads = len(tokens), 64, 96, 2, 4, 2
    head_dim = hidden // heads
    w = lambda *shape: (rng.standard_normal(shape) * 0.5 / np.sqrt(shape[-1])).astype(np.float32)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("spm-tiny-random")
    writer.add_context_length(256)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_file_type(0)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_tensor("token_embd.weight", w(n_vocab, hidden))
    writer.add_tensor("output_norm.weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    writer.add_tensor("output.weight", w(n_vocab, hidden))
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", w(hidden, hidden))
        writer.add_tensor(f"blk.{i}.attn_k.weight", w(kv_heads * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_v.weight", w(kv_heads * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_output.weight", w(hidden, hidden))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", w(ffn, hidden))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", w(ffn, hidden))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", w(hidden, ffn))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def compare_greedy(path):
    """llama.cpp's greedy continuation of each prompt (tokenized by llama.cpp with bos), printed
    as ids and text, next to `kiln generate --temperature 0` run on the same text."""
    import re
    import subprocess

    import llama_cpp
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(path, n_ctx=256, verbose=False)
    kiln = os.environ.get("KILN", "build/kiln")
    for prompt in ["Hello world", "The quick brown fox", "caf\u00e9 \u65e5\u672c \U0001F600", "  two spaces\nand a line"]:
        ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        out = []
        for _ in range(24):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),))
            token = int(np.argmax(logits))
            if token == llm.token_eos():
                break
            out.append(token)
            llm.eval([token])
        pieces = []
        for t in out:
            buf = ctypes.create_string_buffer(64)
            n = llama_cpp.llama_token_to_piece(llm._model.vocab, t, buf, len(buf), 0, False)
            pieces.append(buf.raw[:n])
        # Random weights pick byte tokens that make invalid UTF-8: Kiln prints U+FFFD for those.
        text = b"".join(pieces).decode("utf-8", errors="replace")
        run = subprocess.run([kiln, "generate", path, "-p", prompt, "-n", str(len(out)), "--temperature", "0", "-v"],
                             capture_output=True, check=True)
        ours = run.stdout.decode().removesuffix("\n")
        prompt_tokens = re.search(r"prompt of (\d+) tokens", run.stderr.decode()).group(1)
        same = ours == text and int(prompt_tokens) == len(ids)
        print(f"{prompt!r}: llama.cpp prompt {ids} -> {out}")
        print(f"  llama.cpp {text!r}")
        print(f"  kiln      {ours!r} (prompt of {prompt_tokens} tokens)  {'SAME' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    {"write-vocabularies": write_vocabularies, "write-cases": write_cases, "write-tiny-model": write_tiny_model,
     "compare-greedy": compare_greedy}[sys.argv[1]](sys.argv[2])
