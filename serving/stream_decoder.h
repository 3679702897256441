// Turns generated token ids into text as they arrive, never emitting part of a UTF-8
// character: a token that ends inside a character (byte-level BPE splits rare characters
// and emoji across tokens) is held back until the character is complete.
//
// Bytes that can never become a valid character (a stray continuation byte, an invalid
// lead byte, a sequence broken by the next token) are emitted as U+FFFD, so every string
// returned is valid UTF-8. Finish() returns what is left: U+FFFD for a character cut short.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "serving/tokenizer.h"

namespace kiln::serving {

class StreamDecoder {
 public:
  explicit StreamDecoder(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special = false)
      : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

  // The complete characters that token `id` finishes (possibly empty). An id outside the
  // vocabulary is an error and changes nothing.
  absl::StatusOr<std::string> Push(int32_t id);

  // The bytes still held back, as U+FFFD, and a fresh start.
  std::string Finish();

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete character
};

}  // namespace kiln::serving
