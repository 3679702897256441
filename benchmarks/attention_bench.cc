// The paged KV cache's attention builtin (kiln.kv_cache.attention, builtins/paged_attention.h)
// on SmolLM2-135M's shapes (9 q heads, 3 kv heads, head_dim 64, one layer): the float16
// cache in llama.cpp's arithmetic (the default) against the float32 cache's plain float32
// loop (--kv=f32) in the same run.
//
//   KILN_NUM_THREADS=N build/benchmarks/attention_bench [--contexts=16,1024,4096] [--prompts=128,512]
//                                                       [--no-peer] [--wall] [--unsplit]
//
// Decode: one token attending to a context of C positions (the cache filled beforehand).
// Prefill: a prompt of P tokens in one call, from an empty sequence (causal: token t reads
// t + 1 positions). Time is the process's CPU time per call (all threads, best of 5 rounds),
// so that a shared machine still gives comparable figures. "bits" is a checksum of the
// float16 cache's outputs: two builds that print the same one computed the same floats
// (compare a change's build with its parent's). --no-peer skips the float32 cache (for a
// profiler's view of the float16 one). KILN_GGML_SIMD=avx2 times the AVX2 build's
// arithmetic (builtins/ggml_simd.h). --wall times by the clock instead (best of the rounds),
// for how threads share a call; --unsplit never splits a (token, kv head) over threads (the
// builtin splits long decode steps when there are few kv heads per thread), to compare.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "builtins/default_builtins.h"
#include "builtins/ggml_simd.h"
#include "builtins/paged_attention.h"
#include "builtins/paged_kv_cache.h"
#include "vm/builtin_registry.h"
#include "vm/dtype.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace {

using kiln::builtins::PagedKvCache;
using kiln::vm::Tensor;

bool wall_clock = false;

double CpuSeconds() {
  timespec t{};
  clock_gettime(wall_clock ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "attention_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) Die(std::string(value.status().message()));
  return *std::move(value);
}

void OrDie(const absl::Status& status) {
  if (!status.ok()) Die(std::string(status.message()));
}

constexpr int64_t kQHeads = 9, kKvHeads = 3, kHeadDim = 64;

// A (rows, heads, 64) float32 tensor of smooth pseudo-random values, different per salt.
Tensor Activations(int64_t rows, int64_t heads, int salt) {
  Tensor t = OrDie(Tensor::Empty({rows, heads, kHeadDim}, kiln::vm::DTypeFloat32()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data_as<float>()[i] = static_cast<float>(2.0 * std::sin(0.61 * static_cast<double>(i) + 1.7 * salt));
  }
  return t;
}

struct Inputs {
  Tensor q, k, v;
  Inputs(int64_t rows, int salt)
      : q(Activations(rows, kQHeads, salt)), k(Activations(rows, kKvHeads, salt + 100)),
        v(Activations(rows, kKvHeads, salt + 200)) {}
};

struct Attention {
  std::shared_ptr<PagedKvCache> cache;
  const kiln::vm::BuiltinRegistry::Builtin* builtin;

  explicit Attention(bool f16, int64_t tokens) {
    PagedKvCache::Config c;
    c.num_layers = 1;
    c.num_kv_heads = kKvHeads;
    c.head_dim = kHeadDim;
    c.page_size = 16;
    c.num_pages = tokens / 16 + 2;
    c.dtype = f16 ? DLDataType{kDLFloat, 16, 1} : DLDataType{kDLFloat, 32, 1};
    cache = OrDie(PagedKvCache::Create(c));
    OrDie(cache->AddSequence(0));
    builtin = kiln::builtins::DefaultRegistry().FindBuiltin("kiln.kv_cache.attention");
    if (builtin == nullptr) Die("no builtin kiln.kv_cache.attention");
  }

  // One step of q's rows as tokens of sequence 0; keeps them in the cache when `commit`.
  Tensor Step(const Tensor& q, const Tensor& k, const Tensor& v, bool commit) {
    OrDie(cache->BeginForward({0}, {q.shape()[0]}));
    kiln::vm::Value args[] = {kiln::vm::Value::FromObject(cache), kiln::vm::Value(int64_t{0}), kiln::vm::Value(q),
                              kiln::vm::Value(k), kiln::vm::Value(v), kiln::vm::Value(0.125)};
    const kiln::vm::Value* ptrs[] = {&args[0], &args[1], &args[2], &args[3], &args[4], &args[5]};
    kiln::vm::BuiltinContext ctx{nullptr, nullptr, nullptr};
    kiln::vm::Value result;
    OrDie(builtin->fn(ctx, ptrs, 6, &result));
    if (commit) {
      OrDie(cache->EndForward());
    } else {
      cache->AbortForward();
    }
    return result.as_tensor();
  }
};

// Best CPU seconds per call of `call` over 5 rounds of enough calls for about 20 ms.
template <typename Call>
double Seconds(Call call) {
  const double probe_start = CpuSeconds();
  call();
  const double probe = std::max(1e-6, CpuSeconds() - probe_start);
  const int64_t calls = std::max<int64_t>(2, static_cast<int64_t>(0.02 / probe));
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const double start = CpuSeconds();
    for (int64_t c = 0; c < calls; ++c) call();
    best = std::min(best, (CpuSeconds() - start) / static_cast<double>(calls));
  }
  return best;
}

uint64_t Checksum(const Tensor& out, uint64_t bits) {
  for (int64_t i = 0; i < out.numel(); ++i) {
    uint32_t v;
    std::memcpy(&v, out.data_as<float>() + i, sizeof(v));
    bits = bits * 1000003 + v;
  }
  return bits;
}

std::vector<int64_t> ParseList(const std::string& text, const char* flag) {
  std::vector<int64_t> values;
  for (const std::string& piece : std::vector<std::string>(absl::StrSplit(text, ','))) {
    char* end = nullptr;
    const long long v = std::strtoll(piece.c_str(), &end, 10);
    if (piece.empty() || *end != '\0' || v < 1 || v > 65536) Die(std::string(flag) + " wants integers in [1, 65536]");
    values.push_back(v);
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> contexts = {16, 1024, 4096}, prompts = {128, 512};
  bool peer = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--contexts=", 0) == 0) {
      contexts = ParseList(arg.substr(11), "--contexts");
    } else if (arg.rfind("--prompts=", 0) == 0) {
      prompts = ParseList(arg.substr(10), "--prompts");
    } else if (arg == "--no-peer") {
      peer = false;
    } else if (arg == "--wall") {
      wall_clock = true;
    } else if (arg == "--unsplit") {
      kiln::builtins::SetAttentionPartsForTesting(1);
    } else {
      Die("usage: attention_bench [--contexts=16,1024,4096] [--prompts=128,512] [--no-peer] [--wall] [--unsplit]");
    }
  }
  std::printf("threads %d, llama.cpp %s build's arithmetic\n%-22s %14s %14s %8s %14s\n",
              kiln::vm::ThreadPool::Global().num_threads(),
              kiln::builtins::GgmlSimdName(kiln::builtins::ActiveGgmlSimd()), "case", "float16 cache",
              "float32 cache", "ratio", "bits");
  auto report = [](const std::string& name, double f16_s, double f32_s, uint64_t bits) {
    std::printf("%-22s %9.1f us %9.1f us %8.2f %014llx\n", name.c_str(), f16_s * 1e6, f32_s * 1e6, f32_s / f16_s,
                static_cast<unsigned long long>(bits & 0xffffffffffffff));
    std::fflush(stdout);
  };
  for (int64_t context : contexts) {
    double seconds[2] = {0, 0};
    uint64_t bits = 0;
    const Inputs history(context - 1, 1), token(1, 2);
    for (bool f16 : {true, false}) {
      if (!f16 && !peer) break;
      Attention a(f16, context);
      if (context > 1) a.Step(history.q, history.k, history.v, /*commit=*/true);
      seconds[f16 ? 0 : 1] = Seconds([&] { a.Step(token.q, token.k, token.v, /*commit=*/false); });
      if (f16) bits = Checksum(a.Step(token.q, token.k, token.v, /*commit=*/false), 0);
    }
    report("decode, context " + std::to_string(context), seconds[0], seconds[1], bits);
  }
  for (int64_t prompt : prompts) {
    double seconds[2] = {0, 0};
    uint64_t bits = 0;
    const Inputs tokens(prompt, 3);
    for (bool f16 : {true, false}) {
      if (!f16 && !peer) break;
      Attention a(f16, prompt);
      seconds[f16 ? 0 : 1] = Seconds([&] { a.Step(tokens.q, tokens.k, tokens.v, /*commit=*/false); });
      if (f16) bits = Checksum(a.Step(tokens.q, tokens.k, tokens.v, /*commit=*/false), 0);
    }
    report("prefill, " + std::to_string(prompt) + " tokens", seconds[0], seconds[1], bits);
  }
  return 0;
}
