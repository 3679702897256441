// kiln generate: text from a language model. MODEL (a .gguf, compiled once and cached, or a
// .kx compiled from one; default: the bundled SmolLM2) is loaded with its GGUF weights
// mapped, the prompt (or a chat built with the model's template) is tokenized and
// prefilled, and tokens are sampled and streamed to standard output as they are produced.
// Speeds go to standard error.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "formats/gguf_file.h"
#include "formats/llama_config.h"
#include "serving/chat_template.h"
#include "serving/llm_runner.h"
#include "serving/sampler.h"
#include "serving/stop_strings.h"
#include "serving/stream_decoder.h"
#include "serving/tokenizer.h"
#include "support/file_io.h"
#include "tools/commands.h"
#include "tools/model_resolution.h"
#include "tools/profile_report.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"
#include "vm/thread_pool.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln generate [MODEL] --prompt TEXT [options]\n"
    "\n"
    "Generates text with a language model and prints it as it is produced; prompt and\n"
    "generation speeds go to standard error. MODEL is a GGUF file (Llama family: llama,\n"
    "qwen2), compiled on first use and cached (KILN_CACHE_DIR, default\n"
    "~/.cache/kiln/compiled), or a .kx compiled from one with 'kiln compile MODEL.gguf'.\n"
    "Without MODEL: the bundled SmolLM2-135M-Instruct (scripts/fetch_model.sh puts it in\n"
    "KILN_MODEL_DIR, default ~/.cache/kiln/models).\n"
    "\n"
    "  -m, --model MODEL       the model (the same as MODEL before the options)\n"
    "  -p, --prompt TEXT       the prompt (or the user message with --chat)\n"
    "  -f, --prompt-file FILE  read the prompt from FILE ('-': standard input); one final\n"
    "                          newline is dropped, as llama.cpp's -f/--file does\n"
    "  -n, --max-tokens N      generate at most N tokens (default 256; also --n-predict);\n"
    "                          -1: until the end of generation or a full context, as\n"
    "                          llama.cpp\n"
    "  --chat                  wrap the prompt in the model's chat template as a user\n"
    "                          message, with the assistant's turn to follow\n"
    "  --system TEXT           a system message first (implies --chat)\n"
    "  --temperature T         0 is greedy (default 0.8; also --temp)\n"
    "  --top-k K               keep the K most likely tokens (default 40; 0 or -1: off)\n"
    "  --top-p P               keep the most likely tokens whose probabilities sum to P\n"
    "                          (default 0.95; 1: off)\n"
    "  --min-p P               drop tokens less likely than P times the most likely\n"
    "                          (default 0.05; 0: off)\n"
    "  --repeat-penalty R      penalize tokens of the last --repeat-last-n (default 64)\n"
    "                          tokens: logits divided (positive) or multiplied (negative)\n"
    "                          by R (default 1: off)\n"
    "  --presence-penalty A    subtract A from the logit of every token seen (default 0)\n"
    "  --frequency-penalty A   subtract A times its count from each seen token (default 0)\n"
    "  --seed S                the sampling seed (default or -1: random; printed with -v)\n"
    "  --stop TEXT             stop when TEXT is generated (repeatable; not printed)\n"
    "  --ignore-eos            do not stop at end-of-generation tokens\n"
    "  -t, --threads N         threads for kernels (default: KILN_NUM_THREADS or the cores)\n"
    "  -c, --kv-cache-tokens N KV cache size in tokens, which bounds prompt plus output\n"
    "                          (default: the model's context, at most 32768; also\n"
    "                          --ctx-size); rounded up to a multiple of 256, as llama.cpp\n"
    "                          pads it\n"
    "  -ub, --ubatch-size N    prompt tokens per model call (default 512, llama.cpp's\n"
    "                          n_ubatch: a prompt's logits are then llama.cpp's bit for\n"
    "                          bit, a lone last token included)\n"
    "  --device NAME           run on NAME: cpu (default), vulkan, vulkan:N, cuda, cuda:N;\n"
    "                          a .gguf is compiled for it (the KV cache and attention stay\n"
    "                          on the host, docs/llm.md); a .kx runs where it was compiled\n"
    "                          for\n"
    "  --recompile             compile the GGUF model again even if it is cached\n"
    "  --profile               print each kernel's and builtin's total time to stderr\n"
    "  -v, --verbose           print the model, the cache entry and the seed to stderr\n"
    "\n"
    "Ctrl-C stops the generation after the current token (the text so far, a newline and\n"
    "the speeds are printed; exit status 130); a second Ctrl-C ends the process at once.\n";

// Ctrl-C: the first one asks the token loop to stop (so the output ends cleanly, with its
// newline and speeds), and puts the default action back so that a second one kills.
volatile std::sig_atomic_t interrupted = 0;
extern "C" void OnInterrupt(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln generate: %s\n", message.c_str());
  return 1;
}

int Usage(const std::string& message) { return UsageError("generate", message); }

}  // namespace

int GenerateCommand(int argc, char** argv) {
  std::string model, prompt, prompt_file, system, device;
  bool chat = false, ignore_eos = false, recompile = false, verbose = false, profile = false;
  int64_t max_new_tokens = 256, threads = 0, kv_tokens = 0;
  serving::LlmRunnerOptions runner_options;
  serving::SamplingParams sampling;
  std::vector<std::string> stops;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string v;
    auto value = [&](std::initializer_list<const char*> flags) {
      for (const char* flag : flags) {
        if (OptionValue(argc, argv, &i, flag, &v)) return true;
      }
      return false;
    };
    auto int_value = [&](int64_t* out, int64_t min, int64_t max = INT64_MAX) {
      return absl::SimpleAtoi(v, out) && *out >= min && *out <= max;
    };
    auto float_value = [&](double* out) { return absl::SimpleAtod(v, out); };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (value({"--prompt", "-p"})) {
      prompt = v;
    } else if (value({"--prompt-file", "-f", "--file"})) {
      prompt_file = v;
    } else if (value({"--model", "-m"})) {  // llama.cpp's spelling of the positional MODEL
      if (!model.empty()) return Usage("one model at a time ('" + model + "' and '" + v + "')");
      model = v;
    } else if (value({"--max-tokens", "-n", "--n-predict"})) {
      if (!int_value(&max_new_tokens, -1)) {
        return Usage("--max-tokens needs a count of tokens (0 or more, or -1 for no limit), got '" + v + "'");
      }
      // -1 is llama.cpp's "no limit": generation then ends at an end-of-generation token,
      // a stop string, Ctrl-C or a full context.
      if (max_new_tokens == -1) max_new_tokens = INT64_MAX;
    } else if (value({"--system"})) {
      system = v;
      chat = true;
    } else if (value({"--temperature", "--temp"})) {
      if (!float_value(&sampling.temperature)) return Usage("--temperature needs a number, got '" + v + "'");
    } else if (value({"--top-k"})) {
      // -1 is llama.cpp's and the HTTP API's other spelling of "off".
      if (!int_value(&sampling.top_k, -1)) return Usage("--top-k needs an integer >= -1 (0 or -1: off), got '" + v + "'");
      if (sampling.top_k < 0) sampling.top_k = 0;
    } else if (value({"--top-p"})) {
      if (!float_value(&sampling.top_p)) return Usage("--top-p needs a number, got '" + v + "'");
    } else if (value({"--min-p"})) {
      if (!float_value(&sampling.min_p)) return Usage("--min-p needs a number, got '" + v + "'");
    } else if (value({"--repeat-penalty"})) {
      if (!float_value(&sampling.repeat_penalty)) return Usage("--repeat-penalty needs a number, got '" + v + "'");
    } else if (value({"--repeat-last-n"})) {
      if (!int_value(&sampling.repeat_last_n, 0)) return Usage("--repeat-last-n needs a non-negative integer");
    } else if (value({"--presence-penalty"})) {
      if (!float_value(&sampling.presence_penalty)) return Usage("--presence-penalty needs a number, got '" + v + "'");
    } else if (value({"--frequency-penalty"})) {
      if (!float_value(&sampling.frequency_penalty)) return Usage("--frequency-penalty needs a number, got '" + v + "'");
    } else if (value({"--seed"})) {
      int64_t seed = 0;
      if (!int_value(&seed, -1)) return Usage("--seed needs a non-negative integer (or -1: random), got '" + v + "'");
      // -1 is llama.cpp's "random", what the seed is when none is given.
      if (seed >= 0) sampling.seed = static_cast<uint64_t>(seed);
    } else if (value({"--stop"})) {
      if (v.empty()) return Usage("--stop needs a non-empty text");
      stops.push_back(v);
    } else if (value({"--threads", "-t"})) {
      if (!int_value(&threads, 1, vm::ThreadPool::kMaxThreads)) {
        return Usage(absl::StrCat("--threads needs an integer in [1, ", vm::ThreadPool::kMaxThreads, "], got '", v, "'"));
      }
    } else if (value({"--device"})) {
      device = v;
    } else if (value({"--kv-cache-tokens", "--ctx-size", "-c"})) {
      if (!int_value(&kv_tokens, 1)) return Usage("--kv-cache-tokens needs a positive integer, got '" + v + "'");
    } else if (value({"--ubatch-size", "-ub"})) {
      if (!int_value(&runner_options.prompt_batch_tokens, 1)) {
        return Usage("--ubatch-size needs a positive integer, got '" + v + "'");
      }
    } else if (arg == "--chat") {
      chat = true;
    } else if (arg == "--ignore-eos") {
      ignore_eos = true;
    } else if (arg == "--recompile") {
      recompile = true;
    } else if (arg == "--profile") {
      profile = true;
    } else if (arg == "-v" || arg == "--verbose") {
      verbose = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(UnknownOptionMessage(arg, kUsage));
    } else if (model.empty()) {
      model = arg;
    } else {
      return Usage("one model at a time ('" + model + "' and '" + arg + "'); quote a prompt with spaces");
    }
  }
  if (!prompt_file.empty()) {
    if (!prompt.empty()) return Usage("give --prompt or --prompt-file, not both");
    absl::StatusOr<std::string> text = support::ReadFile(prompt_file == "-" ? "/dev/stdin" : prompt_file);
    if (!text.ok()) return Fail(std::string(text.status().message()));
    prompt = *text;
    // A file's last line ends in a newline that is no part of the prompt (echo, editors):
    // llama.cpp's -f drops one, so the same file gives the same tokens.
    if (!prompt.empty() && prompt.back() == '\n') prompt.pop_back();
  }
  if (prompt.empty() && !chat) return Usage("no prompt (--prompt TEXT)");
  if (threads > 0) setenv("KILN_NUM_THREADS", absl::StrCat(threads).c_str(), 1);  // before the pool starts

  // The model: a .gguf (compiled and cached) or a .kx naming its .gguf.
  absl::StatusOr<ResolvedModel> resolved = ResolveModel(model, threads, recompile, device);
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
  const std::string& executable = resolved->executable;
  const std::string& gguf_path = resolved->gguf_path;
  if (verbose) std::fprintf(stderr, "kiln: model %s, executable %s\n", gguf_path.c_str(), executable.c_str());

  const auto load_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(gguf_path);
  if (!gguf.ok()) return Fail(std::string(gguf.status().message()));
  absl::StatusOr<std::shared_ptr<const serving::Tokenizer>> tokenizer = serving::Tokenizer::FromGguf(**gguf);
  if (!tokenizer.ok()) return Fail(std::string(tokenizer.status().message()));
  // -c is rounded up to a multiple of 256 tokens, as llama.cpp pads a sequence's context
  // (llama_n_ctx gives 512 for 336), so that generation stops where llama.cpp's does. One
  // sequence can use no more of the cache than the model's context: a larger -c would only
  // take memory (llama.cpp would run past the trained context instead), so it is capped.
  // Both with a note.
  if (kv_tokens > 0) {
    absl::StatusOr<formats::LlamaConfig> config = formats::LlamaConfig::FromGguf(**gguf);
    if (!config.ok()) return Fail(std::string(config.status().message()));
    constexpr int64_t kLlamaCppContextPad = 256;
    if (kv_tokens > config->context_length) {
      std::fprintf(stderr, "kiln: note: --kv-cache-tokens %lld is above the model's context of %lld tokens; "
                   "using %lld (prompt and output)\n",
                   static_cast<long long>(kv_tokens), static_cast<long long>(config->context_length),
                   static_cast<long long>(config->context_length));
      kv_tokens = config->context_length;
    } else if (kv_tokens % kLlamaCppContextPad != 0) {
      const int64_t padded = std::min<int64_t>(config->context_length, (kv_tokens / kLlamaCppContextPad + 1) * kLlamaCppContextPad);
      std::fprintf(stderr, "kiln: note: --kv-cache-tokens %lld rounded up to %lld, as llama.cpp pads its context to a "
                   "multiple of %lld\n", static_cast<long long>(kv_tokens), static_cast<long long>(padded),
                   static_cast<long long>(kLlamaCppContextPad));
      kv_tokens = padded;
    }
  }
  runner_options.kv_cache_tokens = kv_tokens;
  runner_options.device = device;
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> runner = serving::LlmRunner::Load(executable, *gguf, runner_options);
  if (!runner.ok()) return Fail(std::string(runner.status().message()));
  if (kv_tokens > 0 && kv_tokens < (*runner)->max_sequence_length()) {
    std::fprintf(stderr, "kiln: note: --kv-cache-tokens %lld rounded up to %lld (whole pages of %lld tokens)\n",
                 static_cast<long long>(kv_tokens), static_cast<long long>((*runner)->max_sequence_length()),
                 static_cast<long long>(runner_options.page_size));
  }

  // The prompt's tokens.
  absl::StatusOr<std::vector<int32_t>> ids;
  if (chat) {
    absl::StatusOr<serving::ChatTemplate> chat_template = serving::ChatTemplate::FromGguf(**gguf, **tokenizer);
    if (!chat_template.ok()) return Fail(std::string(chat_template.status().message()));
    if (!chat_template->fallback().empty()) {
      std::fprintf(stderr, "kiln: note: %s has no tokenizer.chat_template; using %s, as llama.cpp does\n", gguf_path.c_str(),
                   chat_template->fallback().c_str());
    }
    std::vector<serving::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", prompt});
    absl::StatusOr<std::string> text = chat_template->Apply(messages, /*add_generation_prompt=*/true);
    if (!text.ok()) return Fail(std::string(text.status().message()));
    ids = (*tokenizer)->EncodeChatPrompt(*text);
  } else {
    // Control tokens written in the prompt (<|im_start|>) are recognized, as llama.cpp and
    // Hugging Face tokenizers recognize them: a chat written out by hand means the same.
    ids = (*tokenizer)->EncodePrompt(prompt);
  }
  if (!ids.ok()) return Fail(std::string(ids.status().message()));
  if (absl::Status valid = sampling.Validate((*runner)->config().vocab_size); !valid.ok()) {
    return Usage(std::string(valid.message()));
  }
  serving::Sampler sampler(sampling);
  if (verbose) std::fprintf(stderr, "kiln: seed %llu\n", static_cast<unsigned long long>(sampler.seed()));
  serving::StopStrings stop_strings(stops);
  if (ids->empty()) return Fail("the prompt has no tokens");
  if (static_cast<int64_t>(ids->size()) >= (*runner)->max_sequence_length()) {
    return Fail(absl::StrCat("the prompt has ", ids->size(), " tokens; the context holds ",
                             (*runner)->max_sequence_length(), " (room is needed for at least one more)"));
  }
  if (verbose) std::fprintf(stderr, "kiln: prompt of %zu tokens\n", ids->size());

  serving::LlmRunner& llm = **runner;
  llm.vm().EnableProfiling(profile);
  if (absl::Status added = llm.AddSequence(0); !added.ok()) return Fail(std::string(added.message()));
  const auto prefill_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<float>> logits = llm.Prefill(0, *ids);
  if (!logits.ok()) return Fail(std::string(logits.status().message()));
  const auto prefill_end = std::chrono::steady_clock::now();

  serving::StreamDecoder decoder(*tokenizer);
  std::signal(SIGINT, OnInterrupt);
  int64_t generated = 0;
  bool context_full = false;
  std::vector<int32_t> history = *ids;
  while (generated < max_new_tokens && !interrupted) {
    const int32_t token = sampler.Sample(*logits, history);
    ++generated;
    history.push_back(token);
    if (!ignore_eos && (*tokenizer)->IsEndOfGeneration(token)) break;
    absl::StatusOr<std::string> piece = decoder.Push(token);
    if (!piece.ok()) return Fail(std::string(piece.status().message()));
    const std::string out = stop_strings.Push(*piece);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (stop_strings.stopped()) break;
    if (generated >= max_new_tokens) break;
    if (static_cast<int64_t>(history.size()) >= llm.max_sequence_length()) {
      // Not a silent cut: the user asked for more tokens than the context holds.
      context_full = true;
      break;
    }
    const int64_t seq[] = {0};
    const int32_t next[] = {token};
    absl::StatusOr<std::vector<std::vector<float>>> step = llm.Decode(seq, next);
    if (!step.ok()) return Fail(std::string(step.status().message()));
    *logits = std::move((*step)[0]);
  }
  // Interrupted inside a character (a token that ends in part of its bytes): those bytes are
  // dropped rather than printed as replacement characters.
  const std::string tail = stop_strings.stopped() ? std::string()
                           : interrupted          ? stop_strings.Finish()
                                                  : stop_strings.Push(decoder.Finish()) + stop_strings.Finish();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now();
  auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const double prefill_s = seconds(prefill_start, prefill_end);
  const double decode_s = seconds(prefill_end, end);
  std::fprintf(stderr, "kiln: load %.2f s; prompt %zu tokens, %.1f tok/s; generation %lld tokens, %.1f tok/s\n",
               seconds(load_start, prefill_start), ids->size(), static_cast<double>(ids->size()) / prefill_s,
               static_cast<long long>(generated), generated > 1 ? static_cast<double>(generated - 1) / decode_s : 0.0);
  if (context_full) {
    const std::string asked = max_new_tokens == INT64_MAX ? absl::StrCat(generated, " tokens (-n -1)")
                                                          : absl::StrCat(generated, " of ", max_new_tokens, " tokens");
    std::fprintf(stderr, "kiln: stopped after %s: the context holds %lld tokens (prompt and output; "
                 "--kv-cache-tokens sets it, up to the model's %lld)\n",
                 asked.c_str(), static_cast<long long>(llm.max_sequence_length()),
                 static_cast<long long>(llm.config().context_length));
  }
  if (interrupted) {
    std::fprintf(stderr, "kiln: interrupted after %lld tokens\n", static_cast<long long>(generated));
  }
  if (profile) PrintProfile(llm.vm(), stderr);
  return interrupted ? 130 : 0;
}

}  // namespace kiln::tools
