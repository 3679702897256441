// The Q5 and K-quant library matmuls (builtins/kquant_matmul_kernels.h) on the shapes of
// SmolLM2 requantized to Q4_K_M / Q5_K_M (rows of 576 fall back to Q5_0 / Q5_1, ffn_down is
// a K-quant), in llama.cpp's arithmetic (8-bit activations; vec_dot, repacked "by_block" and
// "tiled" orders), against the float32-activation kernel of the same format
// (kiln.cpu.quantized_matmul_f32x_*) in the same run.
//
//   build/benchmarks/kquant_matmul_bench [--threads=N] [--rows=1,16,128]
//
// Weights are random blocks (float16 scales 2^-11 .. 2^-4) held in cache: the figures are the
// kernels' arithmetic speed (Gop/s = 2 n k rows / time, best of 5 rounds), not bandwidth.
// Time is the process's CPU time (all threads), not wall time, so that a machine shared
// with other work still gives comparable figures (per CPU second; with N threads, wall-time
// speed is at most N times it).
// "bits" is a checksum of the 8-bit kernel's outputs: two builds that print the same one
// computed the same floats (compare a change's build with its parent's).
#include <algorithm>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "builtins/kquant_matmul_kernels.h"
#include "vm/builtin_registry.h"
#include "vm/kernel_abi.h"
#include "vm/standalone_call_context.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace {

using kiln::vm::Tensor;
// The process's CPU time in seconds.
double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Shape {
  std::string kernel;  // the 8-bit kernel's name after kiln.cpu.quantized_matmul_
  std::string format;
  int64_t n, k;
  std::string what;
};

// GGML's block sizes and where each block keeps its float16 scales.
struct Layout {
  int64_t weights, bytes;
  std::vector<int64_t> scale_offsets;
};

Layout LayoutOf(const std::string& format) {
  if (format == "q5_0") return {32, 22, {0}};
  if (format == "q5_1") return {32, 24, {0, 2}};
  if (format == "q4_K") return {256, 144, {0, 2}};
  if (format == "q5_K") return {256, 176, {0, 2}};
  return {256, 210, {208}};  // q6_K
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "kquant_matmul_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) Die(std::string(value.status().message()));
  return *std::move(value);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::vector<int64_t> rows = {1, 16, 128};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      threads = std::atoi(arg.c_str() + 10);
      if (threads < 1) Die("--threads wants a positive integer");
    } else if (arg.rfind("--rows=", 0) == 0) {
      rows.clear();
      for (const std::string& r : std::vector<std::string>(absl::StrSplit(arg.substr(7), ','))) {
        rows.push_back(std::atoll(r.c_str()));
        if (rows.back() < 1) Die("--rows wants positive integers");
      }
    } else {
      Die("usage: kquant_matmul_bench [--threads=N] [--rows=1,16,128]");
    }
  }
  const std::vector<Shape> shapes = {{"q5_0", "q5_0", 1536, 576, "ffn up/gate"},
                                     {"q5_0", "q5_0", 576, 576, "attn q/o"},
                                     {"q5_1", "q5_1", 1536, 576, "ffn up/gate"},
                                     {"q4_K", "q4_K", 576, 1536, "ffn down, vec_dot"},
                                     {"by_block_q4_K", "q4_K", 576, 1536, "ffn down, repacked"},
                                     {"tiled_q5_K", "q5_K", 576, 1536, "ffn down, tiled"},
                                     {"tiled_q6_K", "q6_K", 576, 1536, "ffn down, tiled"}};
  kiln::vm::ThreadPool pool(threads);
  kiln::vm::StandaloneCallContext context = kiln::vm::MakeStandaloneCallContext(&pool);
  kiln::vm::BuiltinRegistry registry;
  kiln::builtins::RegisterKQuantMatmulKernels(registry);
  std::printf("threads %d\n%-14s %-24s %5s %12s %12s %8s %14s\n", threads, "kernel", "shape (n x k)", "rows", "8-bit",
              "float32 act", "ratio", "bits");
  std::mt19937 rng(3);
  for (const Shape& s : shapes) {
    const Layout layout = LayoutOf(s.format);
    const int64_t row_bytes = s.k / layout.weights * layout.bytes;
    Tensor w = OrDie(Tensor::Empty({s.n, row_bytes}, DLDataType{kDLUInt, 8, 1}));
    uint8_t* p = w.data_as<uint8_t>();
    std::uniform_int_distribution<int> byte(0, 255);
    for (int64_t i = 0; i < s.n * row_bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
    for (int64_t b = 0; b < s.n * row_bytes; b += layout.bytes) {
      for (int64_t offset : layout.scale_offsets) p[b + offset + 1] = static_cast<uint8_t>(0x10 + byte(rng) % 16);
    }
    const auto* q8 = registry.FindKernel("kiln.cpu.quantized_matmul_" + s.kernel);
    const auto* f32 = registry.FindKernel("kiln.cpu.quantized_matmul_f32x_" + s.format);
    if (q8 == nullptr || f32 == nullptr) Die("no kernel for " + s.kernel);
    for (int64_t m : rows) {
      Tensor x = OrDie(Tensor::Empty({m, s.k}, DLDataType{kDLFloat, 32, 1}));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = normal(rng);
      Tensor out = OrDie(Tensor::Empty({m, s.n}, DLDataType{kDLFloat, 32, 1}));
      auto call = [&](KilnKernelFn fn) {
        KilnArg args[3] = {};
        for (KilnArg& a : args) a.type_code = kKilnArgTensor;
        args[0].value.tensor = x.dl_tensor();
        args[1].value.tensor = w.dl_tensor();
        args[2].value.tensor = out.dl_tensor();
        if (fn(args, 3, &context.ctx) != 0) Die("kernel failed: " + context.error);
      };
      auto seconds = [&](KilnKernelFn fn) {
        const int64_t calls = std::max<int64_t>(2, (int64_t{1} << 27) / (m * s.n * s.k));
        double best = 1e30;
        for (int round = 0; round < 5; ++round) {
          const double start = CpuSeconds();
          for (int64_t c = 0; c < calls; ++c) call(fn);
          best = std::min(best, (CpuSeconds() - start) / static_cast<double>(calls));
        }
        return best;
      };
      const double f32_s = seconds(f32->fn);
      const double q8_s = seconds(q8->fn);
      uint64_t bits = 0;
      for (int64_t i = 0; i < m * s.n; ++i) {
        uint32_t v;
        std::memcpy(&v, out.data_as<float>() + i, sizeof(v));
        bits = bits * 1000003 + v;
      }
      const double ops = 2.0 * static_cast<double>(m * s.n * s.k);
      std::printf("%-14s %-24s %5lld %7.2f Gop/s %7.2f Gop/s %8.2f %014llx\n", s.kernel.c_str(),
                  (std::to_string(s.n) + " x " + std::to_string(s.k) + " " + s.what).c_str(), static_cast<long long>(m),
                  ops / q8_s / 1e9, ops / f32_s / 1e9, f32_s / q8_s, static_cast<unsigned long long>(bits & 0xffffffffffffff));
      std::fflush(stdout);
    }
  }
  return 0;
}
