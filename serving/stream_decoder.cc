#include "serving/stream_decoder.h"

#include "absl/strings/str_cat.h"
#include "serving/utf8.h"

namespace kiln::serving {

absl::StatusOr<std::string> StreamDecoder::Push(int32_t id) {
  if (!tokenizer_->IsValid(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token id ", id, " is outside the vocabulary (", tokenizer_->vocab_size(), " tokens)"));
  }
  std::string_view bytes = tokenizer_->TokenBytes(id, skip_special_);
  std::string text = pending_;
  text.append(bytes.data(), bytes.size());
  pending_.clear();
  // Hold back a trailing incomplete character (at most 3 bytes); everything before it is
  // emitted, invalid bytes replaced.
  size_t keep = 0;
  for (size_t k = 1; k <= 3 && k <= text.size(); ++k) {
    if (IsIncompleteUtf8Char(std::string_view(text).substr(text.size() - k))) {
      keep = k;
      break;
    }
  }
  pending_ = text.substr(text.size() - keep);
  text.resize(text.size() - keep);
  return ReplaceInvalidUtf8(text);
}

std::string StreamDecoder::Finish() {
  std::string rest = ReplaceInvalidUtf8(pending_);
  pending_.clear();
  return rest;
}

}  // namespace kiln::serving
