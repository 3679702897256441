// fp32 matmul: Kiln's generated kernel against OpenBLAS (cblas_sgemm), measured in the same
// run with the same number of threads. Kiln's kernel is the whole CPU path: a normalized
// Relax R.matmul over symbolic (m, k) x (k, n), legalized to TIR, scheduled with the default
// CPU rules, compiled to a shared object, loaded and called through the kernel ABI on the
// runtime's thread pool. Prints GFLOP/s for each and the ratios Kiln / peer.
//
//   build/benchmarks/matmul_bench [--sizes=256,512,m1,m64] [--threads=N] [--openblas-core=NAME]
//                                 [--pypi-openblas=PATH] [--target=cpu|vulkan|cuda] [--cublas]
//                                 [--mcpu=NAME] [--knobs=TEXT] [--knobs-b=TEXT] [--kernel-b=FILE]
//                                 [--fastest] [--pool-spin-us=N]
//
// --mcpu NAME: Kiln's CPU kernel generated for that LLVM CPU (e.g. haswell: AVX2 code, 8
// lanes) instead of the host, so AVX2 code can be timed on an AVX-512 machine too.
//
// --knobs TEXT: Kiln's CPU kernel scheduled with these rule knobs (tir/schedule_rules/
// cpu_knobs.h, e.g. "matmul.col_vectors=4 matmul.row_tile=3"; unnamed knobs keep their
// defaults) instead of the untuned rules, so a knob set can be timed against the peers.
// --knobs-b TEXT: a second Kiln kernel scheduled with these knobs, timed in the same
// interleaved rounds as the first and the peers (an A/B of two schedules that the machine's
// other load disturbs alike); one more line per shape gives its GFLOP/s and its ratios to
// the first kernel and to the best peer.
// --kernel-b FILE: the second kernel is a PrimFunc written by hand (the IR text format,
// docs/ir.md: `prim_func @name(A: Buffer((m, K), float32), B: Buffer((K, N), float32),
// C: Buffer((m, N), float32)) { ... }` with its loops already scheduled), compiled as it is
// for the same CPU and checked against OpenBLAS like the others: a loop order, split or
// prefetch can be timed through Kiln's code generator before a rule makes it (the GEMV's
// prefetch, docs/schedule.md, was found so). Instead of --knobs-b.
// --fastest: each contender's fastest of the interleaved rounds instead of their median.
// --pool-spin-us N: how long the pool's idle threads poll before they sleep (vm::ThreadPool;
// default its kDefaultSpinMicros), to compare spin settings run against run.
//
// --target vulkan|cuda: the same matmul compiled for that GPU target (benchmarks/
// gpu_target.h: the whole pipeline, generated kernels) and run through the VM on its device,
// against Kiln's CPU kernel in the same run (on lavapipe, Mesa's CPU Vulkan driver, this is a
// sanity figure, not a GPU's). Without the device it prints one line and exits 0.
//
// --cublas: on a CUDA GPU, Kiln's generated cuda matmul against cuBLAS in the same run
// (benchmarks/cublas_peer.h), each checked against the other first; without a GPU or
// libcublas it prints why and exits 0.
//
// A size "S" is the square S x S x S; "MxKxN" any shape; "mM" is C[M, 4096] = A[M, 4096] @ W[4096, 4096]; for
// M <= 8 (GEMV-like: bound by reading the weight) it also prints the weight's bandwidth.
// Kiln's kernel has the weight's sizes k, n constant and m symbolic, as in a model. For
// M = 1 the peers run cblas_sgemv (numpy's choice; their sgemm is several times slower).
// Peers: Debian's OpenBLAS with its best kernels for this CPU (benchmarks/openblas_peer.h)
// and, with --pypi-openblas, the newer one PyPI's numpy bundles (benchmarks/
// pypi_openblas_peer.h; benchmarks/matmul_bench.sh finds it and passes the path).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "benchmarks/cublas_peer.h"
#include "benchmarks/gpu_target.h"
#include "benchmarks/openblas_peer.h"
#include "benchmarks/pypi_openblas_peer.h"
#include "codegen/cpu_shared_object.h"
#include "codegen/cpu_target.h"
#include "relax/block_builder.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"
#include "relax/transform/legalize_ops.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/text_parser.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/standalone_call_context.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace {

using kiln::vm::Tensor;

constexpr DLDataType kF32{kDLFloat, 32, 1};

struct Shape {
  std::string name;
  int64_t m, k, n;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "matmul_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) Die(std::string(what) + ": " + std::string(value.status().message()));
  return *std::move(value);
}

// The kernel context the VM would give a kernel, backed by a pool of our own.
using BenchContext = kiln::vm::StandaloneCallContext;

// A scheduled kernel compiled for `target`, loaded, and its entry point.
KilnKernelFn LoadKernel(const kiln::tir::PrimFunc& kernel, const kiln::codegen::CpuTarget& target,
                        std::shared_ptr<kiln::vm::KernelObject>* keep_alive) {
  std::string so = OrDie(kiln::codegen::BuildCpuSharedObject({{"bench_matmul", kernel}}, target), "compile");
  *keep_alive = OrDie(kiln::vm::KernelObject::Load(so), "load");
  return OrDie((*keep_alive)->Find("bench_matmul"), "find kernel");
}

// One matmul kernel over a constant k x n weight and a symbolic number of rows m, the form a
// model's matmuls take (m is the token count; the weight's sizes are known), built through
// the same passes a model goes through.
KilnKernelFn BuildKilnMatmul(int64_t k, int64_t n, int num_threads, const kiln::codegen::CpuTarget& target,
                             const kiln::tir::CpuScheduleKnobs& knobs,
                             std::shared_ptr<kiln::vm::KernelObject>* keep_alive) {
  const std::string text = "module {\n  func @main(x: Tensor((m, " + std::to_string(k) + "), float32), w: Tensor((" +
                           std::to_string(k) + ", " + std::to_string(n) + "), float32)) -> Tensor((m, " +
                           std::to_string(n) + "), float32) {\n    y = R.matmul(x, w)\n    return y\n  }\n}";
  kiln::relax::ParsedModule parsed = OrDie(kiln::relax::ParseModule(text), "parse");
  kiln::relax::IRModule normalized = OrDie(kiln::relax::NormalizeModule(parsed.module), "normalize");
  kiln::relax::IRModule legalized = OrDie(kiln::relax::LegalizeOps(normalized), "legalize");
  const int lanes = OrDie(kiln::codegen::Float32VectorLanes(target), "vector lanes");
  std::vector<std::pair<std::string, kiln::tir::PrimFunc>> kernels;
  for (const kiln::relax::IRModule::Entry& e : legalized.entries()) {
    if (e.is_relax()) continue;
    kiln::tir::PrimFunc scheduled =
        OrDie(kiln::tir::ScheduleForCpu(*e.prim_func(),
                                        {.vector_lanes = lanes, .num_threads = num_threads, .knobs = knobs}),
              "schedule");
    kernels.emplace_back("bench_matmul", scheduled);
  }
  if (kernels.size() != 1) Die("expected one kernel after legalization, got " + std::to_string(kernels.size()));
  return LoadKernel(kernels[0].second, target, keep_alive);
}

// --kernel-b's file: one prim_func in the text format, or a clear error (with its line and
// column) and exit.
kiln::tir::PrimFunc ReadHandKernel(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("--kernel-b: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return OrDie(kiln::tir::ParsePrimFunc(text.str(), path), "--kernel-b").func;
}

Tensor Random(const std::vector<int64_t>& shape, uint32_t seed) {
  Tensor t = OrDie(Tensor::Empty(shape, kF32), "allocate");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

// Median seconds of one call of each function, measured in rounds that call each once in
// turn (after one warm-up round), so that the load of a shared machine, which drifts over
// seconds, weighs on every contender alike: timed one after another, a GEMV's bandwidth
// moved 2-3x between contenders with the other jobs' memory traffic. Rounds shrink as
// the work grows (about a second per contender).
//
// On several threads each timed call first waits kSettleSeconds, then makes one untimed call:
// a library's idle workers spin for a while after its call returns (OpenBLAS's for about
// 0.1 s), and the next contender, timed at once, would run without the cores they hold —
// measured: Kiln's 2-thread M=64 matmul at 0.48x of OpenBLAS interleaved without the wait,
// 0.96x timed alone. Untimed calls for kWakeSeconds then bring the contender's own workers
// back, so every contender is timed with its workers awake, as in a model's run of kernels:
// on this project's virtual machines a core idle for 0.15 s takes tens of milliseconds to
// run at full speed again (Kiln's 2-thread 512^3 stayed at 1-thread speed after 5 ms of
// warm-up calls and reached 2x after 50 ms; so did OpenBLAS's threads after their sleep).
constexpr double kSettleSeconds = 0.15;
constexpr double kWakeSeconds = 0.05;

// The median of each run's interleaved rounds, or with `fastest` its fastest round (on a
// loaded machine the median measures the other jobs; the fastest round, the code).
std::vector<double> InterleavedMedianSeconds(const std::vector<std::function<void()>>& runs, int threads,
                                             bool fastest = false) {
  double slowest = 0;
  for (const std::function<void()>& run : runs) {
    auto start = std::chrono::steady_clock::now();
    run();
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const bool settle = threads > 1;
  const int rounds = std::clamp(static_cast<int>(1.0 / std::max(slowest, 1e-6)), 3, settle ? 15 : 51);
  std::vector<std::vector<double>> times(runs.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (settle) {
        std::this_thread::sleep_for(std::chrono::duration<double>(kSettleSeconds));
        const auto wake_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWakeSeconds);
        do runs[i]();
        while (std::chrono::steady_clock::now() < wake_end);
      }
      auto t0 = std::chrono::steady_clock::now();
      runs[i]();
      times[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::nth_element(t.begin(), t.begin() + (fastest ? 0 : rounds / 2), t.end());
    medians.push_back(t[fastest ? 0 : rounds / 2]);
  }
  return medians;
}

// The largest |x - y| / max(1, |y|) over the elements; infinity when any is NaN.
double MaxRelativeError(const Tensor& got, const Tensor& want) {
  double max_err = 0;
  const float* x = got.data_as<float>();
  const float* y = want.data_as<float>();
  for (int64_t i = 0; i < want.numel(); ++i) {
    double err = std::abs(static_cast<double>(x[i]) - y[i]) / std::max(1.0, std::abs(static_cast<double>(y[i])));
    if (!(err <= max_err)) max_err = std::isnan(err) ? INFINITY : err;
  }
  return max_err;
}

bool ParseSizes(const std::string& list, std::vector<Shape>* shapes) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    // "MxKxN": any shape (the calibration of library dispatch, relax/transform/
    // library_dispatch_evidence.h, measures a model's weight shapes this way).
    long long m = 0, k = 0, n = 0;
    int used = 0;
    if (std::sscanf(item.c_str(), "%lldx%lldx%lld%n", &m, &k, &n, &used) == 3 &&
        used == static_cast<int>(item.size()) && m > 0 && k > 0 && n > 0) {
      shapes->push_back({std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n), m, k, n});
      if (comma == std::string::npos) break;
      pos = comma + 1;
      continue;
    }
    bool weight = !item.empty() && item[0] == 'm';
    char* end = nullptr;
    const char* digits = item.c_str() + (weight ? 1 : 0);
    long long v = std::strtoll(digits, &end, 10);
    if (*digits == '\0' || *end != '\0' || v <= 0) {
      std::fprintf(stderr, "matmul_bench: bad size '%s' (want S for S x S x S, mM for [M,4096]@[4096,4096], or MxKxN)\n",
                   item.c_str());
      return false;
    }
    if (weight) {
      shapes->push_back({"M=" + std::to_string(v) + " x 4096x4096", v, 4096, 4096});
    } else {
      shapes->push_back({std::to_string(v) + "^3", v, v, v});
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return true;
}

// `--target vulkan|cuda`: Kiln's kernels for that GPU (through the VM on its device) against
// Kiln's CPU kernel, each shape checked against the CPU result first.
int RunOnGpu(const kiln::tir::Target& target, const std::vector<Shape>& shapes, int threads,
             const kiln::codegen::CpuTarget& cpu, const kiln::tir::CpuScheduleKnobs& knobs, BenchContext* bench) {
  absl::StatusOr<kiln::vm::Device*> device = kiln::bench::OpenBenchDevice(target);
  if (!device.ok()) {
    std::printf("matmul_bench: --target %s: %s; nothing to run\n", kiln::tir::TargetKindName(target.kind),
                std::string(device.status().message()).c_str());
    return 0;
  }
  std::printf("Kiln on %s (%s) against Kiln on the CPU (%d threads)\n\n", (*device)->name().c_str(),
              target.ToString().c_str(), threads);
  std::printf("%-22s %9s %9s %9s %9s\n", "shape", "GPU", "CPU", "GPU/CPU", "max err");
  std::printf("%-22s %9s %9s %9s\n", "", "GF/s", "GF/s", "speed");
  for (const Shape& s : shapes) {
    Tensor a = Random({s.m, s.k}, 1);
    Tensor w = Random({s.k, s.n}, 2);
    Tensor c_cpu = OrDie(Tensor::Empty({s.m, s.n}, kF32), "allocate");
    std::shared_ptr<kiln::vm::KernelObject> object;
    KilnKernelFn cpu_matmul = BuildKilnMatmul(s.k, s.n, threads, cpu, knobs, &object);
    KilnArg args[3] = {};
    for (int i = 0; i < 3; ++i) args[i].type_code = kKilnArgTensor;
    args[0].value.tensor = a.dl_tensor();
    args[1].value.tensor = w.dl_tensor();
    args[2].value.tensor = c_cpu.dl_tensor();
    auto run_cpu = [&] {
      if (cpu_matmul(args, 3, &bench->ctx) != 0) Die("Kiln CPU kernel failed: " + bench->error);
    };
    const std::string text = "module {\n  func @main(x: Tensor((m, " + std::to_string(s.k) +
                             "), float32), w: Tensor((" + std::to_string(s.k) + ", " + std::to_string(s.n) +
                             "), float32)) -> Tensor((m, " + std::to_string(s.n) +
                             "), float32) {\n    y = R.matmul(x, w)\n    return y\n  }\n}";
    std::unique_ptr<kiln::vm::VirtualMachine> machine =
        OrDie(kiln::bench::CompileForDevice(text, target, /*fuse=*/true, *device), "compile for the GPU");
    std::vector<kiln::vm::Value> on_device = OrDie(kiln::bench::ToDevice({a, w}, *device), "copy to the device");
    auto run_gpu = [&] { return OrDie(kiln::bench::CallAndWait(*machine, *device, on_device), "GPU call"); };
    run_cpu();
    Tensor c_gpu = OrDie(run_gpu().as_tensor().CopyTo(kiln::vm::CpuDevice()), "copy the result back");
    const double max_err = MaxRelativeError(c_gpu, c_cpu);
    if (max_err > 1e-3) {
      std::printf("%-22s results disagree: max relative error %.3g\n", s.name.c_str(), max_err);
      return 1;
    }
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
    const std::vector<double> medians = InterleavedMedianSeconds({[&] { run_gpu(); }, run_cpu}, threads);
    const double gpu_s = medians[0];
    const double cpu_s = medians[1];
    std::printf("%-22s %9.2f %9.2f %9.3f %9.2g\n", s.name.c_str(), flops / gpu_s * 1e-9, flops / cpu_s * 1e-9,
                cpu_s / gpu_s, max_err);
    std::fflush(stdout);
  }
  return 0;
}

// --cublas: Kiln's generated cuda kernel against cuBLAS on the same GPU.
int RunAgainstCublas(const std::vector<Shape>& shapes) {
  absl::StatusOr<kiln::bench::CublasPeer> peer = kiln::bench::CublasPeer::Open();
  if (!peer.ok()) {
    std::printf("matmul_bench --cublas: no CUDA GPU with cuBLAS here (%s); nothing to run\n",
                std::string(peer.status().message()).c_str());
    return 0;
  }
  kiln::vm::Device* gpu = peer->device();
  std::printf("Kiln's generated cuda matmul against cuBLAS on %s\n\n", gpu->name().c_str());
  std::printf("%-22s %9s %9s %11s %9s\n", "shape", "Kiln", "cuBLAS", "Kiln/cuBLAS", "max err");
  std::printf("%-22s %9s %9s\n", "", "GF/s", "GF/s");
  for (const Shape& s : shapes) {
    Tensor a = OrDie(Random({s.m, s.k}, 1).CopyTo(gpu), "copy to the GPU");
    Tensor w = OrDie(Random({s.k, s.n}, 2).CopyTo(gpu), "copy to the GPU");
    Tensor c = OrDie(Tensor::Empty({s.m, s.n}, kF32, gpu), "allocate on the GPU");
    std::unique_ptr<kiln::vm::VirtualMachine> kiln = OrDie(kiln::bench::GeneratedCudaMatmul(s.k, s.n, gpu), "compile");
    auto run_kiln = [&] {
      kiln::vm::Value y = OrDie(kiln->Invoke("main", {kiln::vm::Value(a), kiln::vm::Value(w)}), "Kiln's matmul");
      if (absl::Status done = gpu->Synchronize(); !done.ok()) Die(std::string(done.message()));
      return y;
    };
    auto run_cublas = [&] {
      if (absl::Status done = peer->Matmul(a, w, c); !done.ok()) Die("cuBLAS: " + std::string(done.message()));
    };
    Tensor from_kiln = OrDie(run_kiln().as_tensor().CopyTo(kiln::vm::CpuDevice()), "copy back");
    run_cublas();
    Tensor from_cublas = OrDie(c.CopyTo(kiln::vm::CpuDevice()), "copy back");
    const double max_err = MaxRelativeError(from_kiln, from_cublas);
    if (max_err > 1e-3) {
      std::printf("%-22s results disagree: max relative error %.3g\n", s.name.c_str(), max_err);
      return 1;
    }
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
    const std::vector<double> medians = InterleavedMedianSeconds({[&] { run_kiln(); }, run_cublas}, 1);
    const double kiln_s = medians[0];
    const double cublas_s = medians[1];
    std::printf("%-22s %9.1f %9.1f %11.3f %9.2g\n", s.name.c_str(), flops / kiln_s * 1e-9, flops / cublas_s * 1e-9,
                cublas_s / kiln_s, max_err);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "256,512,1024,2048,m1,m2,m4,m8,m16,m32,m64";
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string openblas_core;
  std::string pypi_openblas;
  std::string target_name = "cpu";
  std::string mcpu = "host";
  bool sizes_given = false;
  bool cublas = false;
  kiln::tir::CpuScheduleKnobs knobs;
  std::optional<kiln::tir::CpuScheduleKnobs> knobs_b;
  std::optional<kiln::tir::PrimFunc> kernel_b;
  bool fastest = false;
  int pool_spin_us = kiln::vm::ThreadPool::kDefaultSpinMicros;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      if (arg.rfind(flag + "=", 0) == 0) return argv[i] + flag.size() + 1;
      if (arg == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--sizes")) {
      sizes = v;
      sizes_given = true;
    } else if (arg == "--fastest") {
      fastest = true;
    } else if (arg == "--cublas") {
      cublas = true;
    } else if (const char* v = value("--target")) {
      target_name = v;
    } else if (const char* v = value("--mcpu")) {
      mcpu = v;
    } else if (const char* v = value("--threads")) {
      threads = std::atoi(v);
      if (threads < 1) Die("--threads wants a positive integer, got '" + std::string(v) + "'");
    } else if (const char* v = value("--openblas-core")) {
      openblas_core = v;
    } else if (const char* v = value("--pypi-openblas")) {
      pypi_openblas = v;
    } else if (const char* v = value("--knobs")) {
      knobs = OrDie(kiln::tir::CpuScheduleKnobs::Parse(v), "--knobs");
    } else if (const char* v = value("--knobs-b")) {
      knobs_b = OrDie(kiln::tir::CpuScheduleKnobs::Parse(v), "--knobs-b");
    } else if (const char* v = value("--kernel-b")) {
      kernel_b = ReadHandKernel(v);
    } else if (const char* v = value("--pool-spin-us")) {
      if (!absl::SimpleAtoi(v, &pool_spin_us) || pool_spin_us < 0 ||
          pool_spin_us > kiln::vm::ThreadPool::kMaxSpinMicros) {
        Die("--pool-spin-us wants an integer in [0, " + std::to_string(kiln::vm::ThreadPool::kMaxSpinMicros) + "], got '" +
            std::string(v) + "'");
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--sizes=256,512,1024,2048,m1,...,m64] [--threads=N] [--openblas-core=NAME]\n"
                   "          [--pypi-openblas=PATH] [--target=cpu|vulkan|cuda] [--cublas] [--mcpu=NAME]\n"
                   "          [--knobs=TEXT] [--knobs-b=TEXT] [--kernel-b=FILE] [--fastest] [--pool-spin-us=N]\n"
                   "  --openblas-core  OpenBLAS kernels to compare with (default: SkylakeX on AVX-512 CPUs,\n"
                   "                   else OpenBLAS's own choice)\n"
                   "  --pypi-openblas  numpy's bundled libscipy_openblas64_*.so, a second peer\n"
                   "  --target         vulkan or cuda: Kiln's kernels for that GPU against Kiln on the CPU\n"
                   "                   (default sizes 256,m1,m8; one line and exit 0 without the device)\n"
                   "  --cublas         on a CUDA GPU: Kiln's generated cuda matmul against cuBLAS\n"
                   "  --mcpu           the CPU Kiln's kernel is generated for (default host; haswell: AVX2)\n"
                   "  --knobs          schedule knobs for Kiln's CPU kernel, e.g. \"matmul.col_vectors=4\"\n"
                   "                   (tir/schedule_rules/cpu_knobs.h; default: the untuned rules)\n"
                   "  --knobs-b        a second Kiln kernel with these knobs, timed in the same rounds\n"
                   "  --kernel-b       the second kernel a scheduled prim_func from FILE (IR text format)\n"
                   "  --fastest        each contender's fastest round instead of the median (loaded machines)\n"
                   "  --pool-spin-us   how long Kiln's idle pool threads poll before they sleep (default 20)\n",
                   argv[0]);
      return 2;
    }
  }
  if (knobs_b && kernel_b) Die("--knobs-b and --kernel-b both name the second kernel; give one");
  const std::optional<kiln::tir::Target> gpu = kiln::bench::GpuTargetNamed(target_name);
  if (!gpu && target_name != "cpu") Die("--target wants cpu, vulkan or cuda, got '" + target_name + "'");
  // A naive GPU kernel on a CPU Vulkan driver takes seconds at 2048^3: smaller defaults.
  if (gpu && !sizes_given) sizes = "256,m1,m8";
  std::vector<Shape> shapes;
  if (!ParseSizes(sizes, &shapes)) return 2;
  if (cublas) return RunAgainstCublas(shapes);
  const kiln::codegen::CpuTarget cpu =
      mcpu == "host" ? kiln::codegen::CpuTarget::Host() : OrDie(kiln::codegen::CpuTarget::Named(mcpu), "--mcpu");

  const kiln::builtins::OpenBlasLibrary& blas = kiln::bench::LoadOpenBlasPeer(openblas_core, threads);
  kiln::bench::PypiOpenBlas pypi;
  if (!pypi_openblas.empty()) {
    std::string error;
    if (!kiln::bench::LoadPypiOpenBlas(pypi_openblas, threads, &pypi, &error)) Die(error);
    std::printf("PyPI OpenBLAS peer: core %s, %d threads (%s)\n",
                pypi.core_name.empty() ? "unknown" : pypi.core_name.c_str(), threads, pypi_openblas.c_str());
  }

  kiln::vm::ThreadPool pool(threads, pool_spin_us);
  BenchContext bench = kiln::vm::MakeStandaloneCallContext(&pool);
  if (gpu) return RunOnGpu(*gpu, shapes, threads, cpu, knobs, &bench);
  std::printf("Kiln target: mcpu %s, %d fp32 lanes, %d threads\n", cpu.mcpu.c_str(),
              OrDie(kiln::codegen::Float32VectorLanes(cpu), "vector lanes"), threads);
  const kiln::bench::SgemvFn debian_sgemv = kiln::bench::DebianSgemv();

  const bool two = pypi.sgemm != nullptr;
  std::printf("\n%-22s %9s %9s %9s %10s %10s %10s %9s\n", "shape", "Kiln", "Debian", two ? "PyPI" : "-",
              "Kiln/Deb", two ? "Kiln/PyPI" : "-", "Kiln/best", "max err");
  std::printf("%-22s %9s %9s %9s\n", "", "GF/s", "GF/s", two ? "GF/s" : "");
  for (const Shape& s : shapes) {
    Tensor a = Random({s.m, s.k}, 1);
    Tensor w = Random({s.k, s.n}, 2);
    Tensor c_kiln = OrDie(Tensor::Empty({s.m, s.n}, kF32), "allocate");
    Tensor c_blas = OrDie(Tensor::Empty({s.m, s.n}, kF32), "allocate");
    Tensor c_pypi = OrDie(Tensor::Empty({s.m, s.n}, kF32), "allocate");
    std::shared_ptr<kiln::vm::KernelObject> object;
    KilnKernelFn kiln_matmul = BuildKilnMatmul(s.k, s.n, threads, cpu, knobs, &object);
    std::shared_ptr<kiln::vm::KernelObject> object_b;
    KilnKernelFn kiln_matmul_b = knobs_b    ? BuildKilnMatmul(s.k, s.n, threads, cpu, *knobs_b, &object_b)
                                 : kernel_b ? LoadKernel(*kernel_b, cpu, &object_b)
                                            : nullptr;
    Tensor c_kiln_b = OrDie(Tensor::Empty({s.m, s.n}, kF32), "allocate");
    // One row: the peers run their GEMV (as numpy does), the faster of their two entries.
    const bool gemv = s.m == 1 && debian_sgemv != nullptr;
    KilnArg args[3] = {};
    for (int i = 0; i < 3; ++i) args[i].type_code = kKilnArgTensor;
    args[0].value.tensor = a.dl_tensor();
    args[1].value.tensor = w.dl_tensor();
    args[2].value.tensor = c_kiln.dl_tensor();
    using kiln::builtins::kCblasNoTrans;
    using kiln::builtins::kCblasRowMajor;
    auto run_kiln = [&] {
      if (kiln_matmul(args, 3, &bench.ctx) != 0) Die("Kiln kernel failed: " + bench.error);
    };
    KilnArg args_b[3] = {args[0], args[1], args[2]};
    args_b[2].value.tensor = c_kiln_b.dl_tensor();
    auto run_kiln_b = [&] {
      if (kiln_matmul_b(args_b, 3, &bench.ctx) != 0) Die("Kiln kernel B failed: " + bench.error);
    };
    auto run_blas = [&] {
      if (gemv) {
        debian_sgemv(kCblasRowMajor, kiln::bench::kCblasTrans, static_cast<int>(s.k), static_cast<int>(s.n), 1.0f,
                     w.data_as<float>(), static_cast<int>(s.n), a.data_as<float>(), 1, 0.0f, c_blas.data_as<float>(), 1);
        return;
      }
      blas.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
                 static_cast<int>(s.k), 1.0f, a.data_as<float>(), static_cast<int>(s.k), w.data_as<float>(),
                 static_cast<int>(s.n), 0.0f, c_blas.data_as<float>(), static_cast<int>(s.n));
    };
    auto run_pypi = [&] {
      if (s.m == 1) {
        pypi.sgemv(kCblasRowMajor, kiln::bench::kCblasTrans, s.k, s.n, 1.0f, w.data_as<float>(), s.n,
                   a.data_as<float>(), 1, 0.0f, c_pypi.data_as<float>(), 1);
        return;
      }
      pypi.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, s.m, s.n, s.k, 1.0f, a.data_as<float>(), s.k,
                 w.data_as<float>(), s.n, 0.0f, c_pypi.data_as<float>(), s.n);
    };
    // Agreement first: relative to the magnitude of the row's dot products, since single
    // elements can cancel to near zero. Both peers are checked against Debian's result.
    run_kiln();
    run_blas();
    double max_err = MaxRelativeError(c_kiln, c_blas);
    if (two) {
      run_pypi();
      max_err = std::max(max_err, MaxRelativeError(c_pypi, c_blas));
    }
    if (kiln_matmul_b) {
      run_kiln_b();
      max_err = std::max(max_err, MaxRelativeError(c_kiln_b, c_blas));
    }
    if (max_err > 1e-3) {
      std::printf("%-22s results disagree: max relative error %.3g\n", s.name.c_str(), max_err);
      return 1;
    }
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
    std::vector<std::function<void()>> contenders = {run_kiln, run_blas};
    if (two) contenders.push_back(run_pypi);
    if (kiln_matmul_b) contenders.push_back(run_kiln_b);
    const std::vector<double> medians = InterleavedMedianSeconds(contenders, threads, fastest);
    const double kiln_s = medians[0];
    const double blas_s = medians[1];
    const double pypi_s = two ? medians[2] : 0.0;
    const double kiln_gf = flops / kiln_s * 1e-9;
    const double blas_gf = flops / blas_s * 1e-9;
    const double pypi_gf = two ? flops / pypi_s * 1e-9 : 0.0;
    const double best = std::max(blas_gf, pypi_gf);
    if (two) {
      std::printf("%-22s %9.1f %9.1f %9.1f %10.2f %10.2f %10.2f %9.2g\n", s.name.c_str(), kiln_gf, blas_gf, pypi_gf,
                  kiln_gf / blas_gf, kiln_gf / pypi_gf, kiln_gf / best, max_err);
    } else {
      std::printf("%-22s %9.1f %9.1f %9s %10.2f %10s %10.2f %9.2g\n", s.name.c_str(), kiln_gf, blas_gf, "-",
                  kiln_gf / blas_gf, "-", kiln_gf / best, max_err);
    }
    if (s.m <= 8) {
      // GEMV-like: the time is reading the weight once, so its bandwidth is the figure.
      const double bytes = 4.0 * static_cast<double>(s.k) * static_cast<double>(s.n);
      char pypi_gbs[32] = "-";
      if (two) std::snprintf(pypi_gbs, sizeof(pypi_gbs), "%.1f", bytes / pypi_s * 1e-9);
      std::printf("%-22s %9.1f %9.1f %9s   weight GB/s\n", "", bytes / kiln_s * 1e-9, bytes / blas_s * 1e-9,
                  pypi_gbs);
    }
    if (kiln_matmul_b) {
      const double b_s = medians.back();
      std::printf("%-22s %9.1f %9s %9s %10s %10s %10.2f   %s B (B/A %.2f)\n", "", flops / b_s * 1e-9, "", "", "",
                  "", flops / b_s * 1e-9 / best, knobs_b ? "knobs" : "kernel", kiln_s / b_s);
    }
    std::fflush(stdout);
  }
  return 0;
}
