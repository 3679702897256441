// LlmRunner: a compiled Llama-family model (relax/models/llama_builder.h) ready to run: the
// executable, its GGUF weights, a VM and a paged KV cache sized for the model. It runs the
// model's two functions for sequences of the cache, and is what `kiln generate` and the
// serving engine drive. No compiler is linked: the executable was compiled beforehand.
//
//   auto runner = LlmRunner::Load("model.kx", gguf, options);
//   runner->AddSequence(0);
//   std::vector<float> logits = *runner->Prefill(0, prompt_ids);   // vocab floats
//   ... pick a token t ...
//   logits = (*runner->Decode({0}, {t}))[0];
//
// Errors a caller can cause — an executable not compiled from this GGUF, a prompt longer
// than the context or than the cache can hold, an unknown sequence, a token id outside the
// vocabulary — are statuses naming what is wrong. Not thread-safe: one step at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "builtins/paged_kv_cache.h"
#include "formats/gguf_file.h"
#include "formats/llama_config.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::serving {

struct LlmRunnerOptions {
  // Tokens the KV cache holds over all sequences (0: the model's context length, at most
  // 32768). Rounded up to whole pages.
  int64_t kv_cache_tokens = 0;
  int64_t page_size = 16;
  bool kv_float32 = false;  // K/V stored as float32 instead of float16
  // Where the model's kernels run: "" for the device the executable was compiled for (the
  // kind of its GPU code, device 0; else the CPU), or a device name (vm::GetDevice: "cpu",
  // "vulkan", "vulkan:1", "cuda"), which must be of that kind. The KV cache and its attention
  // stay on the host (builtins/paged_attention.h copies q, k, v there and the output back).
  std::string device;
  // Prompt tokens per model call in Prefill: a longer prompt goes in calls of this many
  // tokens and then the rest, as llama.cpp splits a prompt into micro-batches of n_ubatch
  // (512 by default). Where a model's arithmetic depends on the call, it is llama.cpp's: a
  // lone last token (a prompt of 512·k + 1 tokens) is computed as a decode step, and K-quant
  // matmuls sum in the order of the call's row count (docs/llm.md, Numerics). At most
  // max_call_tokens() are used.
  int64_t prompt_batch_tokens = 512;
};

class LlmRunner {
 public:
  // Loads `executable_path` with its external weights from `gguf` (which must be the file it
  // was compiled from: the loader checks every weight's dtype and shape).
  static absl::StatusOr<std::unique_ptr<LlmRunner>> Load(const std::string& executable_path,
                                                         std::shared_ptr<const formats::GgufFile> gguf,
                                                         const LlmRunnerOptions& options = {});

  const formats::LlamaConfig& config() const { return config_; }
  // The most tokens one sequence may hold (the model's context length, or the cache's size).
  int64_t max_sequence_length() const;
  // The most tokens one call of the compiled functions takes (prefill chunk, decode batch).
  int64_t max_call_tokens() const { return max_call_tokens_; }
  builtins::PagedKvCache& cache() { return *cache_; }
  bool has_prefill_batch() const { return has_prefill_batch_; }
  vm::VirtualMachine& vm() { return *vm_; }
  // Where the kernels run (LlmRunnerOptions::device, resolved).
  vm::Device* device() const { return device_; }

  absl::Status AddSequence(int64_t id);
  absl::Status RemoveSequence(int64_t id);
  // Appends `tokens` (at least one) to sequence `id` and returns the logits after the last,
  // in calls of LlmRunnerOptions::prompt_batch_tokens tokens.
  absl::StatusOr<std::vector<float>> Prefill(int64_t id, std::span<const int32_t> tokens);
  // Appends `chunks[i]` (at least one token each, at most max_call_tokens() in all) to
  // sequence `ids[i]` (each id once) in one call of the model, and returns the logits after
  // each chunk's last token: several prompts prefilled for the price of one weight read.
  // The logits are the same, bit for bit, as Prefill of each chunk on its own. Nothing is
  // appended when it fails. FailedPrecondition for an executable compiled before the model
  // had `prefill_batch` (has_prefill_batch()).
  absl::StatusOr<std::vector<std::vector<float>>> PrefillBatch(std::span<const int64_t> ids,
                                                               std::span<const std::span<const int32_t>> chunks);
  // Appends one token to each of `ids` and returns each one's logits.
  absl::StatusOr<std::vector<std::vector<float>>> Decode(std::span<const int64_t> ids, std::span<const int32_t> tokens);

 private:
  LlmRunner() = default;
  absl::StatusOr<vm::Tensor> RunStep(const std::string& function, std::span<const int64_t> ids,
                                     std::span<const int64_t> counts, std::span<const int32_t> tokens,
                                     const vm::Tensor* rows = nullptr);
  // An error when sequence `id` cannot take `count` more tokens.
  absl::Status CheckRoom(int64_t id, int64_t count) const;

  formats::LlamaConfig config_;
  std::shared_ptr<const formats::GgufFile> gguf_;
  std::shared_ptr<const vm::Executable> executable_;
  std::unique_ptr<vm::VirtualMachine> vm_;
  vm::Device* device_ = nullptr;
  std::shared_ptr<builtins::PagedKvCache> cache_;
  int64_t max_call_tokens_ = 0;
  int64_t prompt_batch_tokens_ = 0;  // min(options' prompt_batch_tokens, max_call_tokens_)
  bool has_prefill_batch_ = false;
};

}  // namespace kiln::serving
