// Llama-family models on GPUs: compiled for the vulkan or cuda target (the standard operators
// as device kernels, quantized weights read packed from device buffers, the paged KV cache
// and its attention on the host) and run through serving::LlmRunner as `kiln generate
// --device vulkan|cuda` runs them. They must give the greedy tokens of the same model
// compiled for the CPU with the same arithmetic (float32 activations, the compiled
// operators), and the tiny models' logits must stay near the float64 naive pass
// (tests/llm/naive_llama.h), the independent reference. Vulkan runs on Mesa's lavapipe in
// CI; CUDA compiles with NVRTC everywhere and runs where a GPU is present. Tests that need a
// device are skipped, saying so, without one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "formats/ggml_type.h"
#include "formats/gguf_file.h"
#include "relax/op/legalize_quantized_matmul_q8.h"
#include "serving/llm_runner.h"
#include "serving/tokenizer.h"
#include "support/file_io.h"
#include "tests/formats/tiny_llama_gguf.h"
#include "tests/llm/compile_test_model.h"
#include "tests/llm/llm_test_util.h"
#include "tests/llm/naive_llama.h"
#include "tests/model_path.h"
#include "codegen/nvrtc_compiler.h"
#include "support/mapped_file.h"
#include "tir/target.h"
#include "vm/cuda_device.h"
#include "vm/executable.h"
#include "vm/vulkan_device.h"

namespace kiln {
namespace {

using formats::testing::TinyLlamaSpec;
using llm_test::Greedy;
using llm_test::MaxAbs;
using llm_test::MaxAbsDiff;
using llm_test::Tokens;

#define KILN_REQUIRE_VULKAN()                                                      \
  if (absl::Status available = vm::VulkanAvailable(); !available.ok()) {          \
    GTEST_SKIP() << "no Vulkan device here: " << available.message();             \
  }

std::unique_ptr<serving::LlmRunner> Load(const std::string& kx, std::shared_ptr<const formats::GgufFile> gguf,
                                         bool kv_float32) {
  serving::LlmRunnerOptions options;
  options.kv_float32 = kv_float32;
  options.kv_cache_tokens = 256;
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> runner = serving::LlmRunner::Load(kx, std::move(gguf), options);
  EXPECT_TRUE(runner.ok()) << runner.status();
  return runner.ok() ? *std::move(runner) : nullptr;
}

// The model at `gguf_path` compiled for the CPU (float32 activations, the compiled operators)
// and for `target`, each loaded; after a failure (a test failure already) gpu is null.
struct CpuAndGpu {
  std::shared_ptr<const formats::GgufFile> gguf;
  std::unique_ptr<serving::LlmRunner> cpu, gpu;
};

CpuAndGpu CompileAndLoadBoth(const std::string& gguf_path, int64_t max_tokens, const tir::Target& target,
                             bool kv_float32, bool llama_cpp_numerics = false) {
  CpuAndGpu out;
  const std::string cpu_kx = llm_test::CompileTestModel(gguf_path, max_tokens, llama_cpp_numerics);
  const std::string gpu_kx = llm_test::CompileTestModel(gguf_path, max_tokens, llama_cpp_numerics, target);
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(gguf_path);
  EXPECT_TRUE(gguf.ok()) << gguf.status();
  if (cpu_kx.empty() || gpu_kx.empty() || !gguf.ok()) return out;
  out.gguf = *gguf;
  out.cpu = Load(cpu_kx, out.gguf, kv_float32);
  if (out.cpu != nullptr) out.gpu = Load(gpu_kx, out.gguf, kv_float32);
  return out;
}

void CheckTinyModelOnGpu(const TinyLlamaSpec& spec, const std::string& name, const tir::Target& target,
                         DLDeviceType device_type) {
  SCOPED_TRACE(name);
  const std::string path = ::testing::TempDir() + "/" + tir::TargetKindName(target.kind) + "_" + name + ".gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  CpuAndGpu both = CompileAndLoadBoth(path, /*max_tokens=*/64, target, /*kv_float32=*/true);
  ASSERT_NE(both.gpu, nullptr);
  serving::LlmRunner* cpu = both.cpu.get();
  serving::LlmRunner* gpu = both.gpu.get();
  const std::shared_ptr<const formats::GgufFile>& gguf = both.gguf;
  // The executable says where it runs: no device option needed.
  EXPECT_EQ(gpu->device()->dl_device().device_type, device_type);
  absl::StatusOr<test::NaiveLlama> naive = test::NaiveLlama::Load(*gguf, /*quantize_activations=*/false);
  ASSERT_TRUE(naive.ok()) << naive.status();

  // A prompt over several KV pages, then 12 greedy steps.
  const std::vector<int32_t> prompt = Tokens(37, static_cast<int>(spec.vocab), 1);
  std::vector<std::vector<float>> cpu_logits, gpu_logits;
  const std::vector<int32_t> cpu_tokens = Greedy(*cpu, 0, prompt, 12, &cpu_logits);
  const std::vector<int32_t> gpu_tokens = Greedy(*gpu, 0, prompt, 12, &gpu_logits);
  EXPECT_EQ(gpu_tokens, cpu_tokens);
  EXPECT_EQ(gpu_tokens, naive->Greedy(prompt, 12));
  ASSERT_EQ(gpu_logits.size(), cpu_logits.size());
  std::vector<int32_t> history = prompt;
  for (size_t i = 0; i < gpu_logits.size(); ++i) {
    const std::vector<float> want = naive->LastLogits(history);
    EXPECT_LE(MaxAbsDiff(gpu_logits[i], want), 1e-4 * (1 + MaxAbs(want))) << "step " << i << " against the naive pass";
    EXPECT_LE(MaxAbsDiff(gpu_logits[i], cpu_logits[i]), 1e-4 * (1 + MaxAbs(want))) << "step " << i << " against the CPU";
    history.push_back(gpu_tokens[i]);
  }

  // Two sequences of different lengths in one decode step (b = 2: the device copies of a
  // batch, ragged attention on the host).
  const std::vector<int32_t> other = Tokens(5, static_cast<int>(spec.vocab), 2);
  for (serving::LlmRunner* runner : {cpu, gpu}) {
    ASSERT_TRUE(runner->AddSequence(1).ok());
    ASSERT_TRUE(runner->Prefill(1, other).ok());
  }
  const int64_t ids[] = {0, 1};
  const int32_t tokens[] = {3, 4};
  absl::StatusOr<std::vector<std::vector<float>>> cpu_both = cpu->Decode(ids, tokens);
  absl::StatusOr<std::vector<std::vector<float>>> gpu_both = gpu->Decode(ids, tokens);
  ASSERT_TRUE(cpu_both.ok()) << cpu_both.status();
  ASSERT_TRUE(gpu_both.ok()) << gpu_both.status();
  for (int s = 0; s < 2; ++s) {
    EXPECT_LE(MaxAbsDiff((*gpu_both)[s], (*cpu_both)[s]), 1e-4 * (1 + MaxAbs((*cpu_both)[s]))) << "batched, sequence " << s;
  }
}

TEST(VulkanLlm, TinyModelsInEveryWeightFormatGiveTheCpusGreedyTokens) {
  KILN_REQUIRE_VULKAN();
  for (const auto& [name, spec] : llm_test::TinyModelsInEveryWeightFormat()) {
    CheckTinyModelOnGpu(spec, name, tir::Target::Vulkan(), kDLVulkan);
  }
  TinyLlamaSpec f16;  // float16 weights: 16-bit storage reads on the device
  f16.matmul_type = 1;
  f16.embed_type = 0;
  CheckTinyModelOnGpu(f16, "tiny_f16", tir::Target::Vulkan(), kDLVulkan);
}

// With llama.cpp's arithmetic (the default build: 8-bit activations in the quantized
// matmuls, ggml's RMSNorm, RoPE and SwiGLU) a GPU build computes the CPU's floats but for
// RoPE's cos and sin (the device's correctly rounded ones; the C library's sincosf the CPU
// build calls is one ulp away for about 1 % of angles, tests/codegen/ggml_numerics_ops_test):
// the same greedy tokens, and logits within a few float32 ulps of the CPU's (1.9e-6 at most
// measured on lavapipe), in every weight format.
void CheckTinyModelOnGpuAgainstDefaultBuild(const TinyLlamaSpec& spec, const std::string& name, const tir::Target& target) {
  SCOPED_TRACE(name);
  const std::string path =
      ::testing::TempDir() + "/" + tir::TargetKindName(target.kind) + "_llama_cpp_" + name + ".gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  CpuAndGpu both = CompileAndLoadBoth(path, /*max_tokens=*/64, target, /*kv_float32=*/false,
                                      /*llama_cpp_numerics=*/true);
  ASSERT_NE(both.gpu, nullptr);
  const std::vector<int32_t> prompt = Tokens(37, static_cast<int>(spec.vocab), 1);
  std::vector<std::vector<float>> cpu_logits, gpu_logits;
  const std::vector<int32_t> cpu_tokens = Greedy(*both.cpu, 0, prompt, 8, &cpu_logits);
  const std::vector<int32_t> gpu_tokens = Greedy(*both.gpu, 0, prompt, 8, &gpu_logits);
  EXPECT_EQ(gpu_tokens, cpu_tokens);
  ASSERT_EQ(gpu_logits.size(), cpu_logits.size());
  for (size_t i = 0; i < cpu_logits.size(); ++i) {
    EXPECT_LE(MaxAbsDiff(gpu_logits[i], cpu_logits[i]), 1e-5 * (1 + MaxAbs(cpu_logits[i]))) << "step " << i;
  }
}

// The Q5 and K-quant formats' 8-bit arithmetic is CPU-only: a GPU build computes their
// matmuls with float32 activations (CheckTinyModelOnGpu covers them against that CPU build).
bool GpuComputesTheDefaultBuildsArithmetic(const TinyLlamaSpec& spec) {
  const formats::GgmlType matmul = static_cast<formats::GgmlType>(spec.matmul_type);
  const bool quantized =
      matmul != formats::GgmlType::kF32 && matmul != formats::GgmlType::kF16 && matmul != formats::GgmlType::kBF16;
  return !quantized || relax::op::QuantizedMatmulQ8Generated(std::string(formats::GgmlTypeLayout(matmul).name));
}

TEST(VulkanLlm, TinyModelsWithLlamaCppArithmeticGiveTheDefaultCpuBuildsTokens) {
  KILN_REQUIRE_VULKAN();
  for (const auto& [name, spec] : llm_test::TinyModelsInEveryWeightFormat()) {
    if (!GpuComputesTheDefaultBuildsArithmetic(spec)) continue;
    CheckTinyModelOnGpuAgainstDefaultBuild(spec, name, tir::Target::Vulkan());
  }
}

// The acceptance line of issue 13: the bundled SmolLM2 gives the same greedy tokens on Vulkan
// as the default CPU build (llama.cpp's arithmetic on both: the q8 quantized matmuls and the
// numerics = "ggml" operators as device kernels, the attention on the host). Two short
// prompts of 8 tokens keep it near a minute on lavapipe (3.5 minutes for three at load 12;
// by hand: six prompts of 32 tokens and a chat turn, docs/llm.md). Their logits came out bit
// for bit equal to the CPU's; RoPE's cos and sin may differ by an ulp (see above), hence
// the bound.
TEST(VulkanLlm, BundledModelGivesTheDefaultCpuBuildsGreedyTokens) {
  KILN_REQUIRE_VULKAN();
  KILN_REQUIRE_BUNDLED_MODEL(path);
  const std::string copy = ::testing::TempDir() + "/vulkan_bundled.gguf";
  std::filesystem::remove(copy);
  std::filesystem::create_symlink(path, copy);
  CpuAndGpu both = CompileAndLoadBoth(copy, /*max_tokens=*/32, tir::Target::Vulkan(), /*kv_float32=*/false,
                                      /*llama_cpp_numerics=*/true);
  ASSERT_NE(both.gpu, nullptr);
  absl::StatusOr<std::shared_ptr<const serving::Tokenizer>> tokenizer = serving::Tokenizer::FromGguf(*both.gguf);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  int64_t sequence = 0;
  double max_diff = 0;
  for (const char* text : {"The capital of France is", "def fibonacci(n):"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<int32_t>> prompt = (*tokenizer)->Encode(text);
    ASSERT_TRUE(prompt.ok()) << prompt.status();
    std::vector<std::vector<float>> cpu_logits, gpu_logits;
    const std::vector<int32_t> cpu_tokens = Greedy(*both.cpu, sequence, *prompt, 8, &cpu_logits);
    const std::vector<int32_t> gpu_tokens = Greedy(*both.gpu, sequence, *prompt, 8, &gpu_logits);
    ++sequence;
    ASSERT_EQ(cpu_tokens.size(), 8u);
    EXPECT_EQ(gpu_tokens, cpu_tokens);
    for (size_t i = 0; i < std::min(gpu_logits.size(), cpu_logits.size()); ++i) {
      // As for the tiny models: RoPE's cos and sin alone differ (by an ulp, now and then).
      EXPECT_LE(MaxAbsDiff(gpu_logits[i], cpu_logits[i]), 1e-3 * (1 + MaxAbs(cpu_logits[i]))) << "step " << i;
      max_diff = std::max(max_diff, MaxAbsDiff(gpu_logits[i], cpu_logits[i]));
    }
  }
  std::printf("bundled model on Vulkan: largest logit difference from the default CPU build %g\n", max_diff);
}

// An executable runs where it was compiled for; anything else is one clear error, whether or
// not this machine has the device.
TEST(VulkanLlm, AnExecutableForAnotherDeviceIsRefusedNamingBoth) {
  TinyLlamaSpec spec;
  const std::string path = ::testing::TempDir() + "/vulkan_wrong_device.gguf";
  ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
  const std::string gpu_kx = llm_test::CompileTestModel(path, 16, false, tir::Target::Vulkan());
  const std::string cpu_kx = llm_test::CompileTestModel(path, 16, false);
  ASSERT_FALSE(gpu_kx.empty());
  ASSERT_FALSE(cpu_kx.empty());
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  serving::LlmRunnerOptions on_cpu;
  on_cpu.device = "cpu";
  absl::StatusOr<std::unique_ptr<serving::LlmRunner>> refused = serving::LlmRunner::Load(gpu_kx, *gguf, on_cpu);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("was compiled for vulkan, not for cpu: compile the model with --target cpu"));
  serving::LlmRunnerOptions on_vulkan;
  on_vulkan.device = "vulkan";
  refused = serving::LlmRunner::Load(cpu_kx, *gguf, on_vulkan);
  ASSERT_FALSE(refused.ok());
  if (vm::VulkanAvailable().ok()) {
    EXPECT_THAT(std::string(refused.status().message()),
                ::testing::HasSubstr("was compiled for cpu, not for vulkan: compile the model with --target vulkan"));
  } else {
    EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("Vulkan"));
  }
}

// The same compile for CUDA: every kernel of the model through NVRTC to PTX and cubin for
// sm_80 and sm_90 (what a GPU machine loads), here without a GPU.
TEST(CudaLlm, TinyModelsCompileWithNvrtcForSm80AndSm90) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  // The bundled model's formats, and qwen2 in q8_0 (biases, RoPE on halves).
  // Both arithmetics: float32 activations and the standard operators, and llama.cpp's (the
  // q8 quantized matmuls and the numerics = "ggml" operators).
  for (const auto& [name, spec] : llm_test::TinyModelsInEveryWeightFormat()) {
    for (bool llama_cpp_numerics : {false, true}) {
      if (name != "tiny_q4_1" && name != "tiny_qwen2_q8_0") continue;
      SCOPED_TRACE(name + (llama_cpp_numerics ? " llama.cpp arithmetic" : " float32 activations"));
      const std::string path = ::testing::TempDir() + "/cuda_compile_" + name + ".gguf";
      ASSERT_TRUE(support::WriteFile(path, formats::testing::TinyLlamaGguf(spec)).ok());
      const std::string kx = llm_test::CompileTestModel(path, 64, llama_cpp_numerics, tir::Target::Cuda());
      ASSERT_FALSE(kx.empty());
      absl::StatusOr<std::shared_ptr<const support::MappedFile>> image = support::MappedFile::Open(kx);
      ASSERT_TRUE(image.ok()) << image.status();
      absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*image);
      ASSERT_TRUE(contents.ok()) << contents.status();
      ASSERT_EQ(contents->device_code.size(), 1u);
      const vm::DeviceCode& code = contents->device_code[0];
      EXPECT_EQ(code.kind, "cuda");
      // The quantized matmuls, norms, RoPE and SwiGLU are all device kernels.
      std::string names;
      for (const vm::DeviceKernelInfo& k : code.kernels) names += k.name + " ";
      EXPECT_THAT(names, ::testing::HasSubstr("quantized_matmul"));
      EXPECT_THAT(names, ::testing::HasSubstr("rms_norm"));
      EXPECT_THAT(names, ::testing::HasSubstr("rotary_embedding"));
      EXPECT_THAT(names, ::testing::HasSubstr("silu"));
      std::map<std::string, int> formats;
      for (const vm::DeviceBinary& b : code.binaries) {
        formats[b.format + " " + b.arch]++;
        EXPECT_FALSE(b.bytes.empty());
      }
      EXPECT_EQ(formats, (std::map<std::string, int>{{"cubin sm_80", 1}, {"cubin sm_90", 1}, {"ptx sm_80", 1},
                                                     {"ptx sm_90", 1}}));
    }
  }
}

TEST(CudaLlm, TinyModelsInEveryWeightFormatGiveTheCpusGreedyTokensOnAGpu) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  if (absl::Status driver = vm::CudaDriverAvailable(); !driver.ok()) GTEST_SKIP() << "no GPU here: " << driver.message();
  if (absl::StatusOr<vm::Device*> gpu = vm::GetDevice("cuda:0"); !gpu.ok()) GTEST_SKIP() << gpu.status().message();
  for (const auto& [name, spec] : llm_test::TinyModelsInEveryWeightFormat()) {
    CheckTinyModelOnGpu(spec, name, tir::Target::Cuda(), kDLCUDA);
  }
  TinyLlamaSpec f16;
  f16.matmul_type = 1;
  f16.embed_type = 0;
  CheckTinyModelOnGpu(f16, "tiny_f16", tir::Target::Cuda(), kDLCUDA);
}

TEST(CudaLlm, TinyModelsWithLlamaCppArithmeticGiveTheDefaultCpuBuildsTokensOnAGpu) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  if (absl::Status driver = vm::CudaDriverAvailable(); !driver.ok()) GTEST_SKIP() << "no GPU here: " << driver.message();
  if (absl::StatusOr<vm::Device*> gpu = vm::GetDevice("cuda:0"); !gpu.ok()) GTEST_SKIP() << gpu.status().message();
  for (const auto& [name, spec] : llm_test::TinyModelsInEveryWeightFormat()) {
    if (!GpuComputesTheDefaultBuildsArithmetic(spec)) continue;
    CheckTinyModelOnGpuAgainstDefaultBuild(spec, name, tir::Target::Cuda());
  }
}

}  // namespace
}  // namespace kiln
