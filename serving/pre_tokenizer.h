// Pre-tokenization for byte-level BPE: splits text into pieces that BPE encodes one by one,
// with the regexes that the GGUF's `tokenizer.ggml.pre` names (the regexes of the models'
// original tokenizer.json files; PCRE2 with Unicode properties).
//
// A pre-tokenizer is a sequence of regexes applied in turn: each splits every piece of the
// previous stage into its matches and the text between them ("isolated" splitting), and a
// later regex sees each piece as a whole subject (its lookaheads stop at the piece's end).
// The pieces always concatenate back to the input.
//
// Supported names (and the models that use them):
//   gpt2, gpt-2                      GPT-2's regex
//   smollm, starcoder, refact, ...   each digit alone, then GPT-2's regex
//   llama-bpe, llama3                Llama 3's regex (digits in groups of up to three)
//   qwen2, deepseek-r1-qwen          Qwen2's regex (each digit alone)
// Any other name is an error listing these. Input that is not valid UTF-8 is split in its
// valid runs; each invalid byte is a piece of its own (byte-level BPE encodes any byte).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::serving {

class PreTokenizer {
 public:
  static absl::StatusOr<PreTokenizer> ForName(std::string_view name);

  // Appends the pieces of `text` (views into it) to `pieces`. Fails only if PCRE2 does
  // (e.g. its match limit on pathological input).
  absl::Status Split(std::string_view text, std::vector<std::string_view>* pieces) const;

  const std::string& name() const { return name_; }
  // Llama 3's BPE looks a piece up whole before merging (tokenizer.json's ignore_merges).
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Regex;  // a compiled PCRE2 pattern
  std::string name_;
  bool ignore_merges_ = false;
  std::vector<std::shared_ptr<const Regex>> stages_;
};

}  // namespace kiln::serving
