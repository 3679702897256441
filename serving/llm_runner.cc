#include "serving/llm_runner.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "serving/gguf_weight_provider.h"
#include "support/status_macros.h"
#include "vm/dtype.h"

namespace kiln::serving {

namespace {

constexpr int64_t kMaxDefaultCacheTokens = 32768;

// The device to run `executable` on: `requested`, or the one it was compiled for. An
// executable holds host code for the CPU plus at most the kernels of one GPU kind; running
// it elsewhere would fail at the first kernel, so it is refused here, naming both.
absl::StatusOr<vm::Device*> ChooseDevice(const vm::Executable& executable, const std::string& path,
                                         const std::string& requested) {
  const std::string compiled_for = executable.CompiledFor();
  KILN_ASSIGN_OR_RETURN(vm::Device* device, vm::GetDevice(requested.empty() ? compiled_for : requested));
  const std::string name = device->name();
  const std::string kind = name.substr(0, name.find(':'));
  if (kind != compiled_for) {
    return absl::InvalidArgumentError(absl::StrCat(path, " was compiled for ", compiled_for, ", not for ", kind,
                                                   ": compile the model with --target ", kind, " to run it on ", name));
  }
  return device;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LlmRunner>> LlmRunner::Load(const std::string& executable_path,
                                                           std::shared_ptr<const formats::GgufFile> gguf,
                                                           const LlmRunnerOptions& options) {
  // The options first, before any file is read: page_size divides below.
  if (options.page_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("page_size must be at least 1, got ", options.page_size));
  }
  if (options.kv_cache_tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv_cache_tokens must be 0 (the model's context) or positive, got ", options.kv_cache_tokens));
  }
  if (options.prompt_batch_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt tokens per call must be positive, got ", options.prompt_batch_tokens));
  }
  if (gguf == nullptr) return absl::InvalidArgumentError(absl::StrCat(executable_path, ": no GGUF file given (null)"));
  std::unique_ptr<LlmRunner> runner(new LlmRunner());
  KILN_ASSIGN_OR_RETURN(runner->config_, formats::LlamaConfig::FromGguf(*gguf));
  runner->gguf_ = gguf;
  GgufWeightProvider weights(gguf);
  vm::LoadOptions load;
  load.weights = &weights;
  KILN_ASSIGN_OR_RETURN(runner->executable_,
                        vm::Executable::LoadFile(executable_path, builtins::DefaultRegistry(), load));
  for (const char* function : {"prefill", "decode"}) {
    if (runner->executable_->FindFunction(function) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(executable_path, ": no function '", function, "': not an executable compiled from a GGUF model"));
    }
  }
  runner->has_prefill_batch_ = runner->executable_->FindFunction("prefill_batch") >= 0;
  const auto& metadata = runner->executable_->contents().metadata;
  auto max_tokens = metadata.find("kiln.model.max_tokens");
  if (max_tokens == metadata.end() || !absl::SimpleAtoi(max_tokens->second, &runner->max_call_tokens_) ||
      runner->max_call_tokens_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(executable_path, ": metadata 'kiln.model.max_tokens' is missing or not a positive integer"));
  }
  runner->prompt_batch_tokens_ = std::min(options.prompt_batch_tokens, runner->max_call_tokens_);
  KILN_ASSIGN_OR_RETURN(runner->device_, ChooseDevice(*runner->executable_, executable_path, options.device));
  KILN_ASSIGN_OR_RETURN(runner->vm_, vm::VirtualMachine::Create(runner->executable_, runner->device_));

  const formats::LlamaConfig& c = runner->config_;
  builtins::PagedKvCache::Config cache;
  cache.num_layers = c.num_layers;
  cache.num_kv_heads = c.num_kv_heads;
  cache.head_dim = c.head_dim;
  cache.page_size = options.page_size;
  cache.dtype = options.kv_float32 ? vm::DTypeFloat32() : DLDataType{kDLFloat, 16, 1};
  const int64_t tokens = options.kv_cache_tokens > 0 ? options.kv_cache_tokens
                                                     : std::min(c.context_length, kMaxDefaultCacheTokens);
  // Rounded up to whole pages without `tokens + page_size - 1`, which overflows for a
  // user's --kv-cache-tokens near 2^63.
  cache.num_pages = tokens / options.page_size + (tokens % options.page_size != 0 ? 1 : 0);
  absl::StatusOr<std::shared_ptr<builtins::PagedKvCache>> created = builtins::PagedKvCache::Create(cache);
  if (!created.ok()) {
    return absl::Status(created.status().code(), absl::StrCat("a KV cache of ", tokens, " tokens (kv_cache_tokens): ",
                                                              created.status().message()));
  }
  runner->cache_ = *std::move(created);
  return runner;
}

int64_t LlmRunner::max_sequence_length() const {
  return std::min(config_.context_length, cache_->config().num_pages * cache_->config().page_size);
}

absl::Status LlmRunner::AddSequence(int64_t id) { return cache_->AddSequence(id); }
absl::Status LlmRunner::RemoveSequence(int64_t id) { return cache_->RemoveSequence(id); }

absl::StatusOr<vm::Tensor> LlmRunner::RunStep(const std::string& function, std::span<const int64_t> ids,
                                              std::span<const int64_t> counts, std::span<const int32_t> tokens,
                                              const vm::Tensor* rows) {
  for (int32_t t : tokens) {
    if (t < 0 || t >= config_.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", t, " is outside the vocabulary [0, ", config_.vocab_size, ")"));
    }
  }
  KILN_ASSIGN_OR_RETURN(vm::Tensor input,
                        vm::Tensor::Empty({static_cast<int64_t>(tokens.size())}, DLDataType{kDLInt, 32, 1}));
  std::memcpy(input.data(), tokens.data(), tokens.size() * sizeof(int32_t));
  // On a GPU the function's inputs go to its memory and the logits come back.
  const bool on_host = device_->dl_device().device_type == kDLCPU;
  vm::Tensor device_rows;
  if (!on_host) {
    KILN_ASSIGN_OR_RETURN(input, input.CopyTo(device_));
    if (rows != nullptr) {
      KILN_ASSIGN_OR_RETURN(device_rows, rows->CopyTo(device_));
    }
  }
  KILN_RETURN_IF_ERROR(cache_->BeginForward({ids.begin(), ids.end()}, {counts.begin(), counts.end()}));
  std::vector<vm::Value> args = {vm::Value(input)};
  if (rows != nullptr) args.push_back(vm::Value(on_host ? *rows : device_rows));
  args.push_back(vm::Value::FromObject(cache_));
  absl::StatusOr<vm::Value> out = vm_->Invoke(function, args);
  if (!out.ok()) {
    cache_->AbortForward();  // the step's tokens are not kept
    return out.status();
  }
  KILN_RETURN_IF_ERROR(cache_->EndForward());
  KILN_ASSIGN_OR_RETURN(vm::Tensor logits, out->GetTensor());
  if (logits.device().device_type != kDLCPU) return logits.CopyTo(vm::CpuDevice());
  return logits;
}

absl::Status LlmRunner::CheckRoom(int64_t id, int64_t count) const {
  KILN_ASSIGN_OR_RETURN(int64_t length, cache_->SequenceLength(id));
  const int64_t limit = max_sequence_length();
  if (length + count > limit) {
    return absl::OutOfRangeError(absl::StrCat("sequence ", id, " would hold ", length + count,
                                              " tokens, more than the context of ", limit, " (the model's ",
                                              config_.context_length, ", the KV cache's ",
                                              cache_->config().num_pages * cache_->config().page_size, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> LlmRunner::Prefill(int64_t id, std::span<const int32_t> tokens) {
  if (tokens.empty()) return absl::InvalidArgumentError("prefill needs at least one token");
  KILN_RETURN_IF_ERROR(CheckRoom(id, static_cast<int64_t>(tokens.size())));
  // llama.cpp's micro-batches: calls of prompt_batch_tokens_ and then the rest, even a lone
  // token (so its bits are llama.cpp's); only the last call's logits count.
  vm::Tensor logits;
  for (size_t start = 0, count = 0; start < tokens.size(); start += count) {
    count = std::min(tokens.size() - start, static_cast<size_t>(prompt_batch_tokens_));
    const int64_t ids[] = {id};
    const int64_t counts[] = {static_cast<int64_t>(count)};
    KILN_ASSIGN_OR_RETURN(logits, RunStep("prefill", ids, counts, tokens.subspan(start, count)));
  }
  const float* data = logits.data_as<float>();
  return std::vector<float>(data, data + config_.vocab_size);
}

absl::StatusOr<std::vector<std::vector<float>>> LlmRunner::PrefillBatch(
    std::span<const int64_t> ids, std::span<const std::span<const int32_t>> chunks) {
  if (ids.size() != chunks.size() || ids.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefill_batch takes one chunk per sequence: ", ids.size(), " sequences, ", chunks.size(), " chunks"));
  }
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (chunks[i].empty()) return absl::InvalidArgumentError(absl::StrCat("sequence ", ids[i], " has an empty chunk"));
    if (std::count(ids.begin(), ids.end(), ids[i]) > 1) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", ids[i], " appears twice in one prefill_batch"));
    }
    KILN_RETURN_IF_ERROR(CheckRoom(ids[i], static_cast<int64_t>(chunks[i].size())));
    counts.push_back(static_cast<int64_t>(chunks[i].size()));
    total += counts.back();
  }
  if (total > max_call_tokens_) {
    return absl::InvalidArgumentError(
        absl::StrCat(total, " tokens in one prefill_batch, more than the ", max_call_tokens_, " a call takes"));
  }
  std::vector<std::vector<float>> out(ids.size());
  if (!has_prefill_batch_) {
    return absl::FailedPreconditionError(
        "the executable has no 'prefill_batch' function (compiled by an older Kiln: recompile it)");
  }
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(total));
  for (std::span<const int32_t> chunk : chunks) tokens.insert(tokens.end(), chunk.begin(), chunk.end());
  KILN_ASSIGN_OR_RETURN(vm::Tensor rows,
                        vm::Tensor::Empty({static_cast<int64_t>(ids.size())}, DLDataType{kDLInt, 64, 1}));
  int64_t end = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    end += counts[i];
    rows.data_as<int64_t>()[i] = end - 1;  // the chunk's last token, in the step's order
  }
  KILN_ASSIGN_OR_RETURN(vm::Tensor logits, RunStep("prefill_batch", ids, counts, tokens, &rows));
  const float* data = logits.data_as<float>();
  for (size_t i = 0; i < ids.size(); ++i) {
    out[i].assign(data + i * config_.vocab_size, data + (i + 1) * config_.vocab_size);
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<float>>> LlmRunner::Decode(std::span<const int64_t> ids,
                                                                   std::span<const int32_t> tokens) {
  if (ids.size() != tokens.size() || ids.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("decode takes one token per sequence: ", ids.size(), " sequences, ", tokens.size(), " tokens"));
  }
  if (static_cast<int64_t>(ids.size()) > max_call_tokens_) {
    return absl::InvalidArgumentError(
        absl::StrCat(ids.size(), " sequences in one decode step, more than the ", max_call_tokens_, " it takes"));
  }
  const int64_t limit = max_sequence_length();
  for (int64_t id : ids) {
    KILN_ASSIGN_OR_RETURN(int64_t length, cache_->SequenceLength(id));
    if (length + 1 > limit) {
      return absl::OutOfRangeError(
          absl::StrCat("sequence ", id, " is at the context limit of ", limit, " tokens"));
    }
  }
  std::vector<int64_t> counts(ids.size(), 1);
  KILN_ASSIGN_OR_RETURN(vm::Tensor logits, RunStep("decode", ids, counts, tokens));
  std::vector<std::vector<float>> out(ids.size());
  const float* data = logits.data_as<float>();
  for (size_t i = 0; i < ids.size(); ++i) {
    out[i].assign(data + i * config_.vocab_size, data + (i + 1) * config_.vocab_size);
  }
  return out;
}

}  // namespace kiln::serving
