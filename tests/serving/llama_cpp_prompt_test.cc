// Kiln's prompt tokens against llama.cpp's on real prompts (benchmarks/llm_prompt_parity.py
// wrote the ids with llama.cpp itself): raw prompts as `kiln generate --prompt` and llama-cli
// tokenize them, chat prompts as `kiln generate --chat` and llama.cpp's chat path build them,
// and multi-turn chats as the HTTP API builds them.
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "formats/gguf_file.h"
#include "serving/chat_template.h"
#include "serving/tokenizer.h"
#include "tests/model_path.h"

namespace kiln::serving {
namespace {

#include "tests/serving/llama_cpp_prompt_cases.inc"

std::string Show(const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += std::to_string(id) + " ";
  return text;
}

struct Bundled {
  std::shared_ptr<const formats::GgufFile> file;
  std::shared_ptr<const Tokenizer> tokenizer;
};

#define KILN_BUNDLED(var)                                                      \
  KILN_REQUIRE_BUNDLED_MODEL(model_path_);                                     \
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> file_ = formats::GgufFile::Open(model_path_); \
  ASSERT_TRUE(file_.ok()) << file_.status();                                   \
  absl::StatusOr<std::shared_ptr<const Tokenizer>> tokenizer_ = Tokenizer::FromGguf(**file_); \
  ASSERT_TRUE(tokenizer_.ok()) << tokenizer_.status();                         \
  Bundled var{*file_, *tokenizer_}

absl::StatusOr<std::vector<int32_t>> ChatIds(const Bundled& model, const std::vector<ChatMessage>& messages) {
  absl::StatusOr<ChatTemplate> chat_template = ChatTemplate::FromGguf(*model.file, *model.tokenizer);
  if (!chat_template.ok()) return chat_template.status();
  absl::StatusOr<std::string> text = chat_template->Apply(messages, /*add_generation_prompt=*/true);
  if (!text.ok()) return text.status();
  return model.tokenizer->EncodeChatPrompt(*text);
}

TEST(LlamaCppPrompts, RawAndChatPromptsTokenizeAsLlamaCpp) {
  KILN_BUNDLED(model);
  int checked = 0;
  for (const LlamaCppPromptCase& c : kLlamaCppPromptCases) {
    absl::StatusOr<std::vector<int32_t>> ids;
    if (c.chat) {
      std::vector<ChatMessage> messages;
      if (c.system != nullptr) messages.push_back({"system", c.system});
      messages.push_back({"user", c.user});
      ids = ChatIds(model, messages);
    } else {
      ids = model.tokenizer->EncodePrompt(c.user);
    }
    ASSERT_TRUE(ids.ok()) << c.name << ": " << ids.status();
    EXPECT_EQ(*ids, c.ids) << c.name << "\n got: " << Show(*ids) << "\nwant: " << Show(c.ids);
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

TEST(LlamaCppPrompts, MultiTurnChatsTokenizeAsLlamaCpp) {
  KILN_BUNDLED(model);
  for (const LlamaCppChatCase& c : kLlamaCppChatCases) {
    std::vector<ChatMessage> messages;
    for (const auto& [role, content] : c.messages) messages.push_back({role, content});
    absl::StatusOr<std::vector<int32_t>> ids = ChatIds(model, messages);
    ASSERT_TRUE(ids.ok()) << c.name << ": " << ids.status();
    EXPECT_EQ(*ids, c.ids) << c.name << "\n got: " << Show(*ids) << "\nwant: " << Show(c.ids);
  }
}

}  // namespace
}  // namespace kiln::serving
