// Quantized matmul (out = x @ dequantize(w)^T, GGML blocks decoded inside the kernel): the
// kernel Kiln generates from TIR (relax/op/legalize_quantize.cc, scheduled by the default CPU
// rules) against the hand-written library kernel (builtins/quantized_matmul_kernels.h), in
// the same run on the same thread pool, next to the memory-bandwidth bound.
//
//   build/benchmarks/qmatmul_bench [--threads=N] [--rows=1,16,128] [--target=cuda|vulkan]
//
// The shapes are SmolLM2-135M's (the bundled model): its Q4_1 projections and its Q8_0
// output projection. As in a decode step, where the model's 97 MB of weights stream from
// memory once per token, each call reads a different copy of the weight out of a set larger
// than the last-level cache, so weights come from memory, not cache. Figures: weight GB/s
// (the weight's bytes over the call's time) and, for the decode case (one row), the share of
// the streaming-read bandwidth measured here; the generated and library results are checked
// against each other. "library" is the float32-activation library kernel
// (kiln.cpu.quantized_matmul_f32x_*), "q8" the default one that quantizes the activations as
// llama.cpp does (about 1e-2 from the others, so only its speed is compared), "q8 block" the
// same in the order of llama.cpp's repacked Q4_0 kernels (kiln.cpu.quantized_matmul_by_block_*,
// q4_0 and q8_0 only).
//
// --target=cuda|vulkan: the generated kernel compiled for that GPU (the whole pipeline, no
// library dispatch; tir/schedule_rules/gpu_few_rows.cc schedules it) and run through the VM
// on the device, checked against the CPU library kernel. The shapes add a 7B-class model's
// (4096 x 4096, 11008 x 4096). Each timed round queues one call per weight copy (copies
// spanning 256 MB, more than a GPU's L2 cache) and waits once at the end, as a model's step
// queues its kernels. The peer, in the same run: on cuda, cuBLAS's float32 GEMM of the same
// m x k x n (kiln.cublas.gemm_nn, the weight as float32: what a float model's decode step
// runs), timed the same way; on vulkan, the CPU library kernel. Figures: microseconds per
// call, the quantized weight's GB/s, and peer time / Kiln time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmarks/cublas_peer.h"
#include "benchmarks/gpu_target.h"
#include "builtins/quantized_matmul_kernels.h"
#include "codegen/cpu_shared_object.h"
#include "relax/block_builder.h"
#include "codegen/cpu_target.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"
#include "relax/transform/legalize_ops.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "vm/builtin_registry.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/standalone_call_context.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace {

using kiln::vm::Tensor;
using Clock = std::chrono::steady_clock;

struct Shape {
  std::string format;  // q4_0, q4_1, q8_0
  int64_t n, k;
  std::string what;
};

int64_t BlockBytes(const std::string& format) { return format == "q4_0" ? 18 : format == "q4_1" ? 20 : 34; }

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "qmatmul_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) Die(std::string(what) + ": " + std::string(value.status().message()));
  return *std::move(value);
}

// The kernel context the VM would give a kernel, backed by a pool of our own.
using BenchContext = kiln::vm::StandaloneCallContext;

// The generated kernel for one format and (n, k), rows symbolic, built as a model's is:
// legalized, scheduled by the default CPU rules for this host, compiled by LLVM.
KilnKernelFn BuildGenerated(const Shape& s, int threads, std::shared_ptr<kiln::vm::KernelObject>* keep_alive) {
  const std::string text = absl::StrCat("module {\n  func @main(x: Tensor((m, ", s.k, "), float32), w: Tensor((", s.n,
                                        ", ", s.k / 32 * BlockBytes(s.format), "), uint8)) -> Object {\n",
                                        "    y = R.quantized_matmul(x, w, format=\"", s.format,
                                        "\")\n    return y\n  }\n}\n");
  kiln::relax::ParsedModule parsed = OrDie(kiln::relax::ParseModule(text), "parse");
  kiln::relax::IRModule normalized = OrDie(kiln::relax::NormalizeModule(parsed.module), "normalize");
  kiln::relax::IRModule legalized = OrDie(kiln::relax::LegalizeOps(normalized), "legalize");
  const kiln::codegen::CpuTarget target = kiln::codegen::CpuTarget::Host();
  const int lanes = OrDie(kiln::codegen::Float32VectorLanes(target), "vector lanes");
  std::vector<std::pair<std::string, kiln::tir::PrimFunc>> kernels;
  for (const kiln::relax::IRModule::Entry& e : legalized.entries()) {
    if (e.is_relax()) continue;
    kernels.emplace_back("bench_qmatmul",
                         OrDie(kiln::tir::ScheduleForCpu(*e.prim_func(), {.vector_lanes = lanes, .num_threads = threads}),
                               "schedule"));
  }
  if (kernels.size() != 1) Die("expected one kernel after legalization, got " + std::to_string(kernels.size()));
  std::string so = OrDie(kiln::codegen::BuildCpuSharedObject(kernels, target), "compile");
  *keep_alive = OrDie(kiln::vm::KernelObject::Load(so), "load");
  return OrDie((*keep_alive)->Find("bench_qmatmul"), "find kernel");
}

// Random blocks with scales that are small positive float16 values (so sums stay tame).
Tensor RandomWeights(const Shape& s, std::mt19937& rng) {
  const int64_t row_bytes = s.k / 32 * BlockBytes(s.format);
  Tensor w = OrDie(Tensor::Empty({s.n, row_bytes}, DLDataType{kDLUInt, 8, 1}), "allocate");
  std::uniform_int_distribution<int> byte(0, 255);
  uint8_t* p = w.data_as<uint8_t>();
  for (int64_t i = 0; i < s.n * row_bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
  const int64_t scales = s.format == "q4_1" ? 2 : 1;
  for (int64_t b = 0; b < s.n * row_bytes; b += BlockBytes(s.format)) {
    for (int64_t h = 0; h < scales; ++h) {
      p[b + 2 * h] = static_cast<uint8_t>(byte(rng));
      p[b + 2 * h + 1] = static_cast<uint8_t>(0x10 + byte(rng) % 16);  // 2^-11 .. 2^-4
    }
  }
  return w;
}

double StreamReadBandwidth(int threads) {
  static std::vector<uint64_t> buffer(size_t{1} << 27);  // 1 GiB
  for (size_t i = 0; i < buffer.size(); i += 512) buffer[i] = i;
  double best = 0;
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  for (int r = 0; r < 4; ++r) {
    const auto start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t begin = buffer.size() * static_cast<size_t>(t) / static_cast<size_t>(threads);
        const size_t end = buffer.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        uint64_t s = 0;
        for (size_t i = begin; i < end; ++i) s += buffer[i];
        sums[static_cast<size_t>(t) * 8] = s;
      });
    }
    for (std::thread& th : pool) th.join();
    if (r > 0) best = std::max(best, static_cast<double>(buffer.size() * 8) / std::chrono::duration<double>(Clock::now() - start).count());
  }
  if (sums[0] == 42) std::printf("(checksum)\n");
  return best;
}

// The best of three rounds of `run_all` (which queues `calls` calls and waits for them), per call.
template <typename Fn>
double BestSecondsPerCall(int64_t calls, Fn run_all) {
  run_all();  // warm-up: module loading, first-call allocations
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto start = Clock::now();
    run_all();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(calls));
  }
  return best;
}

// --target=cuda|vulkan (see the top of the file).
int RunOnGpu(const kiln::tir::Target& target, const std::vector<Shape>& shapes, const std::vector<int64_t>& rows,
             int threads) {
  absl::StatusOr<kiln::vm::Device*> opened = kiln::bench::OpenBenchDevice(target);
  if (!opened.ok()) {
    std::printf("qmatmul_bench: --target %s: %s; nothing to run\n", kiln::tir::TargetKindName(target.kind),
                std::string(opened.status().message()).c_str());
    return 0;
  }
  kiln::vm::Device* device = *opened;
  const bool cuda = target.kind == kiln::tir::TargetKind::kCuda;
  absl::StatusOr<kiln::bench::CublasPeer> cublas = absl::UnavailableError("not cuda");
  if (cuda) {
    cublas = kiln::bench::CublasPeer::Open();
    if (!cublas.ok()) Die("--target cuda compares against cuBLAS, which is not here: " + std::string(cublas.status().message()));
  }
  kiln::vm::ThreadPool pool(threads);
  BenchContext bench = kiln::vm::MakeStandaloneCallContext(&pool);
  kiln::vm::BuiltinRegistry registry;
  kiln::builtins::RegisterQuantizedMatmulKernels(registry);
  const char* peer = cuda ? "cuBLAS f32" : "CPU library";
  std::printf("Kiln's generated quantized matmul on %s (%s); peer: %s\n\n", device->name().c_str(),
              target.ToString().c_str(), cuda ? "cuBLAS float32 GEMM, same m x k x n" : "the CPU library kernel (f32x)");
  std::printf("%-6s %-36s %5s %12s %12s %12s %10s %9s\n", "format", "shape (n x k)", "rows", "Kiln us", "Kiln GB/s",
              absl::StrCat(peer, " us").c_str(), "peer/Kiln", "max diff");
  std::mt19937 rng(7);
  constexpr int64_t kSpan = int64_t{256} << 20;
  for (const Shape& s : shapes) {
    const int64_t weight_bytes = s.n * (s.k / 32 * BlockBytes(s.format));
    const int64_t copies = std::clamp<int64_t>(kSpan / weight_bytes, 2, 64);
    std::vector<Tensor> host_weights;
    std::vector<kiln::vm::Value> weights;
    for (int64_t c = 0; c < copies; ++c) {
      host_weights.push_back(RandomWeights(s, rng));
      weights.emplace_back(OrDie(host_weights.back().CopyTo(device), "copy the weight to the device"));
    }
    const std::string text = absl::StrCat("module {\n  func @main(x: Tensor((m, ", s.k, "), float32), w: Tensor((", s.n,
                                          ", ", s.k / 32 * BlockBytes(s.format), "), uint8)) -> Object {\n",
                                          "    y = R.quantized_matmul(x, w, format=\"", s.format,
                                          "\")\n    return y\n  }\n}\n");
    std::unique_ptr<kiln::vm::VirtualMachine> machine =
        OrDie(kiln::bench::CompileForDevice(text, target, /*fuse=*/true, device), "compile for the GPU");
    const auto* library_entry = registry.FindKernel("kiln.cpu.quantized_matmul_f32x_" + s.format);
    if (library_entry == nullptr) Die("no library kernel for " + s.format);
    // The peer's float32 weights (k x n, zeros: cuBLAS's time does not depend on the values).
    std::vector<Tensor> float_weights;
    int64_t float_copies = 0;
    if (cuda) {
      float_copies = std::clamp<int64_t>(kSpan / (4 * s.k * s.n), 2, 64);
      Tensor zeros = OrDie(Tensor::Empty({s.k, s.n}, DLDataType{kDLFloat, 32, 1}), "allocate");
      std::fill(zeros.data_as<float>(), zeros.data_as<float>() + zeros.numel(), 0.0f);
      for (int64_t c = 0; c < float_copies; ++c) float_weights.push_back(OrDie(zeros.CopyTo(device), "copy to the GPU"));
    }
    for (int64_t m : rows) {
      Tensor x = OrDie(Tensor::Empty({m, s.k}, DLDataType{kDLFloat, 32, 1}), "allocate");
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = dist(rng);
      const kiln::vm::Value x_on_device(OrDie(x.CopyTo(device), "copy x to the device"));
      // Checked first: the GPU's result against the CPU library kernel's on the first copy.
      Tensor expected = OrDie(Tensor::Empty({m, s.n}, DLDataType{kDLFloat, 32, 1}), "allocate");
      KilnArg args[3] = {};
      for (KilnArg& a : args) a.type_code = kKilnArgTensor;
      args[0].value.tensor = x.dl_tensor();
      args[1].value.tensor = host_weights[0].dl_tensor();
      args[2].value.tensor = expected.dl_tensor();
      if (library_entry->fn(args, 3, &bench.ctx) != 0) Die("library kernel failed: " + bench.error);
      const kiln::vm::Value first =
          OrDie(kiln::bench::CallAndWait(*machine, device, {x_on_device, weights[0]}), "Kiln's quantized matmul");
      Tensor got = OrDie(first.as_tensor().CopyTo(kiln::vm::CpuDevice()), "copy the result back");
      double max_diff = 0;
      for (int64_t i = 0; i < m * s.n; ++i) {
        const double a = got.data_as<float>()[i], b = expected.data_as<float>()[i];
        max_diff = std::max(max_diff, std::abs(a - b) / std::max(1.0, std::abs(b)));
      }
      if (!(max_diff <= 1e-3)) Die(absl::StrCat(s.format, " ", s.n, " x ", s.k, " rows ", m, ": the GPU's result differs from the library kernel's by ", max_diff));
      const double kiln_s = BestSecondsPerCall(copies, [&] {
        for (int64_t c = 0; c < copies; ++c) {
          OrDie(machine->Invoke("main", {x_on_device, weights[static_cast<size_t>(c)]}), "Kiln's quantized matmul");
        }
        if (absl::Status done = device->Synchronize(); !done.ok()) Die(std::string(done.message()));
      });
      double peer_s = 0;
      if (cuda) {
        Tensor a = OrDie(x.CopyTo(device), "copy x to the GPU");
        Tensor c = OrDie(Tensor::Empty({m, s.n}, DLDataType{kDLFloat, 32, 1}, device), "allocate on the GPU");
        peer_s = BestSecondsPerCall(float_copies, [&] {
          for (int64_t i = 0; i < float_copies; ++i) {
            if (absl::Status q = cublas->Enqueue(a, float_weights[static_cast<size_t>(i)], c); !q.ok()) Die(std::string(q.message()));
          }
          if (absl::Status done = device->Synchronize(); !done.ok()) Die(std::string(done.message()));
        });
      } else {
        Tensor out = OrDie(Tensor::Empty({m, s.n}, DLDataType{kDLFloat, 32, 1}), "allocate");
        args[2].value.tensor = out.dl_tensor();
        peer_s = BestSecondsPerCall(copies, [&] {
          for (int64_t c = 0; c < copies; ++c) {
            args[1].value.tensor = host_weights[static_cast<size_t>(c)].dl_tensor();
            if (library_entry->fn(args, 3, &bench.ctx) != 0) Die("library kernel failed: " + bench.error);
          }
        });
      }
      std::printf("%-6s %-36s %5lld %12.2f %12.1f %12.2f %10.3f %9.2g\n", s.format.c_str(),
                  absl::StrCat(s.n, " x ", s.k, " ", s.what).c_str(), static_cast<long long>(m), kiln_s * 1e6,
                  static_cast<double>(weight_bytes) / kiln_s / 1e9, peer_s * 1e6, peer_s / kiln_s, max_diff);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::max(1u, std::min(2u, std::thread::hardware_concurrency())));
  std::vector<int64_t> rows = {1, 16, 128};
  std::string target_name;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      threads = std::atoi(arg.c_str() + 10);
      if (threads < 1) Die("--threads wants a positive integer");
    } else if (arg.rfind("--rows=", 0) == 0) {
      rows.clear();
      const std::vector<std::string> parts = absl::StrSplit(arg.substr(7), ',');
      for (const std::string& r : parts) {
        rows.push_back(std::atoll(r.c_str()));
        if (rows.back() < 1) Die("--rows wants positive integers");
      }
    } else if (arg.rfind("--target=", 0) == 0) {
      target_name = arg.substr(9);
      if (!kiln::bench::GpuTargetNamed(target_name)) Die("--target wants cuda or vulkan (the CPU is the default)");
    } else {
      Die("usage: qmatmul_bench [--threads=N] [--rows=1,16,128] [--target=cuda|vulkan]");
    }
  }
  const std::vector<Shape> shapes = {{"q4_1", 1536, 576, "ffn up/gate"},
                                     {"q4_1", 576, 1536, "ffn down"},
                                     {"q4_1", 576, 576, "attn q/o"},
                                     {"q8_0", 49152, 576, "output (tied embedding)"},
                                     {"q4_0", 1536, 576, "q4_0 up"}};
  if (!target_name.empty()) {
    std::vector<Shape> gpu_shapes = shapes;
    gpu_shapes.insert(gpu_shapes.end(), {{"q4_0", 4096, 4096, "7B attn q/o"},
                                         {"q4_0", 11008, 4096, "7B ffn up/gate"},
                                         {"q8_0", 4096, 4096, "7B attn q8_0"}});
    return RunOnGpu(*kiln::bench::GpuTargetNamed(target_name), gpu_shapes, rows, threads);
  }

  kiln::vm::ThreadPool pool(threads);
  BenchContext bench = kiln::vm::MakeStandaloneCallContext(&pool);
  kiln::vm::BuiltinRegistry registry;
  kiln::builtins::RegisterQuantizedMatmulKernels(registry);

  const double bandwidth = StreamReadBandwidth(threads);
  std::printf("threads %d; streaming read %.1f GB/s\n\n", threads, bandwidth / 1e9);
  std::printf("%-6s %-36s %5s %12s %12s %12s %12s %8s %8s %12s %9s\n", "format", "shape (n x k)", "rows", "generated",
              "library", "q8", "q8 block", "gen/lib", "q8/lib", "gen/stream", "max diff");
  std::mt19937 rng(7);
  for (const Shape& s : shapes) {
    std::shared_ptr<kiln::vm::KernelObject> object;
    KilnKernelFn generated = BuildGenerated(s, threads, &object);
    const auto* library_entry = registry.FindKernel("kiln.cpu.quantized_matmul_f32x_" + s.format);
    const auto* q8_entry = registry.FindKernel("kiln.cpu.quantized_matmul_" + s.format);
    if (library_entry == nullptr || q8_entry == nullptr) Die("no library kernel for " + s.format);
    KilnKernelFn library = library_entry->fn;
    KilnKernelFn q8 = q8_entry->fn;
    const auto* by_block_entry = registry.FindKernel("kiln.cpu.quantized_matmul_by_block_" + s.format);
    // Copies of the weight spanning 128 MB, so each call streams its weight from memory.
    const int64_t weight_bytes = s.n * (s.k / 32 * BlockBytes(s.format));
    const int64_t copies = std::max<int64_t>(2, (int64_t{128} << 20) / weight_bytes);
    std::vector<Tensor> weights;
    for (int64_t c = 0; c < copies; ++c) weights.push_back(RandomWeights(s, rng));
    for (int64_t m : rows) {
      Tensor x = OrDie(Tensor::Empty({m, s.k}, DLDataType{kDLFloat, 32, 1}), "allocate");
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = dist(rng);
      Tensor out_gen = OrDie(Tensor::Empty({m, s.n}, DLDataType{kDLFloat, 32, 1}), "allocate");
      Tensor out_lib = OrDie(Tensor::Empty({m, s.n}, DLDataType{kDLFloat, 32, 1}), "allocate");
      auto call = [&](KilnKernelFn fn, const Tensor& w, const Tensor& out) {
        KilnArg args[3] = {};
        for (KilnArg& a : args) a.type_code = kKilnArgTensor;
        args[0].value.tensor = x.dl_tensor();
        args[1].value.tensor = w.dl_tensor();
        args[2].value.tensor = out.dl_tensor();
        if (fn(args, 3, &bench.ctx) != 0) Die("kernel failed: " + bench.error);
      };
      call(generated, weights[0], out_gen);
      call(library, weights[0], out_lib);
      double max_diff = 0;
      for (int64_t i = 0; i < m * s.n; ++i) {
        const double a = out_gen.data_as<float>()[i], b = out_lib.data_as<float>()[i];
        max_diff = std::max(max_diff, std::abs(a - b) / std::max(1.0, std::abs(b)));
      }
      // Best time per call over rounds through every copy (best: this machine is shared).
      auto seconds = [&](KilnKernelFn fn, const Tensor& out) {
        const int64_t calls = std::max<int64_t>(copies, std::min<int64_t>(4 * copies, (int64_t{1} << 28) / (m * weight_bytes)));
        double best = 1e30;
        for (int round = 0; round < 3; ++round) {
          const auto start = Clock::now();
          for (int64_t c = 0; c < calls; ++c) call(fn, weights[static_cast<size_t>(c % copies)], out);
          best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(calls));
        }
        return best;
      };
      const double gen_s = seconds(generated, out_gen);
      const double lib_s = seconds(library, out_lib);
      const double q8_s = seconds(q8, out_lib);
      const double gen_gbs = static_cast<double>(weight_bytes) / gen_s / 1e9;
      const double lib_gbs = static_cast<double>(weight_bytes) / lib_s / 1e9;
      const double q8_gbs = static_cast<double>(weight_bytes) / q8_s / 1e9;
      const std::string by_block =
          by_block_entry == nullptr
              ? "-"
              : absl::StrFormat("%.2f GB/s", static_cast<double>(weight_bytes) / seconds(by_block_entry->fn, out_lib) / 1e9);
      std::printf("%-6s %-36s %5lld %7.2f GB/s %7.2f GB/s %7.2f GB/s %12s %8.2f %8.2f %11.0f%% %9.2g\n", s.format.c_str(),
                  absl::StrCat(s.n, " x ", s.k, " ", s.what).c_str(), static_cast<long long>(m), gen_gbs, lib_gbs,
                  q8_gbs, by_block.c_str(), lib_s / gen_s, lib_s / q8_s, 100 * gen_gbs * 1e9 / bandwidth, max_diff);
      std::fflush(stdout);
      if (max_diff > 1e-3) Die("generated and library kernels disagree");
    }
  }
  return 0;
}
