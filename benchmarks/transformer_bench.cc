// The transformer encoder block (examples/models/transformer_block.kir) through the whole
// compiler and the VM, in five configurations compiled once each: the default build (fused,
// OpenBLAS only for the matmuls whose shape class measured faster there, relax/transform/
// library_dispatch_evidence.h), then operator fusion on and off (PipelineOptions::fuse) x
// OpenBLAS for every matmul it can take on and off. For each sequence length n it
// prints the median milliseconds of one VM call per configuration, the ratio fused /
// unfused, and two peers measured in the same run:
//  - GFLOP/s over the block's matmul FLOPs (2n * (4*64*64 + 2*64*256) + 4 * n^2 * 64);
//  - "BLAS floor": OpenBLAS sgemm doing just the block's eight matmuls on the same shapes,
//    one after the other. The block does that work and more, so it cannot beat the floor;
//    block / floor says how far from it the compiled block is.
// The configurations' outputs are checked against each other before timing.
//
// OpenBLAS, for the library calls and the floor, runs with its best kernels for this CPU
// (benchmarks/openblas_peer.h).
//
// With --ort-python=PY (benchmarks/transformer_bench.sh passes it), ONNX Runtime runs the same
// block on the same weights and input with the same thread count (benchmarks/
// onnxruntime_block_peer.h); its output is checked against Kiln's, and the ratios default /
// ORT and best / ORT are printed (below 1: Kiln is faster).
//
//   build/benchmarks/transformer_bench [--n=1,7,64,300,1024] [--threads=N] [--model=PATH]
//       [--openblas-core=NAME] [--ort-python=PY] [--tuning-db=FILE] [--target=cpu|vulkan|cuda]
//
// --target vulkan|cuda: the block compiled for that GPU target (fused and unfused; a build
// the code generator cannot compile yet is reported with its reason) and run through the VM
// on its device, against the CPU's fused build with OpenBLAS in the same run, outputs checked
// against it first. On lavapipe (Mesa's CPU Vulkan driver) the figure is a sanity check, not a
// GPU's. Without the device it prints one line and exits 0.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/gpu_target.h"
#include "benchmarks/onnxruntime_block_peer.h"
#include "benchmarks/openblas_peer.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tune/tuning_db.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

namespace {

using kiln::vm::Tensor;

constexpr int64_t kD = 64;    // model width
constexpr int64_t kF = 256;   // MLP width
constexpr int64_t kMaxN = 2048;  // the model's declared bound on n
constexpr int kCblasTrans = 112;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "transformer_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Die(what + ": " + std::string(value.status().message()));
  return *std::move(value);
}

// Which matmuls go to OpenBLAS: none, every one dispatch_libraries can take (kiln compile
// --libs openblas), or the default: those whose shape class measured faster there.
enum class Blas { kNone, kAll, kByEvidence };

struct Config {
  std::string name;
  bool fuse;
  Blas blas;
  std::unique_ptr<kiln::vm::VirtualMachine> machine;
};

std::unique_ptr<kiln::vm::VirtualMachine> Compile(const std::string& text, const std::string& path, bool fuse,
                                                  Blas blas, int threads,
                                                  std::shared_ptr<const kiln::tir::TuningTable> tuning = nullptr) {
  kiln::relax::ParsedModule parsed = OrDie(kiln::relax::ParseModule(text, path), "parse");
  const kiln::codegen::CpuTarget target = kiln::codegen::CpuTarget::Host();
  kiln::relax::PipelineOptions options;
  options.fuse = fuse;
  options.libraries.openblas = blas != Blas::kNone;
  options.libraries.openblas_by_evidence = blas == Blas::kByEvidence;
  options.target = kiln::codegen::HostTarget(threads);
  options.tuning = std::move(tuning);
  kiln::relax::IRModule lowered = OrDie(kiln::relax::RunPipeline(parsed.module, options, &parsed.locations), "compile");
  std::string bytes = OrDie(kiln::codegen::BuildExecutable(lowered, target), "build executable");
  auto exe = OrDie(kiln::vm::Executable::Load(bytes, kiln::builtins::DefaultRegistry()), "load");
  return std::make_unique<kiln::vm::VirtualMachine>(exe);
}

Tensor Random(const std::vector<int64_t>& shape, uint32_t seed, float scale = 1.0f) {
  Tensor t = OrDie(Tensor::Empty(shape, kiln::vm::DTypeFloat32()), "allocate");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

// Appends samples (seconds per call) until at least `min_samples` and `budget` seconds are
// in (at most 5000 samples).
template <typename F>
void Sample(F&& call, double budget, size_t min_samples, std::vector<double>* samples) {
  double spent = 0;
  for (size_t taken = 0; taken < 5000 && (taken < min_samples || spent < budget); ++taken) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples->push_back(s);
    spent += s;
  }
}

double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Median seconds of one call, after a warm-up call.
template <typename F>
double MedianSecondsOf(F&& call) {
  call();
  std::vector<double> samples;
  Sample(call, 0.25, 7, &samples);
  return Median(std::move(samples));
}

// The block's eight matmuls as row-major sgemms C[m, n] = A[m, k] @ B[k, n] (B transposed
// for the attention scores, as q @ k^T).
struct Gemm {
  int64_t m, k, n;
  bool transpose_b;
};

std::vector<Gemm> BlockGemms(int64_t n) {
  return {{n, kD, kD, false}, {n, kD, kD, false}, {n, kD, kD, false},  // q, k, v
          {n, kD, n, true},                                           // scores = q @ k^T
          {n, n, kD, false},                                          // probs @ v
          {n, kD, kD, false},                                         // output projection
          {n, kD, kF, false},                                         // MLP up
          {n, kF, kD, false}};                                        // MLP down
}

double MatmulFlops(int64_t n) {
  double flops = 0;
  for (const Gemm& g : BlockGemms(n)) flops += 2.0 * static_cast<double>(g.m * g.k * g.n);
  return flops;
}

// Seconds for OpenBLAS to run the block's matmuls back to back (operands preallocated).
double BlasFloorSeconds(const kiln::builtins::OpenBlasLibrary& blas, int64_t n) {
  const std::vector<Gemm> gemms = BlockGemms(n);
  std::vector<Tensor> a, b, c;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const Gemm& g = gemms[i];
    a.push_back(Random({g.m, g.k}, 500 + static_cast<uint32_t>(i)));
    b.push_back(Random(g.transpose_b ? std::vector<int64_t>{g.n, g.k} : std::vector<int64_t>{g.k, g.n},
                       600 + static_cast<uint32_t>(i)));
    c.push_back(OrDie(Tensor::Empty({g.m, g.n}, kiln::vm::DTypeFloat32()), "allocate"));
  }
  return MedianSecondsOf([&] {
    for (size_t i = 0; i < gemms.size(); ++i) {
      const Gemm& g = gemms[i];
      blas.sgemm(kiln::builtins::kCblasRowMajor, kiln::builtins::kCblasNoTrans,
                 g.transpose_b ? kCblasTrans : kiln::builtins::kCblasNoTrans, static_cast<int>(g.m),
                 static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, a[i].data_as<float>(), static_cast<int>(g.k),
                 b[i].data_as<float>(), static_cast<int>(g.transpose_b ? g.k : g.n), 0.0f, c[i].data_as<float>(),
                 static_cast<int>(g.n));
    }
  });
}

std::vector<int64_t> ParseList(const std::string& list) {
  std::vector<int64_t> values;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = list.find(',', pos);
    const std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > kMaxN) {
      Die("bad --n entry '" + item + "' (want integers in 1.." + std::to_string(kMaxN) + ", comma-separated)");
    }
    values.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return values;
}

// Whether `got` matches `want` (relative to 1 + |want|, as the CPU configurations are compared).
bool Agrees(const Tensor& got, const Tensor& want, std::string* where) {
  const float* p = got.data_as<float>();
  const float* q = want.data_as<float>();
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double err = std::abs(static_cast<double>(p[i]) - q[i]) / (1.0 + std::abs(q[i]));
    if (!(err <= 1e-3)) {
      *where = "element " + std::to_string(i) + ": " + std::to_string(p[i]) + " vs " + std::to_string(q[i]);
      return false;
    }
  }
  return true;
}

// --target vulkan|cuda: the block on the GPU (fused, unfused) against the CPU's fused+blas.
int RunOnGpu(const kiln::tir::Target& target, const std::string& text, const std::string& model,
             const std::vector<int64_t>& ns, const std::vector<kiln::vm::Value>& weights, int threads) {
  absl::StatusOr<kiln::vm::Device*> device = kiln::bench::OpenBenchDevice(target);
  if (!device.ok()) {
    std::printf("transformer_bench: --target %s: %s; nothing to run\n", kiln::tir::TargetKindName(target.kind),
                std::string(device.status().message()).c_str());
    return 0;
  }
  std::unique_ptr<kiln::vm::VirtualMachine> cpu = Compile(text, model, /*fuse=*/true, Blas::kByEvidence, threads);
  struct GpuConfig {
    std::string name;
    std::unique_ptr<kiln::vm::VirtualMachine> machine;
  };
  std::vector<GpuConfig> configs;
  for (bool fuse : {true, false}) {
    const std::string name = fuse ? "fused" : "unfused";
    absl::StatusOr<std::unique_ptr<kiln::vm::VirtualMachine>> m =
        kiln::bench::CompileForDevice(text, target, fuse, *device);
    if (!m.ok()) {
      std::printf("%s %s: not compiled: %s\n", kiln::tir::TargetKindName(target.kind), name.c_str(),
                  std::string(m.status().message()).c_str());
      continue;
    }
    configs.push_back({name, *std::move(m)});
  }
  if (configs.empty()) return 0;
  std::printf("model: %s on %s (%s) against the CPU's default build (%d threads)\n\n", model.c_str(),
              (*device)->name().c_str(), target.ToString().c_str(), threads);
  const std::vector<Tensor> host_weights = [&] {
    std::vector<Tensor> out;
    for (const kiln::vm::Value& w : weights) out.push_back(w.as_tensor());
    return out;
  }();
  const std::vector<kiln::vm::Value> device_weights =
      OrDie(kiln::bench::ToDevice(host_weights, *device), "copy the weights to the device");
  std::printf("%6s", "n");
  for (const GpuConfig& c : configs) std::printf(" %15s", ("GPU " + c.name + " ms").c_str());
  std::printf(" %15s %12s\n", "CPU fu+blas ms", "best GPU/CPU");
  for (int64_t n : ns) {
    const Tensor x = Random({n, kD}, 7 + static_cast<uint32_t>(n));
    std::vector<kiln::vm::Value> cpu_args{kiln::vm::Value(x)};
    cpu_args.insert(cpu_args.end(), weights.begin(), weights.end());
    std::vector<kiln::vm::Value> gpu_args = OrDie(kiln::bench::ToDevice({x}, *device), "copy x to the device");
    gpu_args.insert(gpu_args.end(), device_weights.begin(), device_weights.end());
    const Tensor want = OrDie(cpu->Invoke("main", cpu_args), "CPU n=" + std::to_string(n)).as_tensor();
    for (GpuConfig& c : configs) {
      kiln::vm::Value out = OrDie(kiln::bench::CallAndWait(*c.machine, *device, gpu_args), "GPU " + c.name);
      const Tensor got = OrDie(out.as_tensor().CopyTo(kiln::vm::CpuDevice()), "copy the result back");
      std::string where;
      if (!Agrees(got, want, &where)) Die("GPU " + c.name + " and the CPU disagree at n=" + std::to_string(n) + " " + where);
    }
    std::printf("%6lld", static_cast<long long>(n));
    double best = INFINITY;
    for (GpuConfig& c : configs) {
      const double ms = 1e3 * MedianSecondsOf([&] {
                          if (!kiln::bench::CallAndWait(*c.machine, *device, gpu_args).ok()) Die("GPU call failed");
                        });
      best = std::min(best, ms);
      std::printf(" %15.3f", ms);
    }
    const double cpu_ms = 1e3 * MedianSecondsOf([&] {
                            if (!cpu->Invoke("main", cpu_args).ok()) Die("CPU call failed");
                          });
    std::printf(" %15.3f %12.2f\n", cpu_ms, best / cpu_ms);
    std::fflush(stdout);
  }
  return 0;
}

const char* kUsage =
    "usage: transformer_bench [--n=1,7,64,300,1024] [--threads=N] [--model=PATH] [--openblas-core=NAME]\n"
    "                         [--ort-python=PY] [--tuning-db=FILE]\n"
    "                         [--target=cpu|vulkan|cuda]\n"
    "  --tuning-db  also time the fused builds with FILE's tuning records replayed (kiln tune)\n"
    "  Times examples/models/transformer_block.kir through the VM with fusion on/off and\n"
    "  OpenBLAS dispatch on/off, against OpenBLAS doing just the block's matmuls.\n"
    "  --n        sequence lengths to run (1..2048, the model's bound)\n"
    "  --threads  threads for generated kernels and OpenBLAS (default: all cores)\n"
    "  --model    the .kir file (default: the source tree's examples/models/transformer_block.kir)\n"
    "  --openblas-core  OpenBLAS kernels for library calls and the floor (default: SkylakeX on\n"
    "             AVX-512 CPUs, else OpenBLAS's own choice)\n"
    "  --ort-python  a Python with onnxruntime, onnx and numpy: ONNX Runtime runs the same block\n"
    "             as a peer (benchmarks/transformer_block_ort.py; transformer_bench.sh sets it)\n"
    "  --target   vulkan or cuda: the block on that GPU (fused, unfused) against the CPU's\n"
    "             fused+blas; one line and exit 0 without the device\n";

}  // namespace

int main(int argc, char** argv) {
  std::string n_list = "1,7,64,300,1024";
  std::string ort_python;
  std::string model = std::string(KILN_SOURCE_DIR) + "/examples/models/transformer_block.kir";
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string openblas_core, tuning_db;
  std::string target_name = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      if (arg.rfind(flag + "=", 0) == 0) return argv[i] + flag.size() + 1;
      if (arg == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (const char* v = value("--n")) {
      n_list = v;
    } else if (const char* v = value("--openblas-core")) {
      openblas_core = v;
    } else if (const char* v = value("--ort-python")) {
      ort_python = v;
    } else if (const char* v = value("--tuning-db")) {
      tuning_db = v;
    } else if (const char* v = value("--target")) {
      target_name = v;
    } else if (const char* v = value("--model")) {
      model = v;
    } else if (const char* v = value("--threads")) {
      threads = std::atoi(v);
      if (threads < 1) Die("--threads wants a positive integer, got '" + std::string(v) + "'");
    } else {
      std::fprintf(stderr, "transformer_bench: unknown argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  const std::vector<int64_t> ns = ParseList(n_list);

  // The VM's kernels run on the process-wide pool, sized from the environment on first use.
  setenv("KILN_NUM_THREADS", std::to_string(threads).c_str(), 1);
  // Before anything else loads OpenBLAS: the VM's library calls use the same copy.
  const kiln::builtins::OpenBlasLibrary& blas = kiln::bench::LoadOpenBlasPeer(openblas_core, threads);

  const std::string text = OrDie(kiln::support::ReadFile(model), "read model");
  // Weights in the order of the block's parameters after x; small, so activations stay O(1).
  const std::vector<std::vector<int64_t>> weight_shapes = {{kD, kD}, {kD, kD}, {kD, kD}, {kD, kD}, {kD}, {kD},
                                                           {kD, kF}, {kF}, {kF, kD}, {kD}, {kD}, {kD}};
  std::vector<kiln::vm::Value> weights;
  std::vector<Tensor> weight_tensors;
  for (size_t i = 0; i < weight_shapes.size(); ++i) {
    weight_tensors.push_back(Random(weight_shapes[i], 100 + static_cast<uint32_t>(i), 0.125f));
    weights.emplace_back(weight_tensors.back());
  }
  if (target_name != "cpu") {
    const std::optional<kiln::tir::Target> gpu = kiln::bench::GpuTargetNamed(target_name);
    if (!gpu) Die("--target wants cpu, vulkan or cuda, got '" + target_name + "'");
    return RunOnGpu(*gpu, text, model, ns, weights, threads);
  }
  // configs: 0 default (fused, OpenBLAS where it measured faster), 1 fused+blas (every
  // matmul it can take), 2 fused, 3 unfused+blas, 4 unfused.
  std::vector<Config> configs;
  configs.push_back({"default", true, Blas::kByEvidence, Compile(text, model, true, Blas::kByEvidence, threads)});
  for (bool fuse : {true, false}) {
    for (Blas blas : {Blas::kAll, Blas::kNone}) {
      std::string name = std::string(fuse ? "fused" : "unfused") + (blas == Blas::kAll ? "+blas" : "");
      configs.push_back({name, fuse, blas, Compile(text, model, fuse, blas, threads)});
    }
  }
  if (!tuning_db.empty()) {
    // The default and the fused build with the tuning records replayed (kiln compile --tuning-db).
    auto table = std::make_shared<const kiln::tir::TuningTable>(
        kiln::tune::BestTable(OrDie(kiln::tune::ReadTuningDb(tuning_db), "tuning db")));
    for (Blas blas : {Blas::kByEvidence, Blas::kNone}) {
      std::string name = std::string(blas == Blas::kByEvidence ? "default" : "fused") + "+tuned";
      configs.push_back({name, true, blas, Compile(text, model, true, blas, threads, table)});
    }
  }
  std::printf("model: %s, compiled %zu ways (default, then fuse on/off x OpenBLAS for every matmul on/off%s)\n\n",
              model.c_str(), configs.size(), tuning_db.empty() ? "" : ", tuned");
  std::optional<kiln::bench::OnnxRuntimeBlockPeer> ort;
  if (!ort_python.empty()) {
    ort.emplace(OrDie(kiln::bench::OnnxRuntimeBlockPeer::Create(
                          ort_python, std::string(KILN_SOURCE_DIR) + "/benchmarks/transformer_block_ort.py",
                          weight_tensors, threads),
                      "ONNX Runtime peer"));
  }

  std::printf("%6s", "n");
  for (const Config& c : configs) std::printf(" %15s", (c.name + " ms").c_str());
  std::printf(" %11s %11s %12s %10s %11s", "fused/unf", "fu/unf+blas", "best GFLOP/s", "BLAS floor", "best/floor");
  if (ort) std::printf(" %10s %12s %9s", "ORT ms", "default/ORT", "best/ORT");
  std::printf("  (%d thread%s)\n", threads, threads == 1 ? "" : "s");
  for (int64_t n : ns) {
    const Tensor x = Random({n, kD}, 7 + static_cast<uint32_t>(n));
    std::vector<kiln::vm::Value> args{kiln::vm::Value(x)};
    args.insert(args.end(), weights.begin(), weights.end());
    // Agreement first: every configuration against the first one.
    std::vector<float> first;
    for (Config& c : configs) {
      absl::StatusOr<kiln::vm::Value> out = c.machine->Invoke("main", args);
      if (!out.ok()) Die(c.name + " n=" + std::to_string(n) + ": " + std::string(out.status().message()));
      const Tensor& t = out->as_tensor();
      const float* p = t.data_as<float>();
      if (first.empty()) {
        first.assign(p, p + t.numel());
        continue;
      }
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double err = std::abs(static_cast<double>(p[i]) - first[i]) / (1.0 + std::abs(first[i]));
        if (!(err <= 1e-3)) {
          Die(c.name + " and " + configs[0].name + " disagree at n=" + std::to_string(n) + " element " +
              std::to_string(i) + ": " + std::to_string(p[i]) + " vs " + std::to_string(first[i]));
        }
      }
    }
    // The configurations take turns (five rounds) so that a change in the machine's load
    // while this runs falls on all of them alike.
    std::vector<std::vector<double>> samples(configs.size());
    for (int round = 0; round < 5; ++round) {
      for (size_t i = 0; i < configs.size(); ++i) {
        Sample([&] {
                 if (!configs[i].machine->Invoke("main", args).ok()) Die(configs[i].name + " failed while timing");
               },
               0.05, 3, &samples[i]);
      }
    }
    std::vector<double> ms;
    for (std::vector<double>& s : samples) ms.push_back(1e3 * Median(std::move(s)));
    const double floor_ms = 1e3 * BlasFloorSeconds(blas, n);
    const double best_ms = *std::min_element(ms.begin(), ms.end());
    std::printf("%6lld", static_cast<long long>(n));
    for (double m : ms) std::printf(" %15.3f", m);
    std::printf(" %11.2f %11.2f %12.1f %10.3f %11.2f", ms[2] / ms[4], ms[1] / ms[3],
                MatmulFlops(n) / (best_ms * 1e-3) * 1e-9, floor_ms, best_ms / floor_ms);
    if (ort) {
      kiln::bench::OnnxRuntimeBlockPeer::Result peer = OrDie(ort->Run(x, n), "ONNX Runtime peer");
      // The same computation: ONNX Runtime's output against the default build's.
      for (size_t i = 0; i < first.size(); ++i) {
        const double err = std::abs(static_cast<double>(peer.out[i]) - first[i]) / (1.0 + std::abs(first[i]));
        if (!(err <= 1e-3)) {
          Die("ONNX Runtime and " + configs[0].name + " disagree at n=" + std::to_string(n) + " element " +
              std::to_string(i) + ": " + std::to_string(peer.out[i]) + " vs " + std::to_string(first[i]));
        }
      }
      std::printf(" %10.3f %12.2f %9.2f", peer.ms, ms[0] / peer.ms, best_ms / peer.ms);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("\nms: median of one VM call (the configurations in turn, after a warm-up call).\n"
              "default: fused, OpenBLAS only for matmuls whose shape class measured faster there (docs/schedule.md);\n"
              "+blas: every matmul OpenBLAS can take (kiln compile --libs openblas).\n"
              "fused/unf: fused / unfused time without OpenBLAS; fu/unf+blas: the same with OpenBLAS dispatch.\n"
              "GFLOP/s counts the block's matmul FLOPs only, at the best configuration.\n"
              "BLAS floor: ms for OpenBLAS to do just those matmuls; best/floor: the best configuration / floor.\n");
  if (ort) {
    std::printf("ORT ms: median of one ONNX Runtime call on the same block, weights, input and threads;\n"
                "default/ORT: the default build / ORT, best/ORT: the best configuration / ORT.\n");
  }
  return 0;
}
