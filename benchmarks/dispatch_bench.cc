// Dispatch overhead of the VM: a bytecode function making a chain of N calls to a trivial
// kernel (one tensor argument and one int), against calling the same C function directly
// in a loop with the same arguments. Prints nanoseconds per call for both and their ratio.
//
// Then the cost of an empty parallel region (one empty task per thread) on 1 and 2
// threads: vm::ThreadPool::ParallelFor against OpenMP's `#pragma omp parallel for` (GCC's
// libgomp, linked into this benchmark only), measured in the same run, back to back, as a
// decode step runs its parallel loops. An empty region may finish on the caller alone
// (the pool lets the caller claim every task a worker has not taken yet), so the same is
// measured again with tasks of 1 microsecond, which the threads must share.
//
//   build/benchmarks/dispatch_bench [N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "builtins/default_builtins.h"
#include "vm/executable_builder.h"
#include "vm/thread_pool.h"
#include "vm/virtual_machine.h"

namespace {

// The work of one task in both pools: a call the compiler cannot remove.
__attribute__((noinline)) int32_t EmptyTask(int64_t task, int64_t, void*) {
  asm volatile("" : : "r"(task) : "memory");
  return 0;
}

// A task of about a microsecond of work (a chain of 1000 dependent multiply-adds, no
// clock calls): a region of these cannot finish on the caller alone faster than the
// threads share it, so it shows the fork/join cost proper.
__attribute__((noinline)) int32_t MicrosecondTask(int64_t task, int64_t, void*) {
  uint64_t x = static_cast<uint64_t>(task) + 1;
  for (int i = 0; i < 1000; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    asm volatile("" : "+r"(x));
  }
  return x == 0 ? 1 : 0;
}

double PoolRegionNs(int threads, int64_t regions, int repeats, KilnParallelBody task);
double OmpRegionNs(int threads, int64_t regions, int repeats, KilnParallelBody task);

int32_t Trivial(const KilnArg* args, int32_t num_args, KilnCallContext*) {
  // Touch the arguments so neither loop can skip work the other does.
  return args[0].value.tensor->ndim == 1 && args[1].value.i64 >= 0 && num_args == 2 ? 0 : 1;
}

template <typename F>
double BestNsPerCall(int64_t calls, int repeats, F&& run) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    run();
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, ns / static_cast<double>(calls));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 10000;
  kiln::vm::BuiltinRegistry registry;
  kiln::builtins::RegisterMemoryBuiltins(registry);
  registry.RegisterKernel("bench.trivial", "ti", Trivial);

  kiln::vm::ExecutableBuilder b;
  int32_t kernel = b.DeclareKernel("bench.trivial", "ti", kiln::vm::KernelDecl::Source::kLibrary);
  auto& f = b.AddFunction("chain", {kiln::vm::TensorParam("x", kiln::vm::DTypeFloat32(), {kiln::vm::Dim::Any()})});
  for (int64_t i = 0; i < n; ++i) f.CallKernel(kernel, {kiln::vm::Operand::Reg(0), kiln::vm::Operand::Imm(i)});
  f.Ret(0);
  auto bytes = b.Build();
  if (!bytes.ok()) return 1;
  auto exe = kiln::vm::Executable::Load(*bytes, registry);
  if (!exe.ok()) {
    std::fprintf(stderr, "%s\n", std::string(exe.status().message()).c_str());
    return 1;
  }
  kiln::vm::VirtualMachine vm(*exe);
  auto x = *kiln::vm::Tensor::Empty({16}, kiln::vm::DTypeFloat32());
  std::vector<kiln::vm::Value> args = {kiln::vm::Value(x)};
  int32_t chain = (*exe)->FindFunction("chain");

  double vm_ns = BestNsPerCall(n, 20, [&] {
    if (!vm.Invoke(chain, args.data(), 1).ok()) std::abort();
  });

  KilnKernelFn volatile direct = Trivial;
  KilnCallContext ctx{};
  double direct_ns = BestNsPerCall(n, 20, [&] {
    KilnArg a[2];
    a[0].value.tensor = x.dl_tensor();
    a[0].type_code = kKilnArgTensor;
    a[1].type_code = kKilnArgInt;
    for (int64_t i = 0; i < n; ++i) {
      a[1].value.i64 = i;
      if (direct(a, 2, &ctx) != 0) std::abort();
    }
  });

  std::printf("dispatch: chain of %lld kernel calls\n", static_cast<long long>(n));
  std::printf("  through the VM:        %7.2f ns/call\n", vm_ns);
  std::printf("  direct C call (peer):  %7.2f ns/call\n", direct_ns);
  std::printf("  ratio VM / direct:     %7.2fx  (VM overhead %.2f ns/call)\n", vm_ns / direct_ns, vm_ns - direct_ns);

  // Alternate the two pools, best of several rounds: each round starts after a pause long
  // enough for the other pool's idle threads to stop spinning (libgomp spins far longer).
  const int64_t regions = 20000;
  for (bool empty : {true, false}) {
    std::printf("%s, %lld regions back to back, best of 5:\n",
                empty ? "empty parallel region (one empty task per thread)"
                      : "parallel region of one ~1-microsecond task per thread",
                static_cast<long long>(regions));
    for (int threads : {1, 2}) {
      double kiln_ns = 1e30;
      double omp_ns = 1e30;
      for (int round = 0; round < 5; ++round) {
        kiln_ns = std::min(kiln_ns, PoolRegionNs(threads, regions, 1, empty ? EmptyTask : MicrosecondTask));
        omp_ns = std::min(omp_ns, OmpRegionNs(threads, regions, 1, empty ? EmptyTask : MicrosecondTask));
      }
      std::printf("  %d thread%s: vm::ThreadPool %8.1f ns/region   OpenMP (libgomp) %8.1f ns/region   ratio %.2fx\n",
                  threads, threads == 1 ? " " : "s", kiln_ns, omp_ns, kiln_ns / omp_ns);
    }
  }
  return 0;
}

namespace {

void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

double PoolRegionNs(int threads, int64_t regions, int repeats, KilnParallelBody task) {
  kiln::vm::ThreadPool pool(threads);
  pool.ParallelFor(threads, task, nullptr);  // workers started
  Settle();
  return BestNsPerCall(regions, repeats, [&] {
    for (int64_t r = 0; r < regions; ++r) {
      if (pool.ParallelFor(threads, task, nullptr) != 0) std::abort();
    }
  });
}

double OmpRegionNs(int threads, int64_t regions, int repeats, KilnParallelBody task) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < threads; ++i) task(i, threads, nullptr);  // team started
  Settle();
  return BestNsPerCall(regions, repeats, [&] {
    for (int64_t r = 0; r < regions; ++r) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int i = 0; i < threads; ++i) task(i, threads, nullptr);
    }
  });
}

}  // namespace
