// SentencePiece (tokenizer.ggml.model "llama") vocabularies against llama.cpp's own
// tokenizer: tests/serving/make_spm_cases.py trains a BPE and a unigram model with
// `sentencepiece`, writes them as GGUF (spm_bpe.gguf, spm_unigram.gguf) and records llama.cpp's
// ids and text for them (spm_cases.inc).
#include <random>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serving/chat_template.h"
#include "serving/stream_decoder.h"
#include "serving/tokenizer.h"
#include "serving/utf8.h"
#include "support/status_macros.h"
#include "tests/formats/gguf_writer.h"
#include "tests/source_dir.h"

namespace kiln::serving {
namespace {

#include "tests/serving/spm_cases.inc"

using ::testing::ElementsAre;
using namespace ::kiln::formats::testing;

std::shared_ptr<const Tokenizer> Load(const std::string& name) {
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> file =
      formats::GgufFile::Open(::kiln::test::SourceDir() + "/tests/serving/" + name);
  if (!file.ok()) {
    ADD_FAILURE() << file.status();
    return nullptr;
  }
  absl::StatusOr<std::shared_ptr<const Tokenizer>> tok = Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status();
    return nullptr;
  }
  return *tok;
}

std::string Show(const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += std::to_string(id) + " ";
  return text;
}

struct Reference {
  const char* file;
  absl::Span<const SpmCase> cases;
  const std::vector<int32_t>& with_special;
  const std::vector<std::vector<int32_t>>& piece_ids;
  const std::vector<int32_t>& end_of_generation;
};

class SpmReference : public ::testing::TestWithParam<Reference> {};

TEST_P(SpmReference, EncodesAndDecodesAsLlamaCpp) {
  std::shared_ptr<const Tokenizer> tok = Load(GetParam().file);
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->is_sentencepiece());
  for (const SpmCase& c : GetParam().cases) {
    absl::StatusOr<std::vector<int32_t>> ids = tok->Encode(c.text, /*allow_special=*/true);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c.ids) << "text: '" << c.text << "'\n got: " << Show(*ids) << "\nwant: " << Show(c.ids);
    EXPECT_EQ(*tok->Decode(c.ids), c.decoded) << "ids: " << Show(c.ids);
  }
}

// bos and eos as the file's add_bos_token / add_eos_token ask (llama_tokenize's add_special).
TEST_P(SpmReference, AddsBosAndEosAsTheFileSays) {
  std::shared_ptr<const Tokenizer> tok = Load(GetParam().file);
  ASSERT_NE(tok, nullptr);
  std::vector<int32_t> ids = *tok->Encode("Hello world");
  if (tok->add_bos()) ids.insert(ids.begin(), tok->bos_id());
  if (tok->add_eos()) ids.push_back(tok->eos_id());
  EXPECT_EQ(ids, GetParam().with_special);
}

// Every token's text (as llama.cpp renders it, less the leading space that encoding adds back
// where add_space_prefix) encodes as llama.cpp encodes it: most to the token alone.
TEST_P(SpmReference, EveryPieceEncodesAsLlamaCpp) {
  std::shared_ptr<const Tokenizer> tok = Load(GetParam().file);
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(static_cast<size_t>(tok->vocab_size()), GetParam().piece_ids.size());
  int self = 0;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    std::string_view text = tok->TokenBytes(id);
    if (tok->add_space_prefix() && !text.empty() && text[0] == ' ') text.remove_prefix(1);
    std::vector<int32_t> ids = *tok->Encode(text, /*allow_special=*/false);
    EXPECT_EQ(ids, GetParam().piece_ids[static_cast<size_t>(id)]) << "token " << id << " '" << tok->TokenText(id) << "'";
    self += ids == std::vector<int32_t>{id};
  }
  // Not vacuous: dozens of pieces come back as themselves (the other BPE pieces lack a "▁"
  // that the space prefix adds, and 256 are bytes).
  EXPECT_GT(self, 30);
}

TEST_P(SpmReference, EndOfGenerationAsLlamaCpp) {
  std::shared_ptr<const Tokenizer> tok = Load(GetParam().file);
  ASSERT_NE(tok, nullptr);
  std::vector<int32_t> ends;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    if (tok->IsEndOfGeneration(id)) ends.push_back(id);
  }
  EXPECT_EQ(ends, GetParam().end_of_generation);
  EXPECT_EQ(tok->TokenText(tok->eos_id()), "</s>");
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, SpmReference,
                         ::testing::Values(Reference{"spm_bpe.gguf", kSpmBpeCases, kSpmBpeWithSpecial, kSpmBpePieceIds,
                                                     kSpmBpeEndOfGeneration},
                                           Reference{"spm_unigram.gguf", kSpmUnigramCases, kSpmUnigramWithSpecial,
                                                     kSpmUnigramPieceIds, kSpmUnigramEndOfGeneration}),
                         [](const auto& info) { return info.index == 0 ? std::string("Bpe") : std::string("Unigram"); });

// Streaming never splits a character that byte fallback spread over several tokens, and keeps
// every space (it continues a prompt, so no leading space is dropped).
TEST(SpmTokenizer, StreamDecoderAssemblesByteFallback) {
  std::shared_ptr<const Tokenizer> tok = Load("spm_bpe.gguf");
  ASSERT_NE(tok, nullptr);
  const std::string text = "Emoji: \xF0\x9F\x98\x80 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC";
  std::vector<int32_t> ids = *tok->Encode(text);
  StreamDecoder decoder(tok);
  std::string joined;
  int held_back = 0;
  for (int32_t id : ids) {
    std::string piece = *decoder.Push(id);
    EXPECT_EQ(ValidUtf8Prefix(piece), piece.size());
    held_back += piece.empty();
    joined += piece;
  }
  joined += decoder.Finish();
  EXPECT_EQ(joined, " " + text);
  EXPECT_GT(held_back, 0);
  EXPECT_EQ(*tok->Decode(ids), text);
}

// Llama 2's, Mistral's and Zephyr's (TinyLlama's) templates render as transformers renders
// them (jinja2), and the prompt tokenizes as llama.cpp tokenizes it (special tokens parsed: the
// template's "<s>" is bos, "<|user|>" a user-defined token).
TEST(SpmTokenizer, ChatTemplatesRenderAndTokenizeAsReference) {
  std::shared_ptr<const Tokenizer> tok = Load("spm_bpe.gguf");
  ASSERT_NE(tok, nullptr);
  for (const SpmTemplateCase& c : kSpmTemplateCases) {
    absl::StatusOr<ChatTemplate> chat = ChatTemplate::Parse(c.template_text, "<s>", "</s>");
    ASSERT_TRUE(chat.ok()) << c.name << ": " << chat.status();
    std::vector<ChatMessage> messages;
    for (const auto& [role, content] : c.messages) messages.push_back({role, content});
    absl::StatusOr<std::string> text = chat->Apply(messages, c.add_generation_prompt);
    ASSERT_TRUE(text.ok()) << c.name << ": " << text.status();
    EXPECT_EQ(*text, c.expected) << c.name;
    EXPECT_EQ(*tok->Encode(*text, /*allow_special=*/true), c.ids) << c.name;
  }
  // As a chat prompt: one bos whether the template writes <s> (Llama 2, Mistral) or not
  // (Zephyr / TinyLlama), as llama.cpp's chat path gives it.
  for (const SpmTemplateCase& c : kSpmTemplateCases) {
    EXPECT_EQ(*tok->EncodeChatPrompt(c.expected), c.chat_ids) << c.name;
  }
  // The templates' own checks: roles must alternate.
  absl::StatusOr<ChatTemplate> llama2 = ChatTemplate::Parse(kSpmTemplateCases[0].template_text, "<s>", "</s>");
  ASSERT_TRUE(llama2.ok());
  absl::StatusOr<std::string> bad = llama2->Apply({{"user", "a"}, {"user", "b"}}, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("Conversation roles must alternate"));
}

// Arbitrary bytes (invalid UTF-8, stray continuation bytes, NULs) and random characters encode
// without error into valid ids; valid UTF-8 decodes back exactly (byte fallback covers every
// byte, and Decode drops only the space that encoding added). Invalid UTF-8 need not: a lead
// byte before a space takes the escaped space's bytes as its character, as in llama.cpp
// (spm_cases.inc has such cases). U+2581 itself is left out: it decodes as a space.
TEST(SpmTokenizer, RandomBytesRoundTrip) {
  for (const char* file : {"spm_bpe.gguf", "spm_unigram.gguf"}) {
    std::shared_ptr<const Tokenizer> tok = Load(file);
    ASSERT_NE(tok, nullptr);
    std::mt19937 rng(20);
    int valid = 0;
    for (int round = 0; round < 300; ++round) {
      std::string text;
      const int n = static_cast<int>(rng() % 64);
      for (int i = 0; i < n; ++i) {
        if (rng() % 3 == 0) {
          text.push_back(static_cast<char>(rng() % 256));
        } else {
          const char* pieces[] = {" ", "  ", "a", "the", "\n", "\t", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x98\x80", "1", "<s>"};
          text += pieces[rng() % std::size(pieces)];
        }
      }
      if (text.find("\xE2\x96\x81") != std::string::npos) continue;
      if (round % 2 == 0) text.erase(ValidUtf8Prefix(text));  // half of them valid UTF-8
      absl::StatusOr<std::vector<int32_t>> ids = tok->Encode(text, /*allow_special=*/false);
      ASSERT_TRUE(ids.ok()) << ids.status();
      for (int32_t id : *ids) ASSERT_TRUE(tok->IsValid(id));
      if (ValidUtf8Prefix(text) == text.size()) {
        EXPECT_EQ(*tok->Decode(*ids), text) << file << " round " << round;
        ++valid;
      }
    }
    EXPECT_GT(valid, 100);
  }
}

// A vocabulary small enough to check by hand: "▁" is a space; scores decide the merge order.
std::string TinyVocabulary(std::vector<std::string> tokens, std::vector<float> scores, std::vector<int32_t> types,
                           bool scores_present = true) {
  GgufWriter writer;
  std::vector<RawValue> score_values, type_values;
  for (float s : scores) score_values.push_back(F32(s));
  for (int32_t t : types) type_values.push_back(I32(t));
  writer.Add("tokenizer.ggml.model", Str("llama")).Add("tokenizer.ggml.tokens", StrArray(tokens));
  if (scores_present) writer.Add("tokenizer.ggml.scores", Array(6, score_values));
  writer.Add("tokenizer.ggml.token_type", Array(5, type_values));
  return writer.Build();
}

absl::StatusOr<std::shared_ptr<const Tokenizer>> TokenizerOf(const std::string& bytes) {
  auto owner = std::make_shared<std::string>(bytes);
  KILN_ASSIGN_OR_RETURN(auto file, formats::GgufFile::Parse(*owner, "tiny.gguf", owner));
  return Tokenizer::FromGguf(*file);
}

TEST(SpmTokenizer, HighestScoreFirstLeftmostAmongEquals) {
  // ids: 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 a, 5 b, 6 ab, 7 ba, 8 ▁a, 9 aba
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "ab", "ba",
                                           "\xE2\x96\x81" "a", "aba"};
  std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  // "ba" scores above "ab" and "▁a": "▁aba" -> ▁ a ba -> ▁a ba ("aba" scores too low to win).
  auto tok = TokenizerOf(TinyVocabulary(tokens, {0, 0, 0, -1, -1, -1, -5, -2, -3, -9}, types));
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_THAT(*(*tok)->Encode("aba"), ElementsAre(8, 7));
  // A higher score merges later pairs first: ▁ ab a -> ▁ aba.
  tok = TokenizerOf(TinyVocabulary(tokens, {0, 0, 0, -1, -1, -1, -2, -5, -9, -1}, types));
  EXPECT_THAT(*(*tok)->Encode("aba"), ElementsAre(3, 9));
  // "ab" and "ba" equal, no "aba": the leftmost pair (a b) wins; (b a) would give ▁a ba.
  tokens.pop_back();
  types.pop_back();
  tok = TokenizerOf(TinyVocabulary(tokens, {0, 0, 0, -1, -1, -1, -2, -2, -9}, types));
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_THAT(*(*tok)->Encode("aba"), ElementsAre(3, 6, 4));
  EXPECT_EQ((*tok)->bos_id(), 1);  // llama.cpp's defaults without the keys
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_EQ((*tok)->unknown_id(), 0);
  EXPECT_TRUE((*tok)->add_bos());
  EXPECT_FALSE((*tok)->add_eos());
  // No byte tokens: a character without a token is the unknown token.
  EXPECT_THAT(*(*tok)->Encode("a\xC3\xA9"), ElementsAre(8, 0));
  EXPECT_EQ(*(*tok)->Decode({8, 7, 1}), "aba<s>");
  EXPECT_EQ(*(*tok)->Decode({8, 7, 1}, /*skip_special=*/true), "aba");
}

TEST(SpmTokenizer, BadVocabulariesAreRefused) {
  auto error = [](const std::string& bytes) {
    auto tok = TokenizerOf(bytes);
    return tok.ok() ? std::string("accepted") : std::string(tok.status().message());
  };
  EXPECT_EQ(error(TinyVocabulary({"<unk>", "<s>", "</s>"}, {0, 0}, {2, 3, 3})),
            "tiny.gguf: tokenizer.ggml.scores is not an array of 3 float32 or int32 numbers");
  // Scores are optional (all 0), as in llama.cpp.
  EXPECT_EQ(error(TinyVocabulary({"<unk>", "<s>", "</s>"}, {}, {2, 3, 3}, /*scores_present=*/false)), "accepted");
  // add_bos_token with no bos token: a vocabulary too small for the default id 1.
  EXPECT_EQ(error(TinyVocabulary({"<unk>"}, {0}, {2})),
            "tiny.gguf: tokenizer.ggml.add_bos_token is true, but there is no bos token");
}

}  // namespace
}  // namespace kiln::serving
