// cuBLAS in cuda functions (relax/transform/dispatch_libraries.h, builtins/cublas_kernels.cc):
// matmul cases compiled for cuda with cuBLAS dispatch, alone and mixed with generated
// kernels in one function. What needs no GPU runs everywhere (the kernel table names the
// cuBLAS kernels, the generated kernels pass NVRTC, the kernels are registered, a cuBLAS call
// off a CUDA device is a clear error); the numerics against the reference evaluator and the
// event profile need a GPU and cuBLAS and are skipped elsewhere, saying why.
// KILN_CUBLAS_BUNDLE_DIR=DIR writes these cases for scripts/gpu_check.sh (tests/codegen/gpu_bundle.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "builtins/cublas_library.h"
#include "builtins/default_builtins.h"
#include "codegen/nvrtc_compiler.h"
#include "tests/codegen/gpu_bundle.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/op_cases.h"
#include "tests/codegen/op_check.h"
#include "vm/cuda_device.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::op_cases {
namespace {

using ::testing::HasSubstr;

// Each case with the cuBLAS kernel its matmul must become (and whether the function also has
// generated kernels).
struct CublasCase {
  Case c;
  std::string library_kernel;
  bool has_generated_kernels = false;
};

// gtest prints a parameter by its name, not its bytes.
void PrintTo(const CublasCase& cc, std::ostream* os) { *os << cc.c.name; }

std::vector<CublasCase> CublasCases() {
  const Sizes rows = {{{"n", 1}}, {{"n", 7}}, {{"n", 300}}, {{"n", 1031}}};
  const Sizes short_rows = {{{"n", 1}}, {{"n", 7}}, {{"n", 300}}};
  std::vector<CublasCase> cases;
  cases.push_back({{"cublas_f32_nn", {P("x", {"n", "256"}), P("w", {"256", "128"})}, "R.matmul(x, w)", rows, 1e-4, 1e-4},
                   "kiln.cublas.gemm_nn"});
  // A linear layer: the weight transposed by permute_dims is read transposed by cuBLAS.
  Case nt{"cublas_f32_nt", {P("x", {"n", "256"}), P("w", {"128", "256"})}, "R.matmul(x, wt)", short_rows, 1e-4, 1e-4};
  nt.prelude = "wt = R.permute_dims(w, axes=[1, 0])\n";
  cases.push_back({nt, "kiln.cublas.gemm_nt"});
  Case tn{"cublas_f32_tn", {P("a", {"256", "n"}), P("w", {"256", "128"})}, "R.matmul(at, w)", short_rows, 1e-4, 1e-4};
  tn.prelude = "at = R.permute_dims(a, axes=[1, 0])\n";
  cases.push_back({tn, "kiln.cublas.gemm_tn"});
  // float16 operands summed in float32, rounded to float16 (or kept float32) once.
  cases.push_back({{"cublas_f16", {P("x", {"n", "256"}, "float16"), P("w", {"256", "128"}, "float16")}, "R.matmul(x, w)",
                    short_rows, 1e-2, 1e-2},
                   "kiln.cublas.gemm_nn"});
  cases.push_back({{"cublas_f16_f32_out", {P("x", {"n", "256"}, "float16"), P("w", {"256", "128"}, "float16")},
                    "R.matmul(x, w, out_dtype=\"float32\")", short_rows, 1e-3, 1e-3},
                   "kiln.cublas.gemm_nn"});
  // Batched: attention scores q @ k^T (both batched, symbolic n), and a weight shared by the batch.
  Case scores{"cublas_batched_scores", {P("q", {"3", "n", "64"}), P("k", {"3", "n", "64"})}, "R.matmul(q, kt)",
              short_rows, 1e-4, 1e-4};
  scores.prelude = "kt = R.permute_dims(k, axes=[0, 2, 1])\n";
  cases.push_back({scores, "kiln.cublas.gemm_nt"});
  cases.push_back({{"cublas_batched_shared_weight", {P("x", {"2", "n", "128"}), P("w", {"128", "64"})}, "R.matmul(x, w)",
                    short_rows, 1e-4, 1e-4},
                   "kiln.cublas.gemm_nn"});
  // One function mixing cuBLAS and generated kernels: matmul, bias + relu (fused, generated),
  // a second matmul on the result.
  Case mlp{"cublas_mixed_mlp", {P("x", {"n", "256"}), P("w0", {"256", "128"}), P("b0", {"128"}), P("w1", {"128", "64"})},
           "R.matmul(rl, w1)", short_rows, 1e-4, 1e-4};
  mlp.prelude = "h = R.matmul(x, w0)\ny = R.add(h, b0)\nrl = R.relu(y)\n";
  cases.push_back({mlp, "kiln.cublas.gemm_nn", /*has_generated_kernels=*/true});
  return cases;
}

const GpuCompiled& CompiledWithCublas(const Case& c) {
  static auto* cache = new std::map<std::string, GpuCompiled>();
  if (auto it = cache->find(c.name); it != cache->end()) return it->second;
  GpuCompiled out;
  absl::StatusOr<std::string> bytes =
      CompileForGpu(ModuleText(c), tir::Target::Cuda(), /*fuse=*/true, /*cublas=*/true);
  out.status = bytes.status();
  if (bytes.ok()) {
    out.bytes = *bytes;
    absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
    out.status = exe.status();
    if (exe.ok()) out.exe = *exe;
  }
  return (*cache)[c.name] = std::move(out);
}

// The CUDA device and cuBLAS, or why this machine cannot run the cases.
absl::StatusOr<vm::Device*> GpuWithCublas() {
  absl::StatusOr<vm::Device*> gpu = vm::GetDevice("cuda:0");
  if (!gpu.ok()) return gpu.status();
  absl::StatusOr<const builtins::CublasLibrary*> cublas = builtins::LoadCublas();
  if (!cublas.ok()) return cublas.status();
  return *gpu;
}

class CudaCublasTest : public ::testing::TestWithParam<CublasCase> {};

TEST_P(CudaCublasTest, CompilesToCublasCallsAndGeneratedKernels) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  const CublasCase& cc = GetParam();
  const GpuCompiled& compiled = CompiledWithCublas(cc.c);
  ASSERT_TRUE(compiled.status.ok()) << compiled.status << "\n" << ModuleText(cc.c);
  bool library = false;
  int generated = 0;
  for (const vm::KernelDecl& k : compiled.exe->contents().kernels) {
    if (k.source == vm::KernelDecl::Source::kLibrary) {
      EXPECT_EQ(k.name, cc.library_kernel);
      EXPECT_EQ(k.arg_signature, "ttt");
      library = true;
    } else {
      ++generated;
    }
  }
  EXPECT_TRUE(library) << "no cuBLAS call in " << cc.c.name;
  // A transposing permute_dims is folded into the call, not left as a kernel.
  EXPECT_EQ(generated > 0, cc.has_generated_kernels);
  if (cc.has_generated_kernels) {
    const std::vector<vm::DeviceCode>& code = compiled.exe->contents().device_code;
    ASSERT_EQ(code.size(), 1u);
    std::map<std::string, int> formats;
    for (const vm::DeviceBinary& b : code[0].binaries) formats[b.format + " " + b.arch]++;
    EXPECT_EQ(formats["cubin sm_90"], 1);
    EXPECT_EQ(formats["ptx sm_80"], 1);
  }
}

TEST_P(CudaCublasTest, MatchesTheReferenceOnTheGpu) {
  absl::StatusOr<vm::Device*> gpu = GpuWithCublas();
  if (!gpu.ok()) GTEST_SKIP() << "needs a CUDA GPU and cuBLAS: " << gpu.status().message();
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  const CublasCase& cc = GetParam();
  const GpuCompiled& compiled = CompiledWithCublas(cc.c);
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  absl::Status run = RunAgainstReferenceOn(cc.c, compiled.exe, *gpu);
  EXPECT_TRUE(run.ok()) << run;
}

INSTANTIATE_TEST_SUITE_P(Matmuls, CudaCublasTest, ::testing::ValuesIn(CublasCases()),
                         [](const ::testing::TestParamInfo<CublasCase>& info) { return info.param.c.name; });

TEST(CudaCublasKernels, AreRegisteredForEveryTransposeCombination) {
  for (const char* name : {"kiln.cublas.gemm_nn", "kiln.cublas.gemm_nt", "kiln.cublas.gemm_tn", "kiln.cublas.gemm_tt"}) {
    const vm::BuiltinRegistry::LibraryKernel* k = builtins::DefaultRegistry().FindKernel(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->arg_signature, "ttt");
  }
}

// The library either opens or says in one line what was tried.
TEST(CudaCublasKernels, LoadingCublasSucceedsOrSaysWhy) {
  absl::StatusOr<const builtins::CublasLibrary*> lib = builtins::LoadCublas();
  if (lib.ok()) {
    EXPECT_FALSE((*lib)->path.empty());
    EXPECT_NE((*lib)->gemm_strided_batched_ex, nullptr);
    return;
  }
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(lib.status().message(), HasSubstr("cuBLAS"));
  EXPECT_EQ(std::string(lib.status().message()).find('\n'), std::string::npos);
}

// A cuBLAS-only executable run by a VM on the CPU: the call fails naming the kernel and the
// device it needs; nothing crashes and no GPU is touched.
TEST(CudaCublasKernels, OffACudaDeviceTheCallIsAClearError) {
  const std::vector<CublasCase> cases = CublasCases();
  const Case& c = cases[0].c;
  const GpuCompiled& compiled = CompiledWithCublas(c);
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  vm::VirtualMachine cpu(compiled.exe);
  vm::Tensor x = *vm::Tensor::Empty({3, 256}, DLDataType{kDLFloat, 32, 1});
  vm::Tensor w = *vm::Tensor::Empty({256, 128}, DLDataType{kDLFloat, 32, 1});
  absl::StatusOr<vm::Value> result = cpu.Invoke("main", {vm::Value(x), vm::Value(w)});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("kiln.cublas.gemm_nn runs on a CUDA device, not cpu"));
}

// kiln run --profile on the GPU: every kernel of the mixed function, generated and cuBLAS,
// is timed by CUDA events on the device's stream.
TEST(CudaCublasProfile, KernelsAndCublasCallsAreTimedWithEvents) {
  absl::StatusOr<vm::Device*> gpu = GpuWithCublas();
  if (!gpu.ok()) GTEST_SKIP() << "needs a CUDA GPU and cuBLAS: " << gpu.status().message();
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  absl::StatusOr<std::unique_ptr<vm::DeviceTimer>> timer = (*gpu)->CreateTimer();
  ASSERT_TRUE(timer.ok()) << timer.status();
  ASSERT_NE(*timer, nullptr) << "the CUDA device has no event timer";
  const std::vector<CublasCase> cases = CublasCases();
  const Case& mlp = cases.back().c;
  const GpuCompiled& compiled = CompiledWithCublas(mlp);
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> machine = vm::VirtualMachine::Create(compiled.exe, *gpu);
  ASSERT_TRUE(machine.ok()) << machine.status();
  (*machine)->EnableProfiling(true);
  std::mt19937 rng(7);
  std::vector<vm::Value> args;
  for (const Param& p : mlp.params) {
    absl::StatusOr<vm::Tensor> t = ToVm(RandomTensor(p, {{"n", 300}}, rng)).CopyTo(*gpu);
    ASSERT_TRUE(t.ok()) << t.status();
    args.emplace_back(*t);
  }
  constexpr int kRuns = 3;
  for (int i = 0; i < kRuns; ++i) ASSERT_TRUE((*machine)->Invoke("main", args).ok());
  const vm::VirtualMachine::Profile& profile = (*machine)->profile();
  const std::vector<vm::KernelDecl>& kernels = compiled.exe->contents().kernels;
  for (size_t k = 0; k < kernels.size(); ++k) {
    EXPECT_GE(profile.kernel_calls[k], kRuns) << kernels[k].name;
    EXPECT_GT(profile.kernel_ns[k], 0) << kernels[k].name;
    // 300 x 256 x 128 on a GPU: microseconds, never the seconds a broken timer would give.
    EXPECT_LT(profile.kernel_ns[k], 1'000'000'000) << kernels[k].name;
  }
}

TEST(CublasGpuBundle, WritesTheCublasCasesForTheGpuCheck) {
  const char* dir = std::getenv("KILN_CUBLAS_BUNDLE_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "set KILN_CUBLAS_BUNDLE_DIR to write the GPU check bundle";
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  std::vector<Case> cases;
  for (const CublasCase& cc : CublasCases()) cases.push_back(cc.c);
  WriteGpuBundle(dir, cases, CompiledWithCublas);
}

}  // namespace
}  // namespace kiln::op_cases
