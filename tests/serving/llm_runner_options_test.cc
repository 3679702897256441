// The serving API's options set the way a new user gets them wrong: each is an error naming
// the option, found before any file is read (page_size 0 divided by zero before).
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serving/engine.h"
#include "serving/llm_runner.h"

namespace kiln::serving {
namespace {

using ::testing::HasSubstr;

std::string RunnerError(const LlmRunnerOptions& options, std::shared_ptr<const formats::GgufFile> gguf = nullptr) {
  absl::StatusOr<std::unique_ptr<LlmRunner>> runner = LlmRunner::Load("/nonexistent/model.kx", std::move(gguf), options);
  EXPECT_FALSE(runner.ok());
  return runner.ok() ? "" : std::string(runner.status().message());
}

TEST(LlmRunnerOptions, BadOptionsAreNamedBeforeAnyFileIsRead) {
  LlmRunnerOptions zero_page;
  zero_page.page_size = 0;
  EXPECT_THAT(RunnerError(zero_page), HasSubstr("page_size must be at least 1, got 0"));
  LlmRunnerOptions negative_page;
  negative_page.page_size = -16;
  EXPECT_THAT(RunnerError(negative_page), HasSubstr("page_size must be at least 1, got -16"));
  LlmRunnerOptions negative_cache;
  negative_cache.kv_cache_tokens = -1;
  EXPECT_THAT(RunnerError(negative_cache), HasSubstr("kv_cache_tokens must be 0 (the model's context) or positive, got -1"));
  LlmRunnerOptions zero_batch;
  zero_batch.prompt_batch_tokens = 0;
  EXPECT_THAT(RunnerError(zero_batch), HasSubstr("prompt tokens per call must be positive, got 0"));
  // Good options but no GGUF: an error, not a null dereference.
  EXPECT_THAT(RunnerError(LlmRunnerOptions()), HasSubstr("no GGUF file given"));
}

TEST(EngineOptions, BadOptionsAreNamedBeforeAnyFileIsRead) {
  auto error = [](const EngineOptions& options) {
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Load(options);
    EXPECT_FALSE(engine.ok());
    return engine.ok() ? std::string() : std::string(engine.status().message());
  };
  EngineOptions threads;
  threads.threads = -2;
  EXPECT_THAT(error(threads), HasSubstr("threads must be 0 (all cores) or positive, got -2"));
  EngineOptions running;
  running.max_running = 0;
  EXPECT_THAT(error(running), HasSubstr("max_running must be at least 1"));
  EngineOptions ratio;
  ratio.prefill_time_ratio = -1;
  EXPECT_THAT(error(ratio), HasSubstr("prefill_time_ratio must be a positive number"));
  // No files named: the GGUF's path is in the error.
  EngineOptions empty;
  empty.weights_path = "/nonexistent/model.gguf";
  EXPECT_THAT(error(empty), HasSubstr("/nonexistent/model.gguf"));
}

}  // namespace
}  // namespace kiln::serving
