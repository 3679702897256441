// The SentencePiece encoding of a `llama` vocabulary (tokenizer.ggml.model "llama": Llama 2,
// TinyLlama, Mistral, CodeLlama) as llama.cpp runs it, for one fragment of text between
// special tokens whose spaces are already U+2581 ("▁"; serving/tokenizer.cc adds the leading
// space and escapes).
//
// The text starts as one symbol per UTF-8 character (a lead byte's length, cut at the end of
// the text; a stray byte is a symbol of its own). Adjacent symbols whose concatenation is a
// token of the vocabulary are merged, the pair whose token has the highest score first and the
// leftmost first among equal scores, until no adjacent pair forms a token. Every remaining
// symbol is a token, or a single character that is not: that one becomes its bytes' tokens
// (<0xXX>, or a token whose text is the byte itself), or the unknown token if a byte has
// neither (llama.cpp stops with an exception there; SentencePiece gives <unk>).
//
// (llama.cpp's "resegment" step also looks a non-token symbol up among the merged pairs, but
// a merged symbol is always a token, so that lookup never applies.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace kiln::serving {

class SpmEncoder {
 public:
  SpmEncoder() = default;
  // `ids` maps token text to id and must outlive the encoder; `scores` holds each token's
  // score; `byte_tokens` each byte's token or -1; `unknown_id` may be -1 (then a character
  // without byte tokens is dropped).
  SpmEncoder(const absl::flat_hash_map<std::string, int32_t>* ids, std::vector<float> scores,
             const int32_t (&byte_tokens)[256], int32_t unknown_id);

  // Appends the tokens of `text` (spaces already escaped) to `out`.
  void Encode(std::string_view text, std::vector<int32_t>* out) const;

 private:
  int32_t Find(std::string_view text) const;

  const absl::flat_hash_map<std::string, int32_t>* ids_ = nullptr;
  std::vector<float> scores_;
  int32_t byte_tokens_[256] = {};
  int32_t unknown_id_ = -1;
};

}  // namespace kiln::serving
