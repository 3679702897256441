// A tiny Llama-family GGUF for tests: a few layers of random weights in the types the
// bundled model uses (Q4_1 matmul weights, Q8_0 tied embeddings, float32 norms) or any
// other supported ones, built with the test GGUF writer (no tokenizer: weights and
// hyperparameters only). Big enough to exercise grouped-query attention, several KV pages
// and every weight format; small enough to compile and run in a second.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/formats/gguf_writer.h"

namespace kiln::formats::testing {

struct TinyLlamaSpec {
  std::string architecture = "llama";  // or "qwen2" (adds q/k/v biases)
  uint32_t layers = 2;
  uint32_t hidden = 64;
  uint32_t ffn = 96;
  uint32_t heads = 4;
  uint32_t kv_heads = 2;
  uint32_t vocab = 80;
  uint32_t context = 256;
  float rope_base = 10000.0f;
  // ggml type ids: 0 f32, 1 f16, 2 q4_0, 3 q4_1, 6 q5_0, 7 q5_1, 8 q8_0, 12 q4_K, 13 q5_K,
  // 14 q6_K (the K-quants need hidden and ffn multiples of 256).
  uint32_t matmul_type = 3;
  uint32_t embed_type = 8;
  bool tied = true;
  uint32_t seed = 1;
  // A byte-level BPE vocabulary of `vocab` tokens (TinyVocabulary below) and a ChatML chat
  // template, for tests that go through text (the serving engine).
  bool tokenizer = false;
  // With `tokenizer`: write tokenizer.chat_template (false: a model without one).
  bool chat_template = true;
};

// The tiny tokenizer's vocabulary: the control tokens <|endoftext|> (eos), <|im_start|> and
// <|im_end|>, the byte symbols of space, newline, letters, digits and some punctuation (GPT-2's
// byte-to-symbol mapping: space is U+0120, newline U+010A), a few merges' results, padded
// with unused tokens or cut to `vocab`.
inline std::vector<std::string> TinyVocabulary(uint32_t vocab) {
  std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "\xC4\xA0", "\xC4\x8A"};
  for (char c = 'a'; c <= 'z'; ++c) tokens.push_back(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) tokens.push_back(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) tokens.push_back(std::string(1, c));
  for (const char* p : {".", ",", "!", "?", ":", "'", "-", "th", "he", "\xC4\xA0t", "\xC4\xA0" "a", "in"}) {
    tokens.push_back(p);
  }
  for (uint32_t i = static_cast<uint32_t>(tokens.size()); i < vocab; ++i) tokens.push_back("<unused" + std::to_string(i) + ">");
  tokens.resize(vocab);
  return tokens;
}

inline void AddTinyTokenizer(GgufWriter& w, uint32_t vocab, bool chat_template = true) {
  const std::vector<std::string> tokens = TinyVocabulary(vocab);
  std::vector<RawValue> types;
  for (size_t i = 0; i < tokens.size(); ++i) {
    types.push_back(I32(i < 3 ? 3 : tokens[i].rfind("<unused", 0) == 0 ? 5 : 1));
  }
  w.Add("tokenizer.ggml.model", Str("gpt2"))
      .Add("tokenizer.ggml.pre", Str("gpt2"))
      .Add("tokenizer.ggml.tokens", StrArray(tokens))
      .Add("tokenizer.ggml.token_type", Array(5, types))
      .Add("tokenizer.ggml.merges", StrArray({"t h", "h e", "\xC4\xA0 t", "\xC4\xA0 " "a", "i n"}))
      .Add("tokenizer.ggml.eos_token_id", U32(0));
  if (chat_template) {
    w.Add("tokenizer.chat_template",
          Str("{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
              "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"));
  }
}

class TinyRandom {
 public:
  explicit TinyRandom(uint32_t seed) : s_(seed * 2654435761u + 12345u) {}
  uint32_t Next() {
    s_ = s_ * 1664525u + 1013904223u;
    return s_ >> 8;
  }
  float Uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(Next() % 100001) / 100000.0f; }

 private:
  uint32_t s_;
};

// IEEE half from a float (round to nearest even; the values used here are normal).
inline uint16_t TinyHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(h);
}

// `rows` x `cols` weights of ggml type `type`, random with magnitude about `scale`.
inline std::string TinyWeights(uint32_t type, uint64_t rows, uint64_t cols, float scale, TinyRandom& rng) {
  std::string out;
  auto put16 = [&](uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); };
  const uint64_t blocks = rows * cols / 32;
  const uint64_t super_blocks = rows * cols / 256;
  auto bytes = [&](int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(rng.Next() & 0xff));
  };
  switch (type) {
    case 0:
      for (uint64_t i = 0; i < rows * cols; ++i) {
        float v = rng.Uniform(-scale, scale);
        out.append(reinterpret_cast<const char*>(&v), 4);
      }
      break;
    case 1:
      for (uint64_t i = 0; i < rows * cols; ++i) put16(TinyHalf(rng.Uniform(-scale, scale)));
      break;
    case 2:  // q4_0: d, 16 bytes of nibbles; w = (q - 8) * d
      for (uint64_t b = 0; b < blocks; ++b) {
        put16(TinyHalf(scale / 8 * rng.Uniform(0.5f, 1.0f)));
        for (int i = 0; i < 16; ++i) out.push_back(static_cast<char>(rng.Next() & 0xff));
      }
      break;
    case 3:  // q4_1: d, m, 16 bytes of nibbles; w = q * d + m
      for (uint64_t b = 0; b < blocks; ++b) {
        put16(TinyHalf(scale / 8 * rng.Uniform(0.5f, 1.0f)));
        put16(TinyHalf(-scale * rng.Uniform(0.8f, 1.0f)));
        for (int i = 0; i < 16; ++i) out.push_back(static_cast<char>(rng.Next() & 0xff));
      }
      break;
    case 6:  // q5_0: d, 4 bytes of fifth bits, 16 bytes of nibbles; w = (q - 16) * d
    case 7:  // q5_1: d, m, then as q5_0; w = q * d + m
      for (uint64_t b = 0; b < blocks; ++b) {
        put16(TinyHalf(scale / 16 * rng.Uniform(0.5f, 1.0f)));
        if (type == 7) put16(TinyHalf(-scale * rng.Uniform(0.8f, 1.0f)));
        bytes(20);
      }
      break;
    case 12:  // q4_K: d, dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles
    case 13:  // q5_K: as q4_K with 32 bytes of fifth bits before the nibbles
      for (uint64_t b = 0; b < super_blocks; ++b) {
        put16(TinyHalf(2 * scale / (63 * (type == 12 ? 15 : 31)) * rng.Uniform(0.5f, 1.0f)));
        put16(TinyHalf(scale / 63 * rng.Uniform(0.5f, 1.0f)));
        bytes(type == 12 ? 140 : 172);
      }
      break;
    case 14:  // q6_K: 128 bytes of low nibbles, 64 of 2-bit high parts, 16 int8 scales, d
      for (uint64_t b = 0; b < super_blocks; ++b) {
        bytes(208);
        put16(TinyHalf(scale / (32 * 127) * rng.Uniform(0.5f, 1.0f)));
      }
      break;
    case 10:  // q2_K: 16 bytes of 4-bit scales and mins, 64 of 2-bit quants, d, dmin
      for (uint64_t b = 0; b < super_blocks; ++b) {
        bytes(80);
        put16(TinyHalf(2 * scale / (15 * 3) * rng.Uniform(0.5f, 1.0f)));
        put16(TinyHalf(scale / 15 * rng.Uniform(0.5f, 1.0f)));
      }
      break;
    case 16:  // iq2_xxs: random bytes of its super-blocks (66), for tests of its refusal
      bytes(static_cast<int>(super_blocks * 66));
      break;
    case 11:  // q3_K: 32 bytes of high bits, 64 of 2-bit lows, 12 of 6-bit scales (- 32), d
      for (uint64_t b = 0; b < super_blocks; ++b) {
        bytes(108);
        put16(TinyHalf(scale / (32 * 4) * rng.Uniform(0.5f, 1.0f)));
      }
      break;
    case 20:  // iq4_nl: d, 16 bytes of nibbles through a table of values in [-127, 113]
      for (uint64_t b = 0; b < blocks; ++b) {
        put16(TinyHalf(scale / 127 * rng.Uniform(0.5f, 1.0f)));
        bytes(16);
      }
      break;
    case 23:  // iq4_xs: d, 2 + 4 bytes of 6-bit scales (- 32), 128 bytes of table nibbles
      for (uint64_t b = 0; b < super_blocks; ++b) {
        put16(TinyHalf(scale / (32 * 127) * rng.Uniform(0.5f, 1.0f)));
        bytes(134);
      }
      break;
    case 8:  // q8_0: d, 32 int8; w = q * d
      for (uint64_t b = 0; b < blocks; ++b) {
        put16(TinyHalf(scale / 127 * rng.Uniform(0.5f, 1.0f)));
        for (int i = 0; i < 32; ++i) out.push_back(static_cast<char>(rng.Next() & 0xff));
      }
      break;
  }
  return out;
}

inline std::string TinyLlamaGguf(const TinyLlamaSpec& s) {
  GgufWriter w;
  const std::string a = s.architecture;
  w.Add("general.architecture", Str(a))
      .Add(a + ".block_count", U32(s.layers))
      .Add(a + ".embedding_length", U32(s.hidden))
      .Add(a + ".feed_forward_length", U32(s.ffn))
      .Add(a + ".attention.head_count", U32(s.heads))
      .Add(a + ".attention.head_count_kv", U32(s.kv_heads))
      .Add(a + ".context_length", U32(s.context))
      .Add(a + ".rope.freq_base", F32(s.rope_base))
      .Add(a + ".attention.layer_norm_rms_epsilon", F32(1e-5f));
  TinyRandom rng(s.seed);
  const uint32_t head_dim = s.hidden / s.heads;
  auto vec = [&](uint32_t n, float center, float spread) {
    std::string out;
    for (uint32_t i = 0; i < n; ++i) {
      float v = center + rng.Uniform(-spread, spread);
      out.append(reinterpret_cast<const char*>(&v), 4);
    }
    return out;
  };
  // ggml dims are innermost first: a [out, in] weight is written as {in, out}.
  auto matrix = [&](const std::string& name, uint32_t type, uint32_t out, uint32_t in, float scale) {
    w.AddTensor(name, type, {in, out}, TinyWeights(type, out, in, scale, rng));
  };
  matrix("token_embd.weight", s.embed_type, s.vocab, s.hidden, 1.0f);
  for (uint32_t l = 0; l < s.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.AddTensor(p + "attn_norm.weight", 0, {s.hidden}, vec(s.hidden, 1.0f, 0.2f));
    matrix(p + "attn_q.weight", s.matmul_type, s.heads * head_dim, s.hidden, 0.3f);
    matrix(p + "attn_k.weight", s.matmul_type, s.kv_heads * head_dim, s.hidden, 0.3f);
    matrix(p + "attn_v.weight", s.matmul_type, s.kv_heads * head_dim, s.hidden, 0.3f);
    if (a == "qwen2") {
      w.AddTensor(p + "attn_q.bias", 0, {s.heads * head_dim}, vec(s.heads * head_dim, 0.0f, 0.1f));
      w.AddTensor(p + "attn_k.bias", 0, {s.kv_heads * head_dim}, vec(s.kv_heads * head_dim, 0.0f, 0.1f));
      w.AddTensor(p + "attn_v.bias", 0, {s.kv_heads * head_dim}, vec(s.kv_heads * head_dim, 0.0f, 0.1f));
    }
    matrix(p + "attn_output.weight", s.matmul_type, s.hidden, s.heads * head_dim, 0.2f);
    w.AddTensor(p + "ffn_norm.weight", 0, {s.hidden}, vec(s.hidden, 1.0f, 0.2f));
    matrix(p + "ffn_gate.weight", s.matmul_type, s.ffn, s.hidden, 0.3f);
    matrix(p + "ffn_up.weight", s.matmul_type, s.ffn, s.hidden, 0.3f);
    matrix(p + "ffn_down.weight", s.matmul_type, s.hidden, s.ffn, 0.2f);
  }
  w.AddTensor("output_norm.weight", 0, {s.hidden}, vec(s.hidden, 1.0f, 0.2f));
  if (s.tokenizer) AddTinyTokenizer(w, s.vocab, s.chat_template);
  if (!s.tied) matrix("output.weight", s.matmul_type, s.vocab, s.hidden, 0.5f);
  return w.Build();
}

}  // namespace kiln::formats::testing
