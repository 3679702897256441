#include "serving/tokenizer.h"

#include <algorithm>
#include <random>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serving/pre_tokenizer.h"
#include "serving/stream_decoder.h"
#include "serving/utf8.h"
#include "support/status_macros.h"
#include "tests/formats/gguf_writer.h"
#include "tests/model_path.h"

namespace kiln::serving {
namespace {

#include "tests/serving/token_cases.inc"

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::kiln::formats::testing;

std::shared_ptr<const Tokenizer> Bundled() {
  static std::shared_ptr<const Tokenizer> tokenizer = [] {
    std::string path = ::kiln::test::BundledModelPath();
    if (path.empty()) return std::shared_ptr<const Tokenizer>();
    auto file = formats::GgufFile::Open(path);
    if (!file.ok()) return std::shared_ptr<const Tokenizer>();
    auto tok = Tokenizer::FromGguf(**file);
    return tok.ok() ? *tok : std::shared_ptr<const Tokenizer>();
  }();
  return tokenizer;
}

#define KILN_BUNDLED_TOKENIZER(var)             \
  KILN_REQUIRE_BUNDLED_MODEL(model_path_);      \
  std::shared_ptr<const Tokenizer> var = Bundled(); \
  ASSERT_NE(var, nullptr) << "the bundled tokenizer did not load"

std::string Show(const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += std::to_string(id) + " ";
  return text;
}

TEST(Tokenizer, BundledModelProperties) {
  KILN_BUNDLED_TOKENIZER(tok);
  EXPECT_EQ(tok->vocab_size(), 49152);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->pad_id(), 2);
  EXPECT_EQ(tok->unknown_id(), 0);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->pre_tokenizer().name(), "smollm");
  EXPECT_EQ(tok->TokenText(1), "<|im_start|>");
  EXPECT_EQ(tok->token_type(1), TokenType::kControl);
  EXPECT_EQ(tok->TokenText(216), "\xC4\xA0");  // "Ġ", a space
  EXPECT_EQ(tok->TokenBytes(216), " ");
  EXPECT_TRUE(tok->IsEndOfGeneration(2));       // <|im_end|>, eos
  EXPECT_TRUE(tok->IsEndOfGeneration(0));       // <|endoftext|>
  EXPECT_FALSE(tok->IsEndOfGeneration(1));
  EXPECT_EQ(*tok->Find("<|im_end|>"), 2);
}

// Ids from Hugging Face tokenizers (tests/serving/make_token_cases.py), except where the two
// differ: a byte without a symbol token is Hugging Face's unknown token (<|endoftext|>, 0) but
// dropped by llama.cpp, which Kiln follows (tests/serving/llama_cpp_prompt_test.cc).
TEST(Tokenizer, MatchesReferenceIds) {
  KILN_BUNDLED_TOKENIZER(tok);
  for (const TokenCase& c : kTokenCases) {
    absl::StatusOr<std::vector<int32_t>> ids = tok->Encode(c.text, /*allow_special=*/true);
    ASSERT_TRUE(ids.ok()) << ids.status();
    std::vector<int32_t> want = c.ids;
    const bool lossy = std::string_view(c.text).find("<|endoftext|>") == std::string_view::npos &&
                       std::erase(want, tok->unknown_id()) > 0;
    EXPECT_EQ(*ids, want) << "text: " << c.text << "\n got: " << Show(*ids) << "\nwant: " << Show(want);
    // Bytes without a symbol token were dropped and cannot come back.
    if (!lossy) {
      EXPECT_EQ(*tok->Decode(*ids), c.text);
    }
  }
}

TEST(Tokenizer, SpecialTokensOnlyWhereAllowed) {
  KILN_BUNDLED_TOKENIZER(tok);
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  std::vector<int32_t> special = *tok->Encode(text, true);
  EXPECT_EQ(special.front(), 1);
  EXPECT_EQ(special.back(), 2);
  std::vector<int32_t> plain = *tok->Encode(text, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(*tok->Decode(plain), text);
  EXPECT_EQ(*tok->Decode(special), text);
  EXPECT_EQ(*tok->Decode(special, /*skip_special=*/true), "user\nhi");
  EXPECT_EQ(tok->Decode({5, 49152}).status().message(), "token id 49152 is outside the vocabulary (49152 tokens)");
}

// Every token decodes to bytes that encode back to the same bytes; every token whose bytes
// are valid UTF-8 encodes to itself alone, except the ones the reference lists (none for
// SmolLM2); each control token's text encodes to it where special tokens are allowed.
TEST(Tokenizer, RoundTripsTheWholeVocabulary) {
  KILN_BUNDLED_TOKENIZER(tok);
  std::set<int32_t> not_self(kNotSelfEncoding.begin(), kNotSelfEncoding.end());
  int invalid_utf8 = 0, not_self_seen = 0;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    std::string bytes(tok->TokenBytes(id));
    std::vector<int32_t> ids = *tok->Encode(bytes, /*allow_special=*/true);
    ASSERT_EQ(*tok->Decode(ids), bytes) << "token " << id;
    if (tok->token_type(id) == TokenType::kControl) {
      EXPECT_THAT(ids, ElementsAre(id));
      continue;
    }
    if (ValidUtf8Prefix(bytes) != bytes.size()) {
      ++invalid_utf8;
      continue;
    }
    if (not_self.count(id)) {
      ++not_self_seen;
      EXPECT_NE(ids, std::vector<int32_t>{id});
    } else {
      EXPECT_THAT(ids, ElementsAre(id)) << "token " << id << " '" << tok->TokenText(id) << "' -> " << Show(ids);
    }
  }
  EXPECT_EQ(invalid_utf8, kTokensNotValidUtf8);
  EXPECT_EQ(not_self_seen, static_cast<int>(not_self.size()));
}

// Random text from many scripts, emoji, digits and whitespace runs survives encode/decode.
TEST(Tokenizer, RoundTripsRandomUtf8) {
  KILN_BUNDLED_TOKENIZER(tok);
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {0x20, 0x7E}, {0x0A, 0x0A}, {0x09, 0x09}, {0xA0, 0x17F}, {0x391, 0x3C9}, {0x410, 0x44F}, {0x5D0, 0x5EA},
      {0x620, 0x64A}, {0x905, 0x939}, {0x3041, 0x3096}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F64F},
      {0x20, 0x20}, {0x30, 0x39}, {0x10000, 0x1000F}, {0x2000, 0x200F}};
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::string text;
    for (int i = 0; i < 300; ++i) {
      auto [lo, hi] = ranges[rng() % ranges.size()];
      uint32_t cp = lo + rng() % (hi - lo + 1);
      if (cp < 0x80) {
        text.push_back(static_cast<char>(cp));
      } else if (cp < 0x800) {
        text += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      } else if (cp < 0x10000) {
        text += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                 static_cast<char>(0x80 | (cp & 0x3F))};
      } else {
        text += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                 static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
      }
    }
    std::vector<int32_t> ids = *tok->Encode(text);
    ASSERT_EQ(*tok->Decode(ids), text);
    EXPECT_LT(ids.size(), text.size());
  }
  // Invalid UTF-8 bytes are encoded byte by byte, and come back.
  const std::string broken = "ok \xC3 \xFF\xFE mid\xE6\x97 end \x80";
  std::string expected = broken;
  expected.erase(std::remove_if(expected.begin(), expected.end(),
                                [&](char c) { return !tok->Find(std::string(1, c)).has_value() && (uint8_t)c >= 0xF5; }),
                 expected.end());
  std::vector<int32_t> ids = *tok->Encode(broken);
  // 0xFF and 0xFE have no symbol token in SmolLM2: dropped, as llama.cpp drops them.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 0);
  EXPECT_EQ(*tok->Decode(ids, /*skip_special=*/true), expected);
}

// Splits from Hugging Face tokenizers' Split with each pre-tokenizer's regex.
TEST(PreTokenizer, MatchesReferenceSplits) {
  for (const SplitCase& c : kSplitCases) {
    absl::StatusOr<PreTokenizer> pre = PreTokenizer::ForName(c.pre);
    ASSERT_TRUE(pre.ok()) << pre.status();
    std::vector<std::string_view> pieces;
    ASSERT_TRUE(pre->Split(c.text, &pieces).ok());
    std::vector<std::string> got(pieces.begin(), pieces.end());
    EXPECT_EQ(got, c.pieces) << c.pre << ": " << c.text;
  }
}

TEST(PreTokenizer, UnknownNameIsAnError) {
  absl::StatusOr<PreTokenizer> pre = PreTokenizer::ForName("tekken");
  ASSERT_FALSE(pre.ok());
  EXPECT_THAT(std::string(pre.status().message()), HasSubstr("unknown pre-tokenizer 'tekken' (tokenizer.ggml.pre)"));
  EXPECT_THAT(std::string(pre.status().message()), HasSubstr("smollm"));
  EXPECT_THAT(std::string(pre.status().message()), HasSubstr("llama-bpe"));
}

TEST(PreTokenizer, InvalidBytesArePiecesOfTheirOwn) {
  PreTokenizer pre = *PreTokenizer::ForName("gpt2");
  std::vector<std::string_view> pieces;
  ASSERT_TRUE(pre.Split("ab\xFF" "cd ef\xC3", &pieces).ok());
  std::vector<std::string> got(pieces.begin(), pieces.end());
  EXPECT_EQ(got, (std::vector<std::string>{"ab", "\xFF", "cd", " ef", "\xC3"}));
}

TEST(StreamDecoder, NeverSplitsACharacter) {
  KILN_BUNDLED_TOKENIZER(tok);
  const std::string text = "Emoji: \xF0\x9F\x98\x80\xF0\x9F\x9A\x80 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC <|im_end|>";
  std::vector<int32_t> ids = *tok->Encode(text, true);
  StreamDecoder decoder(tok);
  std::string joined;
  int held_back = 0;
  for (int32_t id : ids) {
    std::string piece = *decoder.Push(id);
    EXPECT_EQ(ValidUtf8Prefix(piece), piece.size()) << "token " << id;
    held_back += piece.empty();
    joined += piece;
  }
  joined += decoder.Finish();
  EXPECT_EQ(joined, text);
  EXPECT_GT(held_back, 0);  // the emoji and CJK take several byte-level tokens each

  StreamDecoder skipping(tok, /*skip_special=*/true);
  EXPECT_EQ(*skipping.Push(2), "");
  EXPECT_FALSE(skipping.Push(-1).ok());
}

// A vocabulary small enough to check by hand: bytes a, b, c, space ("Ġ"), and merges
// (a b) < (ab c) < (Ġ a); "<u>" is user-defined, "<c>" control, "<0x41>" a byte token.
std::string TinyVocabulary(std::string_view pre, std::vector<std::string> merges = {"a b", "ab c", "\xC4\xA0 a"}) {
  GgufWriter writer;
  writer.Add("tokenizer.ggml.model", Str("gpt2"))
      .Add("tokenizer.ggml.pre", Str(pre))
      .Add("tokenizer.ggml.tokens", StrArray({"<unk>", "a", "b", "c", "\xC4\xA0", "ab", "abc", "\xC4\xA0" "a", "<u>",
                                              "<c>", "<0x41>", "bc"}))
      .Add("tokenizer.ggml.token_type", Array(5, {I32(2), I32(1), I32(1), I32(1), I32(1), I32(1), I32(1), I32(1),
                                                  I32(4), I32(3), I32(6), I32(1)}))
      .Add("tokenizer.ggml.merges", StrArray(merges))
      .Add("tokenizer.ggml.unknown_token_id", U32(0))
      .Add("tokenizer.ggml.eos_token_id", I32(9));
  return writer.Build();
}

absl::StatusOr<std::shared_ptr<const Tokenizer>> TokenizerOf(const std::string& bytes) {
  auto owner = std::make_shared<std::string>(bytes);
  KILN_ASSIGN_OR_RETURN(auto file, formats::GgufFile::Parse(*owner, "tiny.gguf", owner));
  return Tokenizer::FromGguf(*file);
}

TEST(Tokenizer, HandBuiltVocabulary) {
  auto tok = TokenizerOf(TinyVocabulary("gpt2"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const Tokenizer& t = **tok;
  EXPECT_THAT(*t.Encode("abc"), ElementsAre(6));        // (a b) then (ab c)
  EXPECT_THAT(*t.Encode("abcab"), ElementsAre(6, 5));
  EXPECT_THAT(*t.Encode("bca"), ElementsAre(2, 3, 1));  // no merge (b c) listed
  EXPECT_THAT(*t.Encode("a a"), ElementsAre(1, 7));     // " a" is one piece: (Ġ a)
  EXPECT_THAT(*t.Encode("ad"), ElementsAre(1));         // 'd' has no symbol: dropped
  // User-defined tokens are always matched, control tokens only when allowed ('<' and '>'
  // have no symbol token: dropped, as llama.cpp drops them).
  EXPECT_THAT(*t.Encode("a<u>b<c>"), ElementsAre(1, 8, 2, 3));
  EXPECT_THAT(*t.Encode("a<u>b<c>", true), ElementsAre(1, 8, 2, 9));
  EXPECT_EQ(*t.Decode({10, 1, 9}), "Aa<c>");           // byte token, control text
  EXPECT_EQ(t.eos_id(), 9);
  EXPECT_TRUE(t.IsEndOfGeneration(9));
}

TEST(Tokenizer, Llama3LooksUpWholePiecesBeforeMerging) {
  EXPECT_THAT(*(*TokenizerOf(TinyVocabulary("llama-bpe", {})))->Encode("abc"), ElementsAre(6));
  EXPECT_THAT(*(*TokenizerOf(TinyVocabulary("gpt2", {})))->Encode("abc"), ElementsAre(1, 2, 3));
  EXPECT_THAT(*(*TokenizerOf(TinyVocabulary("qwen2", {"b c"})))->Encode("abc"), ElementsAre(1, 11));
}

TEST(Tokenizer, BadVocabulariesAreRefused) {
  auto error = [](const std::string& bytes) {
    auto tok = TokenizerOf(bytes);
    return tok.ok() ? std::string("accepted") : std::string(tok.status().message());
  };
  EXPECT_EQ(error(TinyVocabulary("tekken")).substr(0, 68),
            "tiny.gguf: unknown pre-tokenizer 'tekken' (tokenizer.ggml.pre); Kiln");
  EXPECT_EQ(error(TinyVocabulary("gpt2", {"ab"})),
            "tiny.gguf: tokenizer.ggml.merges entry 0 ('ab') is not two tokens");
  GgufWriter t5;
  t5.Add("tokenizer.ggml.model", Str("t5"));
  EXPECT_EQ(error(t5.Build()),
            "tiny.gguf: tokenizer model 't5' is not supported; Kiln reads byte-level BPE ('gpt2') and SentencePiece "
            "('llama')");
  GgufWriter no_tokens;
  no_tokens.Add("tokenizer.ggml.model", Str("gpt2"));
  EXPECT_EQ(error(no_tokens.Build()), "tiny.gguf: key 'tokenizer.ggml.tokens' is missing");
  GgufWriter bad_types;
  bad_types.Add("tokenizer.ggml.model", Str("gpt2"))
      .Add("tokenizer.ggml.tokens", StrArray({"a", "b"}))
      .Add("tokenizer.ggml.token_type", Array(5, {I32(1)}));
  EXPECT_EQ(error(bad_types.Build()), "tiny.gguf: tokenizer.ggml.token_type has 1 entries for 2 tokens");
  GgufWriter bad_eos;
  bad_eos.Add("tokenizer.ggml.model", Str("gpt2"))
      .Add("tokenizer.ggml.tokens", StrArray({"a", "b"}))
      .Add("tokenizer.ggml.merges", StrArray({}))
      .Add("tokenizer.ggml.eos_token_id", U32(2));
  EXPECT_EQ(error(bad_eos.Build()), "tiny.gguf: tokenizer.ggml.eos_token_id is 2, outside the vocabulary of 2");
}

}  // namespace
}  // namespace kiln::serving
