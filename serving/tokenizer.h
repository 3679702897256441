// The tokenizer of a GGUF model, built from the file's vocabulary (tokenizer.ggml.tokens,
// .token_type) and special token ids: byte-level BPE (tokenizer.ggml.model "gpt2", the GPT-2 /
// Llama 3 / Qwen2 / SmolLM family) with its .merges and pre-tokenizer (tokenizer.ggml.pre,
// serving/pre_tokenizer.h), or SentencePiece (tokenizer.ggml.model "llama": Llama 2,
// TinyLlama, Mistral, CodeLlama) with its .scores, as llama.cpp runs each.
//
// SentencePiece: the text is split at special tokens as llama.cpp splits it (each special
// token in turn, longest first, at every occurrence in the text left; control and unknown
// tokens only when the caller allows them). Each text fragment that starts the text or follows
// a special token gets a leading space (tokenizer.ggml.add_space_prefix, default true), its
// spaces become U+2581, and serving/spm_encoder.h merges it by score. Decoding turns U+2581
// back into spaces and <0xXX> tokens into their byte; Decode() drops the leading space of the
// first token as llama.cpp's detokenizer does (StreamDecoder, which continues a prompt, does
// not).
//
// Byte-level BPE: the text is split at special tokens first — user-defined tokens always,
// control tokens (e.g. <|im_start|>) only when the caller allows it, longest match first; the rest
// is pre-tokenized, each piece's bytes become the byte-level symbols (GPT-2's mapping of
// the 256 bytes to printable characters), and BPE merges adjacent symbols, lowest merge rank
// first and leftmost first among equal ranks, until no listed merge applies. A byte whose
// symbol is not in the vocabulary becomes the unknown token (tokenizer.ggml.unknown_token_id)
// or, without one, is dropped — as Hugging Face tokenizers and llama.cpp do.
//
// Decoding maps each token back to its bytes; control tokens give their text unless the
// caller skips them. Decoded bytes need not be valid UTF-8 (a token may hold part of a
// character): serving/stream_decoder.h assembles whole characters.
//
// A Tokenizer is immutable after construction and safe to use from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "formats/gguf_file.h"
#include "serving/pre_tokenizer.h"
#include "serving/spm_encoder.h"

namespace kiln::serving {

// tokenizer.ggml.token_type values (llama.cpp's token attributes).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  // Errors name the file and the key (missing vocabulary, an unsupported tokenizer model, an
  // unknown pre-tokenizer, a token id out of range, ...). Without tokenizer.ggml.pre the
  // GPT-2 pre-tokenizer is used (as llama.cpp does).
  static absl::StatusOr<std::shared_ptr<const Tokenizer>> FromGguf(const formats::GgufFile& file);

  // `allow_special`: recognize control tokens written in the text (for prompts built from a
  // chat template); otherwise "<|im_start|>" in user text is encoded as plain text.
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool allow_special = false) const;

  // A chat template's output encoded as llama.cpp's chat path encodes it: special tokens
  // allowed, then bos first and eos last where the file asks for them (add_bos_token,
  // add_eos_token) and the template did not write them (TinyLlama's template writes no <s>;
  // Llama 2's does, and gets one).
  absl::StatusOr<std::vector<int32_t>> EncodeChatPrompt(std::string_view text) const;

  // A raw prompt encoded as llama-cli and llama.cpp's server encode it (common_tokenize with
  // add_special and parse_special): special tokens allowed, so a chat written out by hand
  // means the same as the template's; bos first and eos last where the file asks for them,
  // even where the text already holds one (llama.cpp adds them regardless).
  absl::StatusOr<std::vector<int32_t>> EncodePrompt(std::string_view text) const;

  // The bytes of `ids`; control and unknown tokens are rendered as their text unless
  // `skip_special`. An id outside the vocabulary is an error.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special = false) const;
  // The bytes of one token (empty for a skipped special token). `id` must be valid.
  std::string_view TokenBytes(int32_t id, bool skip_special = false) const;

  int32_t vocab_size() const { return static_cast<int32_t>(texts_.size()); }
  bool IsValid(int32_t id) const { return id >= 0 && id < vocab_size(); }
  // The vocabulary's text of a token (byte-level symbols, e.g. "Ġthe").
  std::string_view TokenText(int32_t id) const { return texts_[static_cast<size_t>(id)]; }
  TokenType token_type(int32_t id) const { return types_[static_cast<size_t>(id)]; }
  // The id whose vocabulary text is `text`.
  std::optional<int32_t> Find(std::string_view text) const;

  // -1 where the file names none.
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t eot_id() const { return eot_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unknown_id() const { return unknown_id_; }
  // Whether prompts start with bos (tokenizer.ggml.add_bos_token; default false, true for
  // SentencePiece) and end with eos (tokenizer.ggml.add_eos_token; default false).
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // Whether the vocabulary is SentencePiece (tokenizer.ggml.model "llama").
  bool is_sentencepiece() const { return sentencepiece_; }
  // Whether SentencePiece encoding puts a space before the text and after each special token
  // (tokenizer.ggml.add_space_prefix; default true).
  bool add_space_prefix() const { return add_space_prefix_; }
  // Whether generation should stop at `id`: eos, eot, or another end-of-generation control
  // token of the vocabulary (<|im_end|>, <|eot_id|>, <|endoftext|>, <end_of_turn>, </s>).
  bool IsEndOfGeneration(int32_t id) const;
  const PreTokenizer& pre_tokenizer() const { return pre_; }

 private:
  Tokenizer() = default;
  static absl::Status ReadSentencePiece(const formats::GgufFile& file, Tokenizer* tok);
  static absl::Status ReadBytePairMerges(const formats::GgufFile& file, Tokenizer* tok);
  void EncodePiece(std::string_view piece, std::vector<int32_t>* out) const;
  absl::StatusOr<std::vector<int32_t>> EncodeSentencePiece(std::string_view text, bool allow_special) const;

  std::vector<std::string> texts_;   // vocabulary text
  std::vector<std::string> bytes_;   // what each token decodes to
  std::vector<TokenType> types_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  // (left id << 32 | right id) -> (rank, merged id)
  absl::flat_hash_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  int32_t byte_tokens_[256];         // each byte's symbol (SentencePiece: <0xXX>) token, or -1
  // Special tokens matched in text, longest first: (text, id, control or unknown?). Unknown
  // tokens (<unk>) are matched only in SentencePiece vocabularies, as llama.cpp does.
  struct Special {
    std::string text;
    int32_t id;
    bool control;
  };
  std::vector<Special> specials_;
  PreTokenizer pre_;
  int32_t bos_id_ = -1, eos_id_ = -1, eot_id_ = -1, pad_id_ = -1, unknown_id_ = -1;
  bool add_bos_ = false, add_eos_ = false;
  bool sentencepiece_ = false;
  bool add_space_prefix_ = false;
  SpmEncoder spm_;
  std::vector<bool> end_of_generation_;
};

}  // namespace kiln::serving
