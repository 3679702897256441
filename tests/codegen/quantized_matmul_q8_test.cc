// quantized_matmul with activations="q8" (relax/op/legalize_quantized_matmul_q8.cc): the
// generated kernel on the CPU, on Vulkan (lavapipe in CI; skipped, saying so, without a
// Vulkan device) and the CPU library kernel (kiln.cpu.quantized_matmul_*) must all give the
// bits of a naive quantize-then-dot written here from llama.cpp's definition: per block of
// 32, amax, d = amax / 127, q = round-half-even(x * 127 / amax), d (and Q8_1's s = d * sum q)
// stored as float16; per output 8 lanes of 4 integer products, each lane accumulated over
// the blocks with one fma by (weight d * activation d), the lanes summed (l0+l4 + l2+l6) +
// (l1+l5 + l3+l7), Q4_1's fma chain of m * s added last. Rows holding an inf or NaN must
// give what float32 activations give: an inf of the same sign or a NaN. The CUDA kernels
// must compile with NVRTC (sm_80 and sm_90).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "codegen/nvrtc_compiler.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/float16.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/spirv_tools.h"
#include "tir/target.h"
#include "vm/device.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"
#include "vm/vulkan_device.h"

namespace kiln {
namespace {

struct Format {
  std::string name;
  int block_bytes;
};
const Format kQ4_0{"q4_0", 18}, kQ4_1{"q4_1", 20}, kQ8_0{"q8_0", 34};

float Half(float v) { return support::HalfToFloat(support::FloatToHalf(v)); }

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = support::FloatToHalf(v);
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}

float GetHalf(const uint8_t* p) { return support::HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// Weight j (0..31) of a block as its integer quant.
int Quant(const Format& f, const uint8_t* block, int j) {
  if (f.name == "q8_0") return static_cast<int8_t>(block[2 + j]);
  const int first = f.name == "q4_1" ? 4 : 2;
  const int nibble = j < 16 ? block[first + j] & 15 : block[first + j - 16] >> 4;
  return f.name == "q4_1" ? nibble : nibble - 8;
}

float Decoded(const Format& f, const uint8_t* block, int j) {
  float w = static_cast<float>(Quant(f, block, j)) * GetHalf(block);
  return f.name == "q4_1" ? w + GetHalf(block + 2) : w;
}

// The naive reference: one row of x (k floats) times one weight row.
float NaiveDot(const Format& f, const float* x, const uint8_t* w, int64_t k) {
  const int64_t blocks = k / 32;
  bool finite = true;
  for (int64_t i = 0; i < k; ++i) finite = finite && std::isfinite(x[i]);
  if (!finite) {
    float sum = 0;  // float32 activations: only whether and how it is inf or NaN is compared
    for (int64_t i = 0; i < k; ++i) sum += x[i] * Decoded(f, w + (i / 32) * f.block_bytes, static_cast<int>(i % 32));
    return sum;
  }
  float lanes[8] = {};
  float mins = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * 32;
    const uint8_t* wb = w + b * f.block_bytes;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float inverse = amax != 0 ? 127.0f / amax : 0.0f;
    int q[32];
    int qsum = 0;
    for (int j = 0; j < 32; ++j) {
      q[j] = static_cast<int>(std::nearbyint(xb[j] * inverse));
      qsum += q[j];
    }
    const float scale = GetHalf(wb) * Half(d);
    for (int l = 0; l < 8; ++l) {
      int isum = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) isum += Quant(f, wb, j) * q[j];
      lanes[l] = std::fma(scale, static_cast<float>(isum), lanes[l]);
    }
    if (f.name == "q4_1") mins = std::fma(GetHalf(wb + 2), Half(d * static_cast<float>(qsum)), mins);
  }
  const float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  return f.name == "q4_1" ? sum + mins : sum;
}

struct Problem {
  int64_t rows, n, k;
  std::vector<float> x;
  std::vector<uint8_t> w;
};

// Random activations of mixed magnitudes with a zero block, and where `specials`, a row
// holding +inf, one holding -inf and +inf, and one holding a NaN; weights of random quants
// with float16 scales (and q4_1 minimums) of both signs, some zero.
Problem MakeProblem(const Format& f, int64_t rows, int64_t n, int64_t k, bool specials, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  Problem p{rows, n, k, std::vector<float>(static_cast<size_t>(rows * k)), std::vector<uint8_t>(static_cast<size_t>(n * k / 32 * f.block_bytes))};
  for (int64_t r = 0; r < rows; ++r) {
    const float magnitude = std::ldexp(1.0f, static_cast<int>(r % 7) * 3 - 9);
    for (int64_t i = 0; i < k; ++i) p.x[static_cast<size_t>(r * k + i)] = unit(rng) * magnitude;
  }
  if (rows > 1) std::fill(p.x.begin() + k, p.x.begin() + k + 32, 0.0f);  // row 1's first block: amax 0
  if (specials && rows >= 5) {
    p.x[static_cast<size_t>(2 * k + 5)] = std::numeric_limits<float>::infinity();
    p.x[static_cast<size_t>(3 * k + 1)] = -std::numeric_limits<float>::infinity();
    p.x[static_cast<size_t>(3 * k + k - 1)] = std::numeric_limits<float>::infinity();
    p.x[static_cast<size_t>(4 * k + 40)] = std::numeric_limits<float>::quiet_NaN();
  }
  for (uint8_t& b : p.w) b = static_cast<uint8_t>(byte(rng));
  for (int64_t block = 0; block < n * k / 32; ++block) {
    uint8_t* wb = p.w.data() + block * f.block_bytes;
    PutHalf(wb, block % 11 == 3 ? 0.0f : unit(rng) * 0.05f);
    if (f.name == "q4_1") PutHalf(wb + 2, unit(rng) * 0.1f);
  }
  return p;
}

std::string ModuleText(const Format& f, int64_t k) {
  return absl::StrCat("module {\n  func @main(x: Tensor((n, ", k, "), float32), w: Tensor((m, ", k / 32 * f.block_bytes,
                      "), uint8)) -> Object {\n    r = R.quantized_matmul(x, w, format=\"", f.name,
                      "\", activations=\"q8\")\n    return r\n  }\n}\n");
}

// The module compiled for the host CPU, with the quantized matmul generated or as the
// library kernel.
absl::StatusOr<std::shared_ptr<const vm::Executable>> CompileForCpu(const std::string& text, bool library) {
  return op_cases::CompileForHostCpu(text, library);
}

absl::StatusOr<std::vector<float>> Run(const std::shared_ptr<const vm::Executable>& exe, vm::Device* device,
                                       const Problem& p, const Format& f) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<vm::VirtualMachine> machine, vm::VirtualMachine::Create(exe, device));
  KILN_ASSIGN_OR_RETURN(vm::Tensor x, vm::Tensor::Empty({p.rows, p.k}, DLDataType{kDLFloat, 32, 1}));
  KILN_ASSIGN_OR_RETURN(vm::Tensor w, vm::Tensor::Empty({p.n, p.k / 32 * f.block_bytes}, DLDataType{kDLUInt, 8, 1}));
  std::memcpy(x.data(), p.x.data(), p.x.size() * sizeof(float));
  std::memcpy(w.data(), p.w.data(), p.w.size());
  KILN_ASSIGN_OR_RETURN(vm::Tensor xd, x.CopyTo(device));
  KILN_ASSIGN_OR_RETURN(vm::Tensor wd, w.CopyTo(device));
  KILN_ASSIGN_OR_RETURN(vm::Value result, machine->Invoke("main", {vm::Value(xd), vm::Value(wd)}));
  KILN_ASSIGN_OR_RETURN(vm::Tensor host, result.as_tensor().CopyTo(vm::CpuDevice()));
  const float* data = static_cast<const float*>(host.data());
  return std::vector<float>(data, data + p.rows * p.n);
}

// Every output against the naive reference: the same bits where the row is finite, the same
// inf or a NaN where it is not. Returns the number of finite outputs compared.
int64_t ExpectNaiveBits(const std::vector<float>& out, const Problem& p, const Format& f, const std::string& where) {
  int64_t finite = 0, mismatches = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t c = 0; c < p.n; ++c) {
      const float expected = NaiveDot(f, p.x.data() + r * p.k, p.w.data() + c * (p.k / 32 * f.block_bytes), p.k);
      const float got = out[static_cast<size_t>(r * p.n + c)];
      bool same;
      if (std::isnan(expected)) {
        same = std::isnan(got);
      } else {
        same = std::memcmp(&expected, &got, sizeof(float)) == 0;
        finite += std::isfinite(expected);
      }
      if (!same && ++mismatches <= 5) {
        ADD_FAILURE() << where << " " << f.name << " row " << r << " column " << c << ": expected " << expected
                      << ", got " << got;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << where << " " << f.name;
  return finite;
}

const Format kFormats[] = {kQ4_0, kQ4_1, kQ8_0};

void CheckOn(vm::Device* device, const std::string& where,
             const std::function<absl::StatusOr<std::shared_ptr<const vm::Executable>>(const std::string&)>& compile) {
  for (const Format& f : kFormats) {
    for (int64_t k : {int64_t{96}, int64_t{576}}) {
      absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = compile(ModuleText(f, k));
      ASSERT_TRUE(exe.ok()) << where << " " << f.name << ": " << exe.status();
      for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 37}, {7, 5}}) {
        const Problem p = MakeProblem(f, rows, n, k, /*specials=*/rows >= 5, static_cast<uint32_t>(rows * 1000 + k));
        absl::StatusOr<std::vector<float>> out = Run(*exe, device, p, f);
        ASSERT_TRUE(out.ok()) << where << " " << f.name << ": " << out.status();
        EXPECT_GT(ExpectNaiveBits(*out, p, f, absl::StrCat(where, " k=", k, " rows=", rows)), 0);
      }
    }
  }
}

TEST(QuantizedMatmulQ8Test, GeneratedCpuKernelGivesTheNaiveBits) {
  CheckOn(vm::CpuDevice(), "cpu generated",
          [](const std::string& text) { return CompileForCpu(text, /*library=*/false); });
}

TEST(QuantizedMatmulQ8Test, CpuLibraryKernelGivesTheNaiveBits) {
  CheckOn(vm::CpuDevice(), "cpu library",
          [](const std::string& text) { return CompileForCpu(text, /*library=*/true); });
}

TEST(QuantizedMatmulQ8Test, VulkanKernelGivesTheNaiveBits) {
  if (absl::Status available = vm::VulkanAvailable(); !available.ok()) {
    GTEST_SKIP() << "no Vulkan device here: " << available.message();
  }
  absl::StatusOr<vm::Device*> device = vm::GetDevice("vulkan:0");
  ASSERT_TRUE(device.ok()) << device.status();
  CheckOn(*device, "vulkan", [](const std::string& text) -> absl::StatusOr<std::shared_ptr<const vm::Executable>> {
    KILN_ASSIGN_OR_RETURN(std::string bytes, op_cases::CompileForGpu(text, tir::Target::Vulkan()));
    return vm::Executable::Load(bytes, builtins::DefaultRegistry());
  });
}

TEST(QuantizedMatmulQ8Test, SpirvValAcceptsTheVulkanKernels) {
  if (!op_cases::HaveSpirvTools()) GTEST_SKIP() << "spirv-val / spirv-dis not found (Debian spirv-tools)";
  for (const Format& f : kFormats) {
    absl::StatusOr<std::string> bytes = op_cases::CompileForGpu(ModuleText(f, 96), tir::Target::Vulkan());
    ASSERT_TRUE(bytes.ok()) << f.name << ": " << bytes.status();
    absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
    ASSERT_TRUE(exe.ok()) << exe.status();
    op_cases::Tool val = op_cases::ValidateExecutable("quantized_matmul_q8_" + f.name, **exe);
    EXPECT_EQ(val.exit_code, 0) << f.name << ": " << val.output;
  }
}

TEST(QuantizedMatmulQ8Test, CudaKernelsCompileWithNvrtcForSm80AndSm90) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  for (const Format& f : kFormats) {
    absl::StatusOr<std::string> bytes = op_cases::CompileForGpu(ModuleText(f, 96), tir::Target::Cuda());
    EXPECT_TRUE(bytes.ok()) << f.name << ": " << bytes.status();
  }
}

TEST(QuantizedMatmulQ8Test, AnUnknownActivationsValueIsAnError) {
  std::string text = ModuleText(kQ4_0, 96);
  text.replace(text.find("\"q8\""), 4, "\"int4\"");
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = CompileForCpu(text, false);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("activations must be \"float32\" or \"q8\""), std::string::npos)
      << exe.status();
}

// The Q5 and K-quant formats have CPU library kernels only: generating their 8-bit kernel is
// an error naming the format, not a kernel that reads the blocks as another format.
TEST(QuantizedMatmulQ8Test, AFormatWithoutAGeneratedKernelIsAnError) {
  const std::string text =
      "module {\n  func @main(x: Tensor((n, 64), float32), w: Tensor((m, 44), uint8)) -> Object {\n"
      "    r = R.quantized_matmul(x, w, format=\"q5_0\", activations=\"q8\")\n    return r\n  }\n}\n";
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = CompileForCpu(text, false);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("no generated kernel for q5_0 weights"), std::string::npos) << exe.status();
}

}  // namespace
}  // namespace kiln
