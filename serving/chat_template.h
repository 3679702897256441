// A model's chat template: the GGUF's tokenizer.chat_template (Jinja, run by
// serving/jinja_template.h) applied to a conversation, giving the prompt text the model was
// trained on (e.g. ChatML's "<|im_start|>user\n...<|im_end|>\n"). The template sees
// `messages` (a list of {role, content}), `add_generation_prompt`, `bos_token` and
// `eos_token` (the texts of the tokenizer's bos and eos tokens), and raise_exception().
// Encode the result with special tokens allowed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "formats/gguf_file.h"
#include "serving/jinja_template.h"
#include "serving/tokenizer.h"

namespace kiln::serving {

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
 public:
  // Errors name the template and the line and column of an unsupported construct.
  static absl::StatusOr<ChatTemplate> Parse(std::string_view source, std::string bos_token, std::string eos_token);
  // The file's tokenizer.chat_template, with bos/eos texts from `tokenizer`. A file without
  // a template is an error naming the file and the key.
  static absl::StatusOr<ChatTemplate> FromGguf(const formats::GgufFile& file, const Tokenizer& tokenizer);

  absl::StatusOr<std::string> Apply(absl::Span<const ChatMessage> messages, bool add_generation_prompt) const;

 private:
  JinjaTemplate template_;
  std::string bos_token_, eos_token_;
};

}  // namespace kiln::serving
