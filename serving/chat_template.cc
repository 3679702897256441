#include "serving/chat_template.h"

#include <map>

#include "support/status_macros.h"

namespace kiln::serving {

absl::StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source, std::string bos_token,
                                                 std::string eos_token) {
  ChatTemplate result;
  KILN_ASSIGN_OR_RETURN(result.template_, JinjaTemplate::Parse(source, "chat template"));
  result.bos_token_ = std::move(bos_token);
  result.eos_token_ = std::move(eos_token);
  return result;
}

const char kChatMlTemplate[] =
    "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

absl::StatusOr<ChatTemplate> ChatTemplate::FromGguf(const formats::GgufFile& file, const Tokenizer& tokenizer) {
  constexpr std::string_view kKey = "tokenizer.chat_template", kToolUseKey = "tokenizer.chat_template.tool_use";
  std::string_view source = kChatMlTemplate;
  std::string fallback;
  if (file.Find(kKey) != nullptr) {
    KILN_ASSIGN_OR_RETURN(source, file.GetString(kKey));  // present but not a string: an error
  } else if (file.Find(kToolUseKey) != nullptr) {
    KILN_ASSIGN_OR_RETURN(source, file.GetString(kToolUseKey));
    fallback = std::string(kToolUseKey);
  } else {
    fallback = "ChatML";
  }
  auto text = [&](int32_t id) { return id >= 0 ? std::string(tokenizer.TokenText(id)) : std::string(); };
  KILN_ASSIGN_OR_RETURN(ChatTemplate result, Parse(source, text(tokenizer.bos_id()), text(tokenizer.eos_id())));
  result.fallback_ = std::move(fallback);
  return result;
}

absl::StatusOr<std::string> ChatTemplate::Apply(absl::Span<const ChatMessage> messages,
                                                bool add_generation_prompt) const {
  JinjaValue::List list;
  for (const ChatMessage& m : messages) {
    list.push_back(JinjaValue::MakeDict({{"role", JinjaValue::String(m.role)}, {"content", JinjaValue::String(m.content)}}));
  }
  std::map<std::string, JinjaValue> variables = {
      {"messages", JinjaValue::MakeList(std::move(list))},
      {"add_generation_prompt", JinjaValue::Bool(add_generation_prompt)},
      {"bos_token", JinjaValue::String(bos_token_)},
      {"eos_token", JinjaValue::String(eos_token_)},
  };
  return template_.Render(variables);
}

}  // namespace kiln::serving
