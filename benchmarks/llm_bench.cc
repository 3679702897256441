// LLM speed on the CPU (issue 11): for a Llama-family GGUF (default: the bundled SmolLM2),
// compile time, load-to-first-token time from the compiled executable, prefill tok/s for
// prompts of 128 and 512 tokens, decode tok/s at context 16 and 1024, on 1 and 2 threads,
// next to the bandwidth bound measured in the same run: the memory bandwidth of a streaming
// read over a buffer far larger than the caches, divided by the weight bytes a decode step
// reads (every weight once; an embedding table only when it is also the output projection).
//
//   build/benchmarks/llm_bench [MODEL.gguf] [--threads=1,2] [--repeats=3] [--decode-tokens=32]
//                              [--quantized=library|generated] [--activations=q8|float32]
//                              [--kv=f16|f32] [--layer-ops=ggml|compiled] [--executable=MODEL.kx]
//                              [--ubatch=512]
//   build/benchmarks/llm_bench [MODEL.gguf] --greedy=ID,ID,... [--greedy=...] [-n 32]
//                              [--print-logits]
//                              (prints each prompt's greedy continuation's ids, and with
//                              --print-logits its logits after the prompt)
//
// --activations: the library quantized matmuls quantize activations to 8-bit blocks as
// llama.cpp does (q8, the default) or keep them float32; --kv: the KV cache's element type
// (f16, the default and llama.cpp's, attention computed as llama.cpp does; f32: float32
// arithmetic); --layer-ops: RMSNorm, RoPE and SwiGLU as llama.cpp computes them (ggml, the
// default) or the compiled, fused operators; --ubatch: prompt tokens per model call
// (LlmRunnerOptions::prompt_batch_tokens, llama.cpp's n_ubatch). docs/llm.md "Numerics".
//
// Every figure is one line `<metric> threads=<t> <value> <unit>` (threads=0: not threaded),
// which benchmarks/llm_bench_llama_cpp.py parses to put llama.cpp's figures next to them.
//
// The runtime's thread pool is sized once per process (KILN_NUM_THREADS), so each thread
// count runs in a child process (this program again, `--child`), which loads the executable
// the parent compiled: its first lines are therefore a real load from a compiled file. Each
// figure is the best of `--repeats` runs (this machine is shared: the best is the least
// disturbed). Decode feeds back the greedy token each step, as generation does.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/compile_gguf_model.h"
#include "codegen/cpu_target.h"
#include "formats/gguf_file.h"
#include "serving/llm_runner.h"
#include "serving/model_files.h"
#include "serving/tokenizer.h"
#include "support/file_io.h"

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "llm_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) Die(absl::StrCat(what, ": ", value.status().message()));
  return *std::move(value);
}

void Report(const char* metric, int threads, double value, const char* unit) {
  std::printf("%-26s threads=%d %10.2f %s\n", metric, threads, value, unit);
  std::fflush(stdout);
}

struct Options {
  std::string model;
  std::string executable;          // compiled beforehand (skips compiling)
  std::vector<int> threads = {1, 2};
  int repeats = 3;
  int decode_tokens = 32;
  bool library_quantized = true;   // relax LibraryOptions::quantized
  bool quantize_activations = true;  // relax LibraryOptions::quantize_activations
  bool kv_float32 = false;         // serving LlmRunnerOptions::kv_float32
  int ubatch = 512;                // serving LlmRunnerOptions::prompt_batch_tokens
  bool ggml_layer_ops = true;      // codegen ModelCompileOptions::ggml_numerics
  bool child = false;
  std::vector<std::vector<int32_t>> greedy;  // --greedy (repeatable): prompts whose continuation to print
  int greedy_tokens = 32;
  bool print_logits = false;       // --print-logits: each greedy prompt's logits after prefill
};

// --- memory bandwidth ---

// Bytes per second of `threads` threads each summing its share of a buffer much larger than
// the last-level cache: the rate at which weights can stream from memory.
double StreamReadBandwidth(int threads, int repeats) {
  constexpr size_t kBytes = size_t{1} << 30;  // 1 GiB: 32x this machine's L3
  static std::vector<uint64_t> buffer;
  if (buffer.empty()) {
    buffer.resize(kBytes / sizeof(uint64_t));
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = i;  // touch every page
  }
  const size_t words = buffer.size();
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);  // one cache line apart
  double best = 0;
  for (int r = 0; r < repeats + 1; ++r) {  // the first pass warms up
    const auto start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t begin = words * static_cast<size_t>(t) / static_cast<size_t>(threads);
        const size_t end = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        uint64_t s = 0;
        for (size_t i = begin; i < end; ++i) s += buffer[i];
        sums[static_cast<size_t>(t) * 8] = s;
      });
    }
    for (std::thread& th : pool) th.join();
    const double seconds = Seconds(start, Clock::now());
    if (r > 0) best = std::max(best, static_cast<double>(kBytes) / seconds);
  }
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  if (total == 42) std::printf("(unlikely checksum)\n");  // keeps the sums alive
  return best;
}

// Bytes of weights one decode step reads: every tensor once, except a token embedding table
// that is not also the output projection (a lookup reads one row of it).
double WeightBytesPerToken(const kiln::formats::GgufFile& file) {
  const bool tied = file.FindTensor("output.weight") == nullptr;
  double bytes = 0;
  for (const kiln::formats::GgufTensor& t : file.tensors()) {
    if (t.name == "token_embd.weight" && !tied) continue;
    bytes += static_cast<double>(t.nbytes);
  }
  return bytes;
}

// --- running the model ---

// A prompt of `n` tokens: a fixed English text, repeated as needed.
std::vector<int32_t> PromptTokens(const kiln::serving::Tokenizer& tokenizer, int64_t n) {
  static const char* kText =
      "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
      "combined movable metal type, oil-based inks and a wooden press adapted from those used for "
      "wine. Books, once copied by hand over months, could now be produced by the hundreds. Within "
      "fifty years presses were running in more than two hundred cities across Europe, and the "
      "spread of pamphlets, scientific treatises and translations of the Bible changed how people "
      "learned, argued and prayed. ";
  std::vector<int32_t> ids = OrDie(tokenizer.Encode(kText), "tokenizing the prompt");
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < n) out.insert(out.end(), ids.begin(), ids.end());
  out.resize(static_cast<size_t>(n));
  return out;
}

int32_t Argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

struct Loaded {
  std::shared_ptr<const kiln::formats::GgufFile> gguf;
  std::shared_ptr<const kiln::serving::Tokenizer> tokenizer;
  std::unique_ptr<kiln::serving::LlmRunner> runner;
};

Loaded Load(const Options& options) {
  Loaded l;
  l.gguf = OrDie(kiln::formats::GgufFile::Open(options.model), "opening the model");
  l.tokenizer = OrDie(kiln::serving::Tokenizer::FromGguf(*l.gguf), "building the tokenizer");
  kiln::serving::LlmRunnerOptions runner_options;
  runner_options.kv_cache_tokens = 2048;  // enough for the longest run (1024 + decode steps)
  runner_options.kv_float32 = options.kv_float32;
  runner_options.prompt_batch_tokens = options.ubatch;
  l.runner = OrDie(kiln::serving::LlmRunner::Load(options.executable, l.gguf, runner_options), "loading the executable");
  return l;
}

// Prefill tok/s of an `n`-token prompt, best of the repeats.
double PrefillSpeed(kiln::serving::LlmRunner& llm, const std::vector<int32_t>& prompt, int repeats) {
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    if (auto s = llm.AddSequence(1); !s.ok()) Die(std::string(s.message()));
    const auto start = Clock::now();
    OrDie(llm.Prefill(1, prompt), "prefill");
    best = std::max(best, static_cast<double>(prompt.size()) / Seconds(start, Clock::now()));
    if (auto s = llm.RemoveSequence(1); !s.ok()) Die(std::string(s.message()));
  }
  return best;
}

// Decode tok/s after a `context`-token prompt: `steps` greedy steps, best of the repeats.
double DecodeSpeed(kiln::serving::LlmRunner& llm, const std::vector<int32_t>& prompt, int steps, int repeats) {
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    if (auto s = llm.AddSequence(1); !s.ok()) Die(std::string(s.message()));
    int32_t token = Argmax(OrDie(llm.Prefill(1, prompt), "prefill"));
    const int64_t id = 1;
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i) {
      std::vector<std::vector<float>> logits = OrDie(llm.Decode({&id, 1}, {&token, 1}), "decode");
      token = Argmax(logits[0]);
    }
    best = std::max(best, steps / Seconds(start, Clock::now()));
    if (auto s = llm.RemoveSequence(1); !s.ok()) Die(std::string(s.message()));
  }
  return best;
}

// One thread count (the pool was sized by KILN_NUM_THREADS before this process started).
void RunChild(const Options& options, int threads) {
  const auto start = Clock::now();
  Loaded l = Load(options);
  kiln::serving::LlmRunner& llm = *l.runner;
  std::vector<int32_t> first = OrDie(l.tokenizer->Encode("The capital of France is"), "tokenizing");
  if (auto s = llm.AddSequence(0); !s.ok()) Die(std::string(s.message()));
  const int32_t token = Argmax(OrDie(llm.Prefill(0, first), "prefill"));
  Report("load_to_first_token", threads, 1000 * Seconds(start, Clock::now()), "ms");
  if (token < 0) Die("no first token");
  if (auto s = llm.RemoveSequence(0); !s.ok()) Die(std::string(s.message()));

  for (int64_t n : {128, 512}) {
    Report(absl::StrCat("prefill_", n).c_str(), threads, PrefillSpeed(llm, PromptTokens(*l.tokenizer, n), options.repeats),
           "tok/s");
  }
  for (int64_t context : {16, 1024}) {
    Report(absl::StrCat("decode_ctx", context).c_str(), threads,
           DecodeSpeed(llm, PromptTokens(*l.tokenizer, context), options.decode_tokens, options.repeats), "tok/s");
  }
}

// One line `greedy: ID ID ...` per prompt: its greedy continuation.
void RunGreedy(const Options& options) {
  Loaded l = Load(options);
  kiln::serving::LlmRunner& llm = *l.runner;
  const int64_t id = 0;
  for (const std::vector<int32_t>& prompt : options.greedy) {
    if (auto s = llm.AddSequence(id); !s.ok()) Die(std::string(s.message()));
    const std::vector<float> logits = OrDie(llm.Prefill(id, prompt), "prefill");
    if (options.print_logits) {
      std::printf("logits:");
      for (float v : logits) std::printf(" %.9g", v);
      std::printf("\n");
    }
    int32_t token = Argmax(logits);
    std::printf("greedy:");
    for (int i = 0; i < options.greedy_tokens; ++i) {
      std::printf(" %d", token);
      if (i + 1 < options.greedy_tokens) token = Argmax(OrDie(llm.Decode({&id, 1}, {&token, 1}), "decode")[0]);
    }
    std::printf("\n");
    if (auto s = llm.RemoveSequence(id); !s.ok()) Die(std::string(s.message()));
  }
}

// Runs this program again with `--child` for `threads` threads; whether it succeeded.
bool SpawnChild(const Options& options, int threads) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    setenv("KILN_NUM_THREADS", std::to_string(threads).c_str(), 1);
    std::vector<std::string> args = {"llm_bench", options.model, "--child", absl::StrCat("--threads=", threads),
                                     "--executable=" + options.executable, absl::StrCat("--repeats=", options.repeats),
                                     absl::StrCat("--decode-tokens=", options.decode_tokens),
                                     options.kv_float32 ? "--kv=f32" : "--kv=f16",
                                     absl::StrCat("--ubatch=", options.ubatch)};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    std::_Exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<int> ParseInts(const std::string& text, const char* what) {
  std::vector<int> out;
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  for (const std::string& part : parts) {
    int v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 0) Die(absl::StrCat(what, ": '", part, "' is not a non-negative integer"));
    out.push_back(v);
  }
  return out;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag, std::string* v) {
      if (a.rfind(flag + "=", 0) != 0) return false;
      *v = a.substr(flag.size() + 1);
      return true;
    };
    std::string v;
    if (value("--threads", &v)) {
      o.threads = ParseInts(v, "--threads");
    } else if (value("--repeats", &v)) {
      o.repeats = std::max(1, ParseInts(v, "--repeats")[0]);
    } else if (value("--decode-tokens", &v)) {
      o.decode_tokens = std::max(1, ParseInts(v, "--decode-tokens")[0]);
    } else if (value("--executable", &v)) {
      o.executable = v;
    } else if (value("--quantized", &v)) {
      if (v != "library" && v != "generated") Die("--quantized is 'library' or 'generated'");
      o.library_quantized = v == "library";
    } else if (value("--activations", &v)) {
      if (v != "q8" && v != "float32") Die("--activations is 'q8' or 'float32'");
      o.quantize_activations = v == "q8";
    } else if (value("--kv", &v)) {
      if (v != "f16" && v != "f32") Die("--kv is 'f16' or 'f32'");
      o.kv_float32 = v == "f32";
    } else if (value("--ubatch", &v)) {
      o.ubatch = std::max(1, ParseInts(v, "--ubatch")[0]);
    } else if (value("--layer-ops", &v)) {
      if (v != "ggml" && v != "compiled") Die("--layer-ops is 'ggml' or 'compiled'");
      o.ggml_layer_ops = v == "ggml";
    } else if (value("--greedy", &v)) {
      o.greedy.emplace_back();
      for (int id : ParseInts(v, "--greedy")) o.greedy.back().push_back(id);
    } else if (a == "-n" && i + 1 < argc) {
      o.greedy_tokens = std::max(1, ParseInts(argv[++i], "-n")[0]);
    } else if (a == "--print-logits") {
      o.print_logits = true;
    } else if (a == "--child") {
      o.child = true;
    } else if (!a.empty() && a[0] != '-' && o.model.empty()) {
      o.model = a;
    } else {
      Die(absl::StrCat("unknown argument '", a, "' (see the comment at the top of benchmarks/llm_bench.cc)"));
    }
  }
  if (o.model.empty()) o.model = kiln::serving::BundledModelPath();
  if (!std::filesystem::exists(o.model)) Die(o.model + " does not exist (scripts/fetch_model.sh fetches the bundled model)");
  return o;
}

// Compiles the model as `kiln generate` does (host CPU, planned for 2 threads) into a
// temporary file; returns its path and prints the compile time.
std::string Compile(const Options& options) {
  kiln::codegen::ModelCompileOptions compile;
  compile.pipeline.target = OrDie(kiln::codegen::ResolveCpuTarget(kiln::tir::Target::Cpu("host", 0, 2)), "target");
  compile.pipeline.libraries.quantized = options.library_quantized;
  compile.pipeline.libraries.quantize_activations = options.quantize_activations;
  compile.ggml_numerics = options.ggml_layer_ops;
  compile.cpu = OrDie(kiln::codegen::ToCpuTarget(compile.pipeline.target), "target");
  compile.progress = false;
  const auto start = Clock::now();
  std::string bytes = OrDie(kiln::codegen::CompileGgufModel(options.model, compile), "compiling");
  Report("compile", 0, Seconds(start, Clock::now()), "s");
  std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(), "/llm_bench-", getpid(), ".kx");
  if (auto s = kiln::support::WriteFile(path, bytes); !s.ok()) Die(std::string(s.message()));
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = ParseArgs(argc, argv);
  if (options.child) {
    RunChild(options, options.threads.empty() ? 0 : options.threads[0]);
    return 0;
  }
  const bool compiled = options.executable.empty();
  if (compiled) options.executable = Compile(options);
  if (!options.greedy.empty()) {
    RunGreedy(options);
    if (compiled) std::filesystem::remove(options.executable);
    return 0;
  }
  auto gguf = OrDie(kiln::formats::GgufFile::Open(options.model), "opening the model");
  const double weight_bytes = WeightBytesPerToken(*gguf);
  std::printf("model %s (%.1f MB of weights read per decode token), quantized matmuls: %s kernels\n",
              options.model.c_str(), weight_bytes / 1e6, options.library_quantized ? "library" : "generated");
  Report("weight_bytes_per_token", 0, weight_bytes / 1e6, "MB");
  bool ok = true;
  for (int t : options.threads) {
    const double bandwidth = StreamReadBandwidth(t, options.repeats);
    Report("memory_bandwidth", t, bandwidth / 1e9, "GB/s");
    Report("decode_bound", t, bandwidth / weight_bytes, "tok/s");
    ok = SpawnChild(options, t) && ok;
  }
  if (compiled) std::filesystem::remove(options.executable);
  return ok ? 0 : 1;
}
