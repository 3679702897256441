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
  // one takes what llama.cpp takes (common_chat_templates_init): its
  // tokenizer.chat_template.tool_use if it has that, otherwise ChatML (kChatMlTemplate), and
  // says so in fallback(). A template that does not parse stays an error.
  static absl::StatusOr<ChatTemplate> FromGguf(const formats::GgufFile& file, const Tokenizer& tokenizer);

  absl::StatusOr<std::string> Apply(absl::Span<const ChatMessage> messages, bool add_generation_prompt) const;

  // Empty when the file's tokenizer.chat_template is used; otherwise what is used instead
  // ("ChatML" or "tokenizer.chat_template.tool_use"), for a note to the user.
  const std::string& fallback() const { return fallback_; }

 private:
  JinjaTemplate template_;
  std::string bos_token_, eos_token_;
  std::string fallback_;
};

// ChatML, llama.cpp's template for a model without one: each message as
// "<|im_start|>ROLE\nCONTENT<|im_end|>\n", then "<|im_start|>assistant\n" for the reply.
extern const char kChatMlTemplate[];

}  // namespace kiln::serving
