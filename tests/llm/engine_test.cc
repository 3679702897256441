// The serving Engine (serving/engine.h) on tiny compiled models with a tokenizer, and on the
// bundled SmolLM2 when it is there. Greedy results are checked against independent drivers:
// the naive float64 forward pass (tests/llm/naive_llama.h) and a plain LlmRunner loop, never
// against the engine itself; scheduling (batching, chunked prefill, preemption, prefix
// caching) must not change them.
#include "serving/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/llm/compile_test_model.h"
#include "codegen/cpu_target.h"
#include "formats/gguf_file.h"
#include "serving/llm_runner.h"
#include "support/file_io.h"
#include "tests/formats/tiny_llama_gguf.h"
#include "tests/llm/naive_llama.h"
#include "tests/model_path.h"

namespace kiln {
namespace {

using serving::Engine;
using serving::EngineOptions;
using serving::FinishReason;
using serving::GenerationRequest;
using serving::TokenEvent;
using ::testing::HasSubstr;

std::vector<int32_t> Tokens(int n, int vocab, int seed) {
  std::vector<int32_t> out;
  uint32_t s = static_cast<uint32_t>(seed) * 2654435761u + 7;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    // Ids from 3 on: the control tokens (0..2) stay out of prompts.
    out.push_back(3 + static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab - 3)));
  }
  return out;
}

// What one choice of a request received.
struct Stream {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<TokenEvent> events;
  FinishReason reason = FinishReason::kNone;
  absl::Status error;
  int finals = 0;
  int events_after_final = 0;
};

// Collects events of many requests (the callback runs on the engine's loop thread) and lets
// the test wait for a request's end.
class Collector {
 public:
  serving::TokenCallback Callback() {
    return [this](const TokenEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      Stream& s = streams_[{e.request_id, e.choice}];
      if (s.finals > 0) ++s.events_after_final;
      if (e.token >= 0) s.tokens.push_back(e.token);
      s.text += e.text;
      s.events.push_back(e);
      if (e.finished) {
        ++s.finals;
        s.reason = e.finish_reason;
        s.error = e.error;
        ++finished_;
        cv_.notify_all();
      }
    };
  }
  void WaitFinished(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(120), [&] { return finished_ >= count; }))
        << finished_ << " of " << count << " choices finished";
  }
  Stream Get(int64_t id, int choice = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_[{id, choice}];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int64_t, int>, Stream> streams_;
  int finished_ = 0;
};

GenerationRequest Greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.sampling = serving::SamplingParams::Greedy();
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

// A tiny q4_1 model with a tokenizer, compiled once for the whole suite.
class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    formats::testing::TinyLlamaSpec spec;
    spec.tokenizer = true;
    spec.layers = 2;
    spec.context = 256;
    gguf_path_ = new std::string(::testing::TempDir() + "/engine_tiny.gguf");
    ASSERT_TRUE(support::WriteFile(*gguf_path_, formats::testing::TinyLlamaGguf(spec)).ok());
    kx_path_ = new std::string(llm_test::CompileTestModel(*gguf_path_, /*max_tokens=*/64));
  }
  static void TearDownTestSuite() {
    delete gguf_path_;
    delete kx_path_;
  }

  static EngineOptions Options(int64_t kv_cache_tokens = 2048, bool prefix_caching = false) {
    EngineOptions options;
    options.executable_path = *kx_path_;
    options.weights_path = *gguf_path_;
    options.runner.kv_cache_tokens = kv_cache_tokens;
    options.runner.page_size = 16;
    options.runner.kv_float32 = true;  // comparable with the naive float64 pass
    options.prefix_caching = prefix_caching;
    return options;
  }

  static std::unique_ptr<Engine> Load(const EngineOptions& options) {
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Load(options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  // Runs each request alone (the next submitted after the previous finished).
  static std::vector<Stream> OneAtATime(const EngineOptions& options, const std::vector<GenerationRequest>& requests) {
    std::unique_ptr<Engine> engine = Load(options);
    Collector collector;
    std::vector<Stream> out;
    if (engine == nullptr) return out;
    int finished = 0;
    for (const GenerationRequest& r : requests) {
      absl::StatusOr<int64_t> id = engine->Submit(r, collector.Callback());
      EXPECT_TRUE(id.ok()) << id.status();
      if (!id.ok()) return out;
      finished += r.n;
      collector.WaitFinished(finished);
      out.push_back(collector.Get(*id));
    }
    return out;
  }

  static std::string* gguf_path_;
  static std::string* kx_path_;
};

std::string* EngineTest::gguf_path_ = nullptr;
std::string* EngineTest::kx_path_ = nullptr;

// What the engine's promise rests on: a sequence's logits are bit for bit the same whatever
// else is in its decode batch (sizes 1 to 9: the matmul kernels take rows four at a time)
// and however its prompt was split into prefill calls of two or more tokens (a lone token
// is computed as llama.cpp computes a decode step: serving/prompt_chunk.h).
TEST_F(EngineTest, LogitsDoNotDependOnTheBatchOrTheChunking) {
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(*gguf_path_);
  ASSERT_TRUE(gguf.ok());
  serving::LlmRunnerOptions options;
  options.kv_cache_tokens = 1024;  // float16 K/V, as served
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> loaded = serving::LlmRunner::Load(*kx_path_, *gguf, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  serving::LlmRunner& runner = **loaded;
  for (int64_t id = 0; id < 9; ++id) {
    ASSERT_TRUE(runner.AddSequence(id).ok());
    ASSERT_TRUE(runner.Prefill(id, Tokens(3 + static_cast<int>(id) * 7, 80, static_cast<int>(id))).ok());
  }
  std::vector<float> alone;
  for (int64_t batch = 1; batch <= 9; ++batch) {
    std::vector<int64_t> ids;
    std::vector<int32_t> tokens;
    // Sequence 0 at the front, then in the middle, of batches of every size.
    for (int64_t i = 0; i < batch; ++i) ids.push_back((i + batch / 2) % batch);
    for (int64_t i = 0; i < batch; ++i) tokens.push_back(static_cast<int32_t>(10 + ids[static_cast<size_t>(i)]));
    absl::StatusOr<std::vector<std::vector<float>>> out = runner.Decode(ids, tokens);
    ASSERT_TRUE(out.ok()) << out.status();
    const size_t at = static_cast<size_t>(std::find(ids.begin(), ids.end(), 0) - ids.begin());
    if (batch == 1) alone = (*out)[at];
    EXPECT_EQ((*out)[at], alone) << "sequence 0 in a batch of " << batch;
    for (int64_t id : ids) ASSERT_TRUE(runner.cache().PopTokens(id, 1).ok());
  }

  const std::vector<int32_t> prompt = Tokens(45, 80, 77);
  ASSERT_TRUE(runner.AddSequence(20).ok());
  absl::StatusOr<std::vector<float>> whole = runner.Prefill(20, prompt);
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(runner.AddSequence(21).ok());
  absl::StatusOr<std::vector<float>> chunked;
  for (size_t start = 0; start < prompt.size(); start += 7) {
    chunked = runner.Prefill(21, std::span<const int32_t>(prompt).subspan(start, std::min<size_t>(7, prompt.size() - start)));
    ASSERT_TRUE(chunked.ok());
  }
  EXPECT_EQ(*chunked, *whole);
}

// The engine's combined step: decode tokens of some sequences and prompt chunks of others
// in one prefill_batch call give each sequence the logits it gets alone, bit for bit.
TEST_F(EngineTest, APrefillBatchGivesEverySequenceTheLogitsItGetsAlone) {
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(*gguf_path_);
  ASSERT_TRUE(gguf.ok());
  serving::LlmRunnerOptions options;
  options.kv_cache_tokens = 1024;
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> loaded = serving::LlmRunner::Load(*kx_path_, *gguf, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  serving::LlmRunner& runner = **loaded;
  ASSERT_TRUE(runner.has_prefill_batch());
  // Sequences 0 and 1 have a history and decode one token; 2 and 3 prefill a chunk of 9
  // and 23 tokens (3 on top of a prompt it already holds).
  const std::vector<int32_t> history0 = Tokens(12, 80, 1), history1 = Tokens(30, 80, 2);
  const std::vector<int32_t> prompt2 = Tokens(9, 80, 3), head3 = Tokens(5, 80, 4), chunk3 = Tokens(23, 80, 5);
  const std::vector<int32_t> next = {17, 42};
  auto set_up = [&](int64_t base) {
    for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(runner.AddSequence(base + i).ok());
    ASSERT_TRUE(runner.Prefill(base + 0, history0).ok());
    ASSERT_TRUE(runner.Prefill(base + 1, history1).ok());
    ASSERT_TRUE(runner.Prefill(base + 3, head3).ok());
  };
  set_up(0);
  std::vector<std::vector<float>> alone;
  absl::StatusOr<std::vector<std::vector<float>>> decoded = runner.Decode(std::vector<int64_t>{0, 1}, next);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  alone = *decoded;
  for (auto [id, tokens] : {std::pair{int64_t{2}, &prompt2}, std::pair{int64_t{3}, &chunk3}}) {
    absl::StatusOr<std::vector<float>> logits = runner.Prefill(id, *tokens);
    ASSERT_TRUE(logits.ok()) << logits.status();
    alone.push_back(*logits);
  }

  set_up(10);
  const std::vector<int64_t> ids = {12, 10, 13, 11};  // prompt rows before and between decode rows
  const std::vector<std::span<const int32_t>> chunks = {prompt2, std::span<const int32_t>(next).first(1), chunk3,
                                                        std::span<const int32_t>(next).last(1)};
  absl::StatusOr<std::vector<std::vector<float>>> together = runner.PrefillBatch(ids, chunks);
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_EQ(together->size(), 4u);
  EXPECT_EQ((*together)[1], alone[0]) << "sequence 0's decode";
  EXPECT_EQ((*together)[3], alone[1]) << "sequence 1's decode";
  EXPECT_EQ((*together)[0], alone[2]) << "sequence 2's prompt";
  EXPECT_EQ((*together)[2], alone[3]) << "sequence 3's chunk";
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(*runner.cache().SequenceLength(10 + i), *runner.cache().SequenceLength(i)) << "sequence " << i;
  }

  // What a caller can get wrong is a status, and nothing is appended.
  const std::vector<int32_t> one = {5};
  EXPECT_FALSE(runner.PrefillBatch(std::vector<int64_t>{10, 10}, std::vector<std::span<const int32_t>>{one, one}).ok());
  EXPECT_FALSE(runner.PrefillBatch(std::vector<int64_t>{10}, std::vector<std::span<const int32_t>>{{}}).ok());
  EXPECT_FALSE(runner.PrefillBatch(std::vector<int64_t>{99}, std::vector<std::span<const int32_t>>{one}).ok());
  EXPECT_FALSE(runner.PrefillBatch(std::vector<int64_t>{}, std::vector<std::span<const int32_t>>{}).ok());
  const std::vector<int32_t> outside = {-1};
  EXPECT_FALSE(runner.PrefillBatch(std::vector<int64_t>{10}, std::vector<std::span<const int32_t>>{outside}).ok());
  const std::vector<int32_t> too_many(static_cast<size_t>(runner.max_call_tokens()) + 1, 5);
  EXPECT_FALSE(runner.PrefillBatch(std::vector<int64_t>{10}, std::vector<std::span<const int32_t>>{too_many}).ok());
  EXPECT_EQ(*runner.cache().SequenceLength(10), static_cast<int64_t>(history0.size() + 1));
}

TEST_F(EngineTest, ConcurrentGreedyRequestsEqualTheSameRequestsOneAtATime) {
  // 48 requests: prompts of 1 to 140 tokens (up to 9 pages), 4 to 40 new tokens.
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 48; ++i) {
    const int length = 1 + (i * 37) % 140;
    requests.push_back(Greedy(Tokens(length, 80, i), 4 + (i * 13) % 37));
  }
  const std::vector<Stream> alone = OneAtATime(Options(), requests);
  ASSERT_EQ(alone.size(), requests.size());

  // The naive float64 pass agrees with the first few, run alone.
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(*gguf_path_);
  ASSERT_TRUE(gguf.ok());
  absl::StatusOr<test::NaiveLlama> naive = test::NaiveLlama::Load(**gguf);
  ASSERT_TRUE(naive.ok()) << naive.status();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(alone[i].tokens, naive->Greedy(*requests[i].prompt_tokens, static_cast<int>(requests[i].max_tokens)))
        << "request " << i;
  }

  // All at once, from four threads, with a small prefill budget (prompts in chunks over
  // several steps, decode batches of up to 48 ragged sequences).
  EngineOptions options = Options();
  options.step_prefill_tokens = 40;
  std::unique_ptr<Engine> engine = Load(options);
  ASSERT_NE(engine, nullptr);
  Collector collector;
  std::vector<int64_t> ids(requests.size(), -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < requests.size(); i += 4) {
        absl::StatusOr<int64_t> id = engine->Submit(requests[i], collector.Callback());
        EXPECT_TRUE(id.ok()) << id.status();
        if (id.ok()) ids[i] = *id;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  engine->Drain();
  serving::EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.requests_finished, 48);
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.queued, 0);
  EXPECT_EQ(stats.kv_pages_used, 0);
  int64_t generated = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    Stream got = collector.Get(ids[i]);
    EXPECT_EQ(got.tokens, alone[i].tokens) << "request " << i;
    EXPECT_EQ(got.text, alone[i].text) << "request " << i;
    EXPECT_EQ(got.reason, FinishReason::kLength);
    EXPECT_EQ(got.finals, 1);
    EXPECT_EQ(got.events_after_final, 0);
    EXPECT_EQ(static_cast<int64_t>(got.tokens.size()), requests[i].max_tokens);
    EXPECT_EQ(got.events.back().completion_tokens, requests[i].max_tokens);
    EXPECT_EQ(got.events.back().prompt_tokens, static_cast<int64_t>(requests[i].prompt_tokens->size()));
    generated += requests[i].max_tokens;
  }
  EXPECT_EQ(stats.generated_tokens_total, generated);
  EXPECT_EQ(stats.time_to_first_token.count, 48);
  EXPECT_EQ(stats.end_to_end_latency.count, 48);
  EXPECT_EQ(stats.inter_token_latency.count, generated - 48);
  EXPECT_EQ(stats.end_to_end_latency.counts.back(), 48);
}

TEST_F(EngineTest, TextStreamsDecodeTheTokensAndChatUsesTheTemplate) {
  std::unique_ptr<Engine> engine = Load(Options());
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->model_name(), "engine_tiny");
  EXPECT_EQ(engine->context_length(), 256);
  Collector collector;
  GenerationRequest text;
  text.prompt = "the cat sat on the mat";
  text.sampling = serving::SamplingParams::Greedy();
  text.max_tokens = 30;
  GenerationRequest chat;
  chat.messages = std::vector<serving::ChatMessage>{{"user", "hi there"}};
  chat.sampling = serving::SamplingParams::Greedy();
  chat.max_tokens = 30;
  absl::StatusOr<int64_t> a = engine->Submit(text, collector.Callback());
  absl::StatusOr<int64_t> b = engine->Submit(chat, collector.Callback());
  ASSERT_TRUE(a.ok() && b.ok());
  engine->Drain();
  absl::StatusOr<std::vector<int32_t>> chat_prompt =
      engine->tokenizer().Encode("<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n", true);
  ASSERT_TRUE(chat_prompt.ok());
  for (int64_t id : {*a, *b}) {
    Stream s = collector.Get(id);
    ASSERT_EQ(s.finals, 1);
    std::vector<int32_t> tokens = s.tokens;
    // An end-of-generation token ends the stream without text of its own.
    if (s.reason == FinishReason::kStop) {
      ASSERT_FALSE(tokens.empty());
      EXPECT_TRUE(engine->tokenizer().IsEndOfGeneration(tokens.back()));
      tokens.pop_back();
    } else {
      EXPECT_EQ(s.reason, FinishReason::kLength);
    }
    absl::StatusOr<std::string> decoded = engine->tokenizer().Decode(tokens);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(s.text, *decoded) << "request " << id;
  }
  EXPECT_EQ(collector.Get(*b).events.back().prompt_tokens, static_cast<int64_t>(chat_prompt->size()));
}

// The same model without tokenizer.chat_template: chat requests use llama.cpp's fallback,
// ChatML, which for this model is what its own (ChatML) template gives: the same tokens.
TEST_F(EngineTest, ChatWithoutATemplateUsesChatMl) {
  formats::testing::TinyLlamaSpec spec;
  spec.tokenizer = true;
  spec.chat_template = false;
  spec.layers = 2;
  spec.context = 256;
  const std::string path = ::testing::TempDir() + "/engine_tiny_no_template.gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  EngineOptions options = Options();
  options.weights_path = path;
  std::unique_ptr<Engine> fallback = Load(options);
  std::unique_ptr<Engine> own = Load(Options());
  ASSERT_NE(fallback, nullptr);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(fallback->chat_template_fallback(), "ChatML");
  EXPECT_EQ(own->chat_template_fallback(), "");
  GenerationRequest chat;
  chat.messages = std::vector<serving::ChatMessage>{{"system", "be brief"}, {"user", "hi there"}};
  chat.sampling = serving::SamplingParams::Greedy();
  chat.max_tokens = 12;
  std::vector<Stream> streams;
  for (Engine* engine : {fallback.get(), own.get()}) {
    Collector collector;
    absl::StatusOr<int64_t> id = engine->Submit(chat, collector.Callback());
    ASSERT_TRUE(id.ok()) << id.status();
    engine->Drain();
    streams.push_back(collector.Get(*id));
  }
  EXPECT_EQ(streams[0].tokens, streams[1].tokens);
  EXPECT_EQ(streams[0].events.back().prompt_tokens, streams[1].events.back().prompt_tokens);
  EXPECT_GT(streams[0].events.back().prompt_tokens, 8);
  std::remove(path.c_str());
}

TEST_F(EngineTest, StopStringsEndTheTextBeforeThem) {
  std::unique_ptr<Engine> engine = Load(Options());
  ASSERT_NE(engine, nullptr);
  Collector collector;
  GenerationRequest r = Greedy(Tokens(12, 80, 99), 40);
  absl::StatusOr<int64_t> first = engine->Submit(r, collector.Callback());
  ASSERT_TRUE(first.ok());
  collector.WaitFinished(1);
  const std::string full = collector.Get(*first).text;
  ASSERT_GE(full.size(), 12u) << full;
  // A stop string taken from the middle of the greedy text: the text ends just before its
  // first occurrence.
  const std::string stop = full.substr(full.size() / 2, 2);
  r.stop = {stop};
  absl::StatusOr<int64_t> second = engine->Submit(r, collector.Callback());
  ASSERT_TRUE(second.ok());
  collector.WaitFinished(2);
  Stream s = collector.Get(*second);
  EXPECT_EQ(s.reason, FinishReason::kStop);
  EXPECT_EQ(s.text, full.substr(0, full.find(stop)));
}

TEST_F(EngineTest, LogprobsAreTheLogSoftmaxOfTheModelsLogits) {
  std::unique_ptr<Engine> engine = Load(Options());
  ASSERT_NE(engine, nullptr);
  Collector collector;
  GenerationRequest r = Greedy(Tokens(20, 80, 5), 3);
  r.top_logprobs = 5;
  absl::StatusOr<int64_t> id = engine->Submit(r, collector.Callback());
  ASSERT_TRUE(id.ok());
  engine->Drain();
  Stream s = collector.Get(*id);
  ASSERT_EQ(s.events.size(), 3u);

  // The first token's distribution from the naive pass.
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(*gguf_path_);
  ASSERT_TRUE(gguf.ok());
  absl::StatusOr<test::NaiveLlama> naive = test::NaiveLlama::Load(**gguf);
  ASSERT_TRUE(naive.ok());
  std::vector<float> logits = naive->LastLogits(*r.prompt_tokens);
  double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
  for (float v : logits) sum += std::exp(v - max);
  const TokenEvent& e = s.events[0];
  ASSERT_EQ(e.top_logprobs.size(), 5u);
  EXPECT_EQ(e.top_logprobs[0].token, e.token);  // greedy: the most likely
  EXPECT_FLOAT_EQ(e.top_logprobs[0].logprob, e.logprob);
  for (size_t i = 0; i < 5; ++i) {
    const int32_t t = e.top_logprobs[i].token;
    EXPECT_NEAR(e.top_logprobs[i].logprob, logits[t] - max - std::log(sum), 1e-3);
    if (i > 0) {
      EXPECT_LE(e.top_logprobs[i].logprob, e.top_logprobs[i - 1].logprob);
    }
  }
  EXPECT_TRUE(s.events[1].top_logprobs.size() == 5 && s.events[1].logprob <= 0);
}

TEST_F(EngineTest, AbortMidStreamFreesEveryPage) {
  std::unique_ptr<Engine> engine = Load(Options(/*kv_cache_tokens=*/1024));
  ASSERT_NE(engine, nullptr);
  const int64_t idle_free = engine->Stats().kv_pages_free;
  EXPECT_EQ(idle_free, 64);
  Collector collector;
  // One request aborts itself from its callback (on the loop thread) after 5 tokens; three
  // are aborted from this thread once they have streamed a few tokens; one more is aborted
  // before it can have started.
  std::atomic<int64_t> self_id{-1};
  std::atomic<int> self_tokens{0};
  serving::TokenCallback collect = collector.Callback();
  Engine* raw = engine.get();
  absl::StatusOr<int64_t> self = engine->Submit(Greedy(Tokens(30, 80, 1), 200), [&, collect](const TokenEvent& e) {
    collect(e);
    if (++self_tokens == 5) raw->Abort(e.request_id);
  });
  ASSERT_TRUE(self.ok());
  self_id = *self;
  std::vector<int64_t> others;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<int64_t> id = engine->Submit(Greedy(Tokens(40 + i, 80, 2 + i), 200), collector.Callback());
    ASSERT_TRUE(id.ok());
    others.push_back(*id);
  }
  for (int i = 0; i < 1000 && collector.Get(others.back()).tokens.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int64_t id : others) engine->Abort(id);
  absl::StatusOr<int64_t> early = engine->Submit(Greedy(Tokens(100, 80, 9), 200), collector.Callback());
  ASSERT_TRUE(early.ok());
  engine->Abort(*early);
  engine->Abort(12345);  // unknown: ignored
  engine->Drain();
  others.push_back(*self);
  others.push_back(*early);
  for (int64_t id : others) {
    Stream s = collector.Get(id);
    EXPECT_EQ(s.reason, FinishReason::kAbort) << "request " << id;
    EXPECT_EQ(s.finals, 1);
    EXPECT_EQ(s.events_after_final, 0);
    EXPECT_LT(s.tokens.size(), 200u);
    EXPECT_EQ(s.events.back().token, -1);
  }
  EXPECT_EQ(collector.Get(*self).tokens.size(), 5u);
  serving::EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.kv_pages_free, idle_free);
  EXPECT_EQ(stats.kv_pages_used, 0);
  EXPECT_EQ(stats.requests_finished, 5);
}

// Many threads submit and abort at random moments, and callbacks submit follow-up requests
// from the loop thread: every request ends exactly once and every page comes back.
TEST_F(EngineTest, SubmitsAndAbortsFromManyThreadsEndEveryRequestOnce) {
  EngineOptions options = Options(/*kv_cache_tokens=*/512);  // small: preemptions happen too
  options.step_prefill_tokens = 24;
  std::unique_ptr<Engine> engine = Load(options);
  ASSERT_NE(engine, nullptr);
  Collector collector;
  serving::TokenCallback collect = collector.Callback();
  Engine* raw = engine.get();
  std::atomic<int> choices{0};
  std::atomic<int> follow_ups{0};
  // A request whose final event submits another, smaller one (from the loop thread).
  std::function<void(const TokenEvent&)> chained = [&, collect](const TokenEvent& e) {
    collect(e);
    if (e.finished && follow_ups.fetch_add(1) < 8) {
      ++choices;
      if (!raw->Submit(Greedy(Tokens(6, 80, 500 + e.choice), 5), collect).ok()) --choices;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        GenerationRequest r = Greedy(Tokens(4 + (t * 8 + i) * 3 % 90, 80, t * 100 + i), 10 + i * 3);
        r.n = 1 + (i % 3 == 0);
        choices += r.n;
        absl::StatusOr<int64_t> id = engine->Submit(r, i % 4 == 1 ? serving::TokenCallback(chained) : collect);
        if (!id.ok()) {
          ADD_FAILURE() << id.status();
          choices -= r.n;
          continue;
        }
        if (i % 2 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(300 * (t + 1)));
          engine->Abort(*id);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  collector.WaitFinished(choices.load());
  engine->Drain();
  collector.WaitFinished(choices.load());  // follow-ups submitted while draining were refused
  serving::EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.kv_pages_used, 0);
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.queued, 0);
  EXPECT_GT(follow_ups.load(), 0);
  for (int64_t id = 1; id <= stats.requests_finished; ++id) {
    Stream s = collector.Get(id);
    EXPECT_EQ(s.finals, 1) << "request " << id;
    EXPECT_EQ(s.events_after_final, 0) << "request " << id;
  }
}

TEST_F(EngineTest, NChoicesForkThePromptAndFollowTheirSeeds) {
  GenerationRequest r;
  r.prompt_tokens = Tokens(37, 80, 11);  // a partly filled last page: copy-on-write
  r.sampling.temperature = 1.0;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0;
  r.sampling.min_p = 0.0;
  r.sampling.seed = 1234;
  r.max_tokens = 30;
  r.ignore_eos = true;
  r.n = 2;
  GenerationRequest single = r;
  single.n = 1;
  GenerationRequest shifted = single;
  shifted.sampling.seed = 1235;  // choice 1 samples with seed + 1

  std::unique_ptr<Engine> engine = Load(Options());
  ASSERT_NE(engine, nullptr);
  Collector collector;
  absl::StatusOr<int64_t> both = engine->Submit(r, collector.Callback());
  absl::StatusOr<int64_t> again = engine->Submit(r, collector.Callback());
  absl::StatusOr<int64_t> first = engine->Submit(single, collector.Callback());
  absl::StatusOr<int64_t> second = engine->Submit(shifted, collector.Callback());
  ASSERT_TRUE(both.ok() && again.ok() && first.ok() && second.ok());
  engine->Drain();
  Stream c0 = collector.Get(*both, 0), c1 = collector.Get(*both, 1);
  ASSERT_EQ(c0.tokens.size(), 30u);
  ASSERT_EQ(c1.tokens.size(), 30u);
  EXPECT_NE(c0.tokens, c1.tokens);
  EXPECT_EQ(collector.Get(*again, 0).tokens, c0.tokens);
  EXPECT_EQ(collector.Get(*again, 1).tokens, c1.tokens);
  EXPECT_EQ(collector.Get(*first).tokens, c0.tokens);
  EXPECT_EQ(collector.Get(*second).tokens, c1.tokens);
  EXPECT_EQ(engine->Stats().kv_pages_used, 0);
}

TEST_F(EngineTest, PrefixCacheReusesSharedPagesWithoutChangingOutputs) {
  // A shared "system prompt" of 40 tokens (two whole pages of 16) and different questions.
  const std::vector<int32_t> system = Tokens(40, 80, 21);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> prompt = system;
    std::vector<int32_t> question = Tokens(3 + i * 5, 80, 30 + i);
    prompt.insert(prompt.end(), question.begin(), question.end());
    requests.push_back(Greedy(prompt, 12));
  }
  requests.push_back(Greedy(Tokens(16, 80, 21), 8));  // the first page exactly: one token computed

  const std::vector<Stream> without = OneAtATime(Options(2048, /*prefix_caching=*/false), requests);
  std::unique_ptr<Engine> engine = Load(Options(2048, /*prefix_caching=*/true));
  ASSERT_NE(engine, nullptr);
  Collector collector;
  int finished = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<int64_t> id = engine->Submit(requests[i], collector.Callback());
    ASSERT_TRUE(id.ok());
    collector.WaitFinished(++finished);
    EXPECT_EQ(collector.Get(*id).tokens, without[i].tokens) << "request " << i;
  }
  // Requests 1..5 reuse the two system pages. The last one's prompt is exactly the first
  // page: reuse is by whole pages and leaves at least one token to compute, so nothing.
  serving::EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.prefix_cache_hit_tokens, 5 * 32);
  EXPECT_GT(stats.kv_pages_used, 0);  // the cached prefixes hold pages while idle
}

TEST_F(EngineTest, PreemptionWhenTheCacheIsTinyKeepsGreedyResults) {
  // 8 pages of 16 tokens; 10 requests that each grow to up to 75 tokens (5 pages).
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 10; ++i) requests.push_back(Greedy(Tokens(5 + i * 2, 80, 40 + i), 40 + i % 3 * 5));
  const std::vector<Stream> alone = OneAtATime(Options(), requests);
  for (bool prefix_caching : {false, true}) {
    SCOPED_TRACE(prefix_caching ? "with prefix caching" : "without prefix caching");
    std::unique_ptr<Engine> engine = Load(Options(/*kv_cache_tokens=*/128, prefix_caching));
    ASSERT_NE(engine, nullptr);
    Collector collector;
    std::vector<int64_t> ids;
    for (const GenerationRequest& r : requests) {
      absl::StatusOr<int64_t> id = engine->Submit(r, collector.Callback());
      ASSERT_TRUE(id.ok()) << id.status();
      ids.push_back(*id);
    }
    engine->Drain();
    for (size_t i = 0; i < requests.size(); ++i) {
      Stream s = collector.Get(ids[i]);
      EXPECT_EQ(s.tokens, alone[i].tokens) << "request " << i;
      EXPECT_EQ(s.reason, FinishReason::kLength) << s.error;
    }
    serving::EngineStats stats = engine->Stats();
    EXPECT_GT(stats.preemptions, 0);
    EXPECT_EQ(stats.requests_finished, 10);
  }
}

TEST_F(EngineTest, BadRequestsAreStatuses) {
  EngineOptions options = Options(/*kv_cache_tokens=*/2048);
  options.max_running = 1;
  options.max_queued = 2;
  std::unique_ptr<Engine> engine = Load(options);
  ASSERT_NE(engine, nullptr);
  Collector collector;
  auto error = [&](GenerationRequest r) {
    absl::StatusOr<int64_t> id = engine->Submit(std::move(r), collector.Callback());
    return id.ok() ? std::string("accepted") : std::string(id.status().message());
  };
  auto code = [&](GenerationRequest r) {
    return engine->Submit(std::move(r), collector.Callback()).status().code();
  };
  EXPECT_EQ(error(Greedy(Tokens(256, 80, 1), 4)),
            "the prompt has 256 tokens; the context holds 256 (room is needed for at least one more)");
  EXPECT_EQ(code(Greedy(Tokens(300, 80, 1), 4)), absl::StatusCode::kOutOfRange);
  // max_tokens the client asked for must fit after the prompt; the default (not asked for)
  // ends at the context's end with finish_reason length instead.
  GenerationRequest beyond = Greedy(Tokens(250, 80, 1), 7);
  beyond.max_tokens_must_fit = true;
  EXPECT_EQ(error(beyond),
            "the context holds 256 tokens; the prompt has 250 and max_tokens asks for 7 more: "
            "max_tokens may be at most 6 for this prompt");
  EXPECT_EQ(code(beyond), absl::StatusCode::kOutOfRange);
  GenerationRequest r = Greedy(Tokens(5, 80, 1), 4);
  r.sampling.top_p = 1.5;
  EXPECT_THAT(error(r), HasSubstr("top_p"));
  r = Greedy(Tokens(5, 80, 1), 4);
  r.sampling.temperature = -1;
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  r = Greedy(Tokens(5, 80, 1), 4);
  r.n = 0;
  EXPECT_EQ(error(r), "n must be in [1, 1], got 0");
  r.n = 2;  // more choices than sequences decoded together
  EXPECT_EQ(error(r), "n must be in [1, 1], got 2");
  r = Greedy(Tokens(5, 80, 1), 4);
  r.top_logprobs = 21;
  EXPECT_EQ(error(r), "top_logprobs must be in [0, 20], got 21");
  r = Greedy(Tokens(5, 80, 1), 0);
  EXPECT_EQ(error(r), "max_tokens must be at least 1, got 0");
  r = Greedy({3, 80}, 4);
  EXPECT_EQ(error(r), "prompt token 80 is outside the vocabulary [0, 80)");
  r = Greedy({}, 4);
  EXPECT_EQ(error(r), "the prompt has no tokens");
  r = Greedy({3}, 4);
  r.prompt = "both";
  EXPECT_EQ(error(r), "a request needs exactly one of prompt, messages or prompt_tokens (2 given)");
  r = Greedy({3}, 4);
  r.stop = {""};
  EXPECT_EQ(error(r), "stop strings must not be empty");
  EXPECT_EQ(engine->Submit(Greedy({3}, 4), nullptr).status().code(), absl::StatusCode::kInvalidArgument);

  // A full queue: one request runs at a time and two may wait.
  int accepted = 0, full = 0;
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<int64_t> id = engine->Submit(Greedy(Tokens(10, 80, i), 100), collector.Callback());
    if (id.ok()) {
      ++accepted;
    } else {
      EXPECT_EQ(id.status().code(), absl::StatusCode::kResourceExhausted);
      EXPECT_THAT(std::string(id.status().message()), HasSubstr("the queue is full"));
      ++full;
    }
  }
  EXPECT_GE(accepted, 2);
  EXPECT_GT(full, 0);
  engine->Drain();
  absl::StatusOr<int64_t> late = engine->Submit(Greedy({3}, 4), collector.Callback());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine->Stats().requests_finished, accepted);

  EngineOptions bad = Options();
  bad.step_prefill_tokens = 0;
  EXPECT_FALSE(Engine::Load(bad).ok());
  bad = Options();
  bad.max_queued = 0;  // would refuse every request, even on an idle engine
  EXPECT_EQ(Engine::Load(bad).status().message(), "max_queued must be at least 1");
  bad = Options();
  bad.executable_path = "/nonexistent.kx";
  EXPECT_FALSE(Engine::Load(bad).ok());
}

TEST_F(EngineTest, DestroyingAnEngineEndsItsRequests) {
  Collector collector;
  int64_t id = 0;
  {
    std::unique_ptr<Engine> engine = Load(Options());
    ASSERT_NE(engine, nullptr);
    absl::StatusOr<int64_t> submitted = engine->Submit(Greedy(Tokens(10, 80, 3), 250), collector.Callback());
    ASSERT_TRUE(submitted.ok());
    id = *submitted;
  }
  Stream s = collector.Get(id);
  EXPECT_EQ(s.finals, 1);
  EXPECT_TRUE(s.reason == FinishReason::kAbort || s.reason == FinishReason::kLength);
}

// The bundled SmolLM2: the engine's greedy answers to prompts submitted together equal a
// plain LlmRunner loop's for each prompt alone.
TEST(EngineBundledModel, GreedyAnswersEqualAPlainRunnerLoop) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  const std::string copy = ::testing::TempDir() + "/engine_bundled.gguf";
  std::filesystem::remove(copy);
  std::filesystem::create_symlink(path, copy);
  const std::string kx = llm_test::CompileTestModel(copy, /*max_tokens=*/256);
  ASSERT_FALSE(kx.empty());
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(copy);
  ASSERT_TRUE(gguf.ok());
  serving::LlmRunnerOptions runner_options;
  runner_options.kv_cache_tokens = 2048;
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> runner = serving::LlmRunner::Load(kx, *gguf, runner_options);
  ASSERT_TRUE(runner.ok()) << runner.status();

  EngineOptions options;
  options.executable_path = kx;
  options.weights_path = copy;
  options.runner = runner_options;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Load(options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const std::vector<std::string> prompts = {"The capital of France is", "def fibonacci(n):",
                                            "Once upon a time, in a small village,"};
  constexpr int kTokens = 24;
  Collector collector;
  std::vector<int64_t> ids;
  for (const std::string& prompt : prompts) {
    GenerationRequest r;
    r.prompt = prompt;
    r.sampling = serving::SamplingParams::Greedy();
    r.max_tokens = kTokens;
    r.ignore_eos = true;
    absl::StatusOr<int64_t> id = (*engine)->Submit(r, collector.Callback());
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  (*engine)->Drain();
  for (size_t p = 0; p < prompts.size(); ++p) {
    SCOPED_TRACE(prompts[p]);
    absl::StatusOr<std::vector<int32_t>> tokens = (*engine)->tokenizer().Encode(prompts[p]);
    ASSERT_TRUE(tokens.ok());
    const serving::Tokenizer& tok = (*engine)->tokenizer();
    if (tok.add_bos() && tok.bos_id() >= 0) tokens->insert(tokens->begin(), tok.bos_id());
    const int64_t seq = static_cast<int64_t>(p);
    ASSERT_TRUE((*runner)->AddSequence(seq).ok());
    absl::StatusOr<std::vector<float>> logits = (*runner)->Prefill(seq, *tokens);
    ASSERT_TRUE(logits.ok()) << logits.status();
    std::vector<int32_t> want;
    for (int i = 0; i < kTokens; ++i) {
      want.push_back(static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin()));
      if (i + 1 == kTokens) break;
      const int64_t seqs[] = {seq};
      const int32_t next[] = {want.back()};
      absl::StatusOr<std::vector<std::vector<float>>> step = (*runner)->Decode(seqs, next);
      ASSERT_TRUE(step.ok()) << step.status();
      *logits = (*step)[0];
    }
    Stream s = collector.Get(ids[p]);
    EXPECT_EQ(s.tokens, want);
    absl::StatusOr<std::string> text = (*engine)->tokenizer().Decode(want);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(s.text, *text);
  }
}

// Not a check: the engine's speed on the bundled model at several concurrencies (run with
// --gtest_also_run_disabled_tests). Prints generated tokens per second and the median
// time to first token and inter-token latency of each level.
TEST(EngineBundledModel, DISABLED_Throughput) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  const std::string copy = ::testing::TempDir() + "/engine_bench.gguf";
  std::filesystem::remove(copy);
  std::filesystem::create_symlink(path, copy);
  const std::string kx = llm_test::CompileTestModel(copy, /*max_tokens=*/256);
  ASSERT_FALSE(kx.empty());
  EngineOptions options;
  options.executable_path = kx;
  options.weights_path = copy;
  options.runner.kv_cache_tokens = 16384;
  options.prefix_caching = false;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Load(options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const char* topics[] = {"the sea", "a city at night", "mountains", "a robot", "bread", "rain", "trains", "music"};
  for (int concurrency : {1, 4, 16, 64}) {
    Collector collector;
    const serving::EngineStats before = (*engine)->Stats();
    const auto start = std::chrono::steady_clock::now();
    int submitted = 0;
    for (int i = 0; i < concurrency; ++i) {
      GenerationRequest r;
      r.prompt = std::string("Write a short story about ") + topics[i % 8] + ", number " + std::to_string(i) + ".";
      r.sampling = serving::SamplingParams::Greedy();
      r.max_tokens = 64;
      r.ignore_eos = true;
      ASSERT_TRUE((*engine)->Submit(r, collector.Callback()).ok());
      ++submitted;
    }
    collector.WaitFinished(submitted);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const serving::EngineStats after = (*engine)->Stats();
    auto mean = [](const serving::LatencyHistogram& a, const serving::LatencyHistogram& b) {
      return (b.sum - a.sum) / std::max<int64_t>(1, b.count - a.count);
    };
    std::printf("concurrency %2d: %6.1f generated tok/s, mean TTFT %6.1f ms, mean inter-token %6.1f ms\n", concurrency,
                static_cast<double>(after.generated_tokens_total - before.generated_tokens_total) / seconds,
                1e3 * mean(before.time_to_first_token, after.time_to_first_token),
                1e3 * mean(before.inter_token_latency, after.inter_token_latency));
  }
}

}  // namespace
}  // namespace kiln
