// Kiln's compiled Llama-family models against the naive forward pass (tests/llm/naive_llama.h):
// tiny random models in every weight format and both architectures (compiled in a second),
// then the bundled SmolLM2: logits within a stated tolerance and greedy continuations equal
// token for token. The compiled side goes through the same code as `kiln generate`:
// codegen::CompileGgufModel, serving::LlmRunner and the paged KV cache.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "tests/llm/compile_test_model.h"
#include "tests/llm/llm_test_util.h"
#include "codegen/cpu_target.h"
#include "codegen/compile_gguf_model.h"
#include "formats/gguf_file.h"
#include "serving/llm_runner.h"
#include "serving/tokenizer.h"
#include "support/file_io.h"
#include "tests/formats/tiny_llama_gguf.h"
#include "tests/llm/naive_llama.h"
#include "tests/model_path.h"

namespace kiln {
namespace {

using formats::testing::TinyLlamaSpec;
using llm_test::Argmax;
using llm_test::MaxAbs;
using llm_test::MaxAbsDiff;
using llm_test::Tokens;

struct Compiled {
  std::shared_ptr<const formats::GgufFile> gguf;
  std::unique_ptr<serving::LlmRunner> runner;
};

Compiled CompileAndLoad(const std::string& gguf_path, int64_t max_tokens, bool kv_float32,
                        bool llama_cpp_numerics = true) {
  Compiled out;
  const std::string kx = llm_test::CompileTestModel(gguf_path, max_tokens, llama_cpp_numerics);
  if (kx.empty()) return out;
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(gguf_path);
  EXPECT_TRUE(gguf.ok()) << gguf.status();
  out.gguf = *gguf;
  serving::LlmRunnerOptions runner_options;
  runner_options.kv_float32 = kv_float32;
  runner_options.kv_cache_tokens = 512;
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> runner = serving::LlmRunner::Load(kx, out.gguf, runner_options);
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (runner.ok()) out.runner = *std::move(runner);
  return out;
}

// Prefill, decode steps, and a batch of two sequences against the naive pass, for one tiny model.
void CheckTinyModel(const TinyLlamaSpec& spec, const std::string& name) {
  SCOPED_TRACE(name);
  const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  Compiled compiled = CompileAndLoad(path, /*max_tokens=*/64, /*kv_float32=*/true);
  ASSERT_NE(compiled.runner, nullptr);
  serving::LlmRunner& runner = *compiled.runner;
  absl::StatusOr<test::NaiveLlama> naive = test::NaiveLlama::Load(*compiled.gguf);
  ASSERT_TRUE(naive.ok()) << naive.status();

  // A prompt spanning several KV pages, then single-token steps.
  const std::vector<int32_t> prompt = Tokens(37, static_cast<int>(spec.vocab), 1);
  ASSERT_TRUE(runner.AddSequence(0).ok());
  absl::StatusOr<std::vector<float>> got = runner.Prefill(0, prompt);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<float> want = naive->LastLogits(prompt);
  EXPECT_LE(MaxAbsDiff(*got, want), 1e-4 * (1 + MaxAbs(want))) << "prefill";
  int64_t position = static_cast<int64_t>(prompt.size());
  for (int step = 0; step < 6; ++step) {
    const int32_t token = Argmax(want);
    const int64_t ids[] = {0};
    const int32_t tokens[] = {token};
    absl::StatusOr<std::vector<std::vector<float>>> next = runner.Decode(ids, tokens);
    ASSERT_TRUE(next.ok()) << next.status();
    want = naive->Forward(token, position++);
    EXPECT_LE(MaxAbsDiff((*next)[0], want), 1e-4 * (1 + MaxAbs(want))) << "decode step " << step;
  }

  // Two sequences of different lengths in one decode step (ragged attention over the cache).
  ASSERT_TRUE(runner.AddSequence(1).ok());
  const std::vector<int32_t> other = Tokens(5, static_cast<int>(spec.vocab), 2);
  ASSERT_TRUE(runner.Prefill(1, other).ok());
  const int64_t ids[] = {0, 1};
  const int32_t tokens[] = {3, 4};
  absl::StatusOr<std::vector<std::vector<float>>> both = runner.Decode(ids, tokens);
  ASSERT_TRUE(both.ok()) << both.status();
  std::vector<float> want0 = naive->Forward(3, position);
  std::vector<int32_t> other_then = other;
  other_then.push_back(4);
  std::vector<float> want1 = naive->LastLogits(other_then);
  EXPECT_LE(MaxAbsDiff((*both)[0], want0), 1e-4 * (1 + MaxAbs(want0))) << "batched, sequence 0";
  EXPECT_LE(MaxAbsDiff((*both)[1], want1), 1e-4 * (1 + MaxAbs(want1))) << "batched, sequence 1";
}

TEST(LlmEndToEnd, TinyModelsInEveryWeightFormatMatchTheNaivePass) {
  for (const auto& [name, spec] : llm_test::TinyModelsInEveryWeightFormat()) CheckTinyModel(spec, name);
}

// A weight type Kiln cannot compute (here IQ2_XXS) is refused when compiling, naming the
// tensor, its type and the supported types.
TEST(LlmEndToEnd, UnsupportedWeightTypesAreRefusedNamingTheTensor) {
  TinyLlamaSpec spec;
  spec.hidden = 256;
  spec.ffn = 256;
  spec.layers = 1;
  spec.matmul_type = 16;
  const std::string path = ::testing::TempDir() + "/tiny_iq2_xxs.gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  codegen::ModelCompileOptions options;
  options.progress = false;
  absl::StatusOr<std::string> compiled = codegen::CompileGgufModel(path, options);
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(std::string(compiled.status().message()),
              ::testing::HasSubstr("tensor 'blk.0.attn_q.weight' has type iq2_xxs; supported for matmul weights: q4_0, "
                                   "q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, f16, bf16, f32"));
}

// A hyperparameter that disagrees with the weights (a corrupt or hand-edited GGUF) is refused
// naming the tensor. Found by mutating the bundled model's metadata (hunt17): a smaller
// feed_forward_length compiled and ran (the weights' own shapes were used), head_count_kv 1
// failed inside a reshape.
TEST(LlmEndToEnd, WeightShapesThatDisagreeWithTheHyperparametersAreRefused) {
  TinyLlamaSpec spec;
  spec.layers = 1;
  const std::string bytes = formats::testing::TinyLlamaGguf(spec);
  // The u32 value after a key (its 8-byte length and text, then a 4-byte type), patched in place.
  auto patched = [&](const std::string& key, uint32_t value) {
    std::string out = bytes;
    const size_t at = out.find(key);
    EXPECT_NE(at, std::string::npos) << key;
    std::memcpy(&out[at + key.size() + 4], &value, 4);
    return out;
  };
  const std::pair<std::string, std::string> kCases[] = {
      {patched("llama.feed_forward_length", 95),
       "tensor 'blk.0.ffn_gate.weight' has shape [96, 64], expected [95, 64] for llama: 1 layers"},
      {patched("llama.attention.head_count_kv", 1),
       "tensor 'blk.0.attn_k.weight' has shape [32, 64], expected [16, 64] for llama: 1 layers"},
  };
  for (const auto& [gguf, message] : kCases) {
    const std::string path = ::testing::TempDir() + "/tiny_inconsistent.gguf";
    ASSERT_TRUE(support::WriteFile(path, gguf).ok());
    codegen::ModelCompileOptions options;
    options.progress = false;
    absl::StatusOr<std::string> compiled = codegen::CompileGgufModel(path, options);
    ASSERT_FALSE(compiled.ok()) << message;
    EXPECT_THAT(std::string(compiled.status().message()), ::testing::HasSubstr(message));
  }
}

TEST(LlmEndToEnd, PromptsLongerThanTheContextAreRefusedClearly) {
  TinyLlamaSpec spec;
  spec.context = 64;
  const std::string path = ::testing::TempDir() + "/tiny_context.gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  Compiled compiled = CompileAndLoad(path, /*max_tokens=*/16, /*kv_float32=*/false);
  ASSERT_NE(compiled.runner, nullptr);
  ASSERT_TRUE(compiled.runner->AddSequence(0).ok());
  // 40 tokens take three calls of at most 16; 70 exceed the context of 64.
  EXPECT_TRUE(compiled.runner->Prefill(0, Tokens(40, 80, 3)).ok());
  absl::StatusOr<std::vector<float>> too_long = compiled.runner->Prefill(0, Tokens(30, 80, 4));
  ASSERT_FALSE(too_long.ok());
  EXPECT_THAT(std::string(too_long.status().message()), ::testing::HasSubstr("more than the context of 64"));
  const int32_t bad[] = {80};
  const int64_t ids[] = {0};
  absl::StatusOr<std::vector<std::vector<float>>> out_of_vocab = compiled.runner->Decode(ids, bad);
  ASSERT_FALSE(out_of_vocab.ok());
  EXPECT_THAT(std::string(out_of_vocab.status().message()), ::testing::HasSubstr("token id 80 is outside the vocabulary"));
}

// A prompt goes in calls of prompt_batch_tokens and then the rest, as llama.cpp splits it
// into micro-batches: with 64 per call, 129 tokens are two calls of 64 and a lone token computed
// as a decode step, bit for bit what the caller gets by making those calls itself.
TEST(LlmEndToEnd, PromptsGoInCallsOfTheMicroBatchSizeAndThenTheRest) {
  TinyLlamaSpec spec;
  spec.matmul_type = 0;
  spec.embed_type = 0;
  spec.hidden = 256;
  const std::string path = ::testing::TempDir() + "/tiny_ubatch.gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  const std::string kx = llm_test::CompileTestModel(path, /*max_tokens=*/160);
  ASSERT_FALSE(kx.empty());
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto load = [&](int64_t prompt_batch_tokens) {
    serving::LlmRunnerOptions options;
    options.kv_cache_tokens = 320;
    options.prompt_batch_tokens = prompt_batch_tokens;
    return serving::LlmRunner::Load(kx, *gguf, options);
  };
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> by_64 = load(64);
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> by_hand = load(160);
  ASSERT_TRUE(by_64.ok()) << by_64.status();
  ASSERT_TRUE(by_hand.ok()) << by_hand.status();
  const std::vector<int32_t> prompt = Tokens(129, static_cast<int>(spec.vocab), 5);
  ASSERT_TRUE((*by_64)->AddSequence(0).ok());
  absl::StatusOr<std::vector<float>> got = (*by_64)->Prefill(0, prompt);
  ASSERT_TRUE(got.ok()) << got.status();

  serving::LlmRunner& runner = **by_hand;
  ASSERT_TRUE(runner.AddSequence(0).ok());
  const std::span<const int32_t> all(prompt);
  ASSERT_TRUE(runner.Prefill(0, all.subspan(0, 64)).ok());
  ASSERT_TRUE(runner.Prefill(0, all.subspan(64, 64)).ok());
  const int64_t ids[] = {0};
  absl::StatusOr<std::vector<std::vector<float>>> want = runner.Decode(ids, all.subspan(128, 1));
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(*got, (*want)[0]);
  // The same prompt in one call (the runner of 160 per call): other bits, else the above
  // would hold whatever the split.
  ASSERT_TRUE(runner.AddSequence(1).ok());
  absl::StatusOr<std::vector<float>> one_call = runner.Prefill(1, prompt);
  ASSERT_TRUE(one_call.ok()) << one_call.status();
  EXPECT_NE(*one_call, *got);

  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> none = load(0);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), ::testing::HasSubstr("prompt tokens per call must be positive"));
}

// With float32 activations, the compiled operators and a float32 cache, the bundled model is
// the exact model up to float32 rounding: its logits are within a tight tolerance of the
// float64 naive pass (without quantized activations) and its greedy tokens are the same.
TEST(LlmEndToEnd, BundledModelGreedyContinuationsEqualTheNaivePass) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  const std::string copy = ::testing::TempDir() + "/bundled.gguf";
  std::filesystem::remove(copy);
  std::filesystem::create_symlink(path, copy);
  Compiled compiled = CompileAndLoad(copy, /*max_tokens=*/256, /*kv_float32=*/true, /*llama_cpp_numerics=*/false);
  ASSERT_NE(compiled.runner, nullptr);
  absl::StatusOr<std::shared_ptr<const serving::Tokenizer>> tokenizer = serving::Tokenizer::FromGguf(*compiled.gguf);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<test::NaiveLlama> naive = test::NaiveLlama::Load(*compiled.gguf, /*quantize_activations=*/false);
  ASSERT_TRUE(naive.ok()) << naive.status();
  const char* prompts[] = {"The capital of France is", "def fibonacci(n):",
                           "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
                           "Once upon a time, in a small village,", "Les fleurs du jardin sont"};
  int64_t id = 0;
  for (const char* text : prompts) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<int32_t>> prompt = (*tokenizer)->Encode(text, /*allow_special=*/true);
    ASSERT_TRUE(prompt.ok());
    std::vector<int32_t> want = naive->Greedy(*prompt, 32);
    ASSERT_TRUE(compiled.runner->AddSequence(id).ok());
    absl::StatusOr<std::vector<float>> logits = compiled.runner->Prefill(id, *prompt);
    ASSERT_TRUE(logits.ok()) << logits.status();
    if (id == 0) {
      std::vector<float> naive_logits = naive->LastLogits(*prompt);
      EXPECT_LE(MaxAbsDiff(*logits, naive_logits), 2e-3 * (1 + MaxAbs(naive_logits)));
    }
    std::vector<int32_t> got;
    for (int i = 0; i < 32; ++i) {
      got.push_back(Argmax(*logits));
      if (i == 31) break;
      const int64_t ids[] = {id};
      const int32_t tokens[] = {got.back()};
      absl::StatusOr<std::vector<std::vector<float>>> next = compiled.runner->Decode(ids, tokens);
      ASSERT_TRUE(next.ok()) << next.status();
      *logits = (*next)[0];
    }
    EXPECT_EQ(got, want);
    ASSERT_TRUE(compiled.runner->RemoveSequence(id).ok());
    ++id;
  }
}

// With the default (llama.cpp's) arithmetic, the 8-bit rounding of every matmul's
// activations turns last-bit differences upstream (the naive pass computes in float64)
// into differences of up to about 1 in the logits; the kernels' exact arithmetic is tested
// bit for bit in tests/builtins/. Here: the logits of each prompt are near the naive pass
// with quantized activations, and the first greedy token is the same.
TEST(LlmEndToEnd, BundledModelWithLlamaCppNumericsStaysNearTheNaivePass) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  const std::string copy = ::testing::TempDir() + "/bundled_q8.gguf";
  std::filesystem::remove(copy);
  std::filesystem::create_symlink(path, copy);
  Compiled compiled = CompileAndLoad(copy, /*max_tokens=*/256, /*kv_float32=*/false);
  ASSERT_NE(compiled.runner, nullptr);
  absl::StatusOr<std::shared_ptr<const serving::Tokenizer>> tokenizer = serving::Tokenizer::FromGguf(*compiled.gguf);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<test::NaiveLlama> naive = test::NaiveLlama::Load(*compiled.gguf, /*quantize_activations=*/true);
  ASSERT_TRUE(naive.ok()) << naive.status();
  int64_t id = 0;
  for (const char* text : {"The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<int32_t>> prompt = (*tokenizer)->Encode(text, /*allow_special=*/true);
    ASSERT_TRUE(prompt.ok());
    ASSERT_TRUE(compiled.runner->AddSequence(id).ok());
    absl::StatusOr<std::vector<float>> logits = compiled.runner->Prefill(id, *prompt);
    ASSERT_TRUE(logits.ok()) << logits.status();
    std::vector<float> naive_logits = naive->LastLogits(*prompt);
    EXPECT_LE(MaxAbsDiff(*logits, naive_logits), 0.1 * (1 + MaxAbs(naive_logits)));
    EXPECT_EQ(Argmax(*logits), Argmax(naive_logits));
    ASSERT_TRUE(compiled.runner->RemoveSequence(id).ok());
    ++id;
  }
}

}  // namespace
}  // namespace kiln
