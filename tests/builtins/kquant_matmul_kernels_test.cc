// The kiln.cpu.quantized_matmul_{q5_0,q5_1,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_xs} library kernels (and their _f32x_,
// _by_block_ and _tiled_ variants) through the kernel ABI: float32 activations against the weights decoded by a
// naive float64 loop written here (tests/builtins/kquant_block_dot_test.cc checks the
// quantized arithmetic bit for bit; here the whole kernel: rows, columns, tasks, non-finite
// rows), and a clear error for mismatched shapes.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "builtins/default_builtins.h"
#include "builtins/ggml_row_decode.h"
#include "builtins/ggml_simd.h"
#include "builtins/kquant_block_dot.h"
#include "gtest/gtest.h"

namespace kiln::builtins {
namespace {

struct Ctx : KilnCallContext {
  std::string error;
};

void SetError(KilnCallContext* ctx, const char* message) { static_cast<Ctx*>(ctx)->error = message; }

int32_t SerialFor(KilnCallContext*, int64_t num_tasks, KilnParallelBody body, void* closure) {
  for (int64_t t = 0; t < num_tasks; ++t) {
    if (int32_t rc = body(t, num_tasks, closure)) return rc;
  }
  return 0;
}

template <typename T>
DLTensor View(std::vector<T>& data, std::vector<int64_t>& shape, DLDataType dtype) {
  DLTensor t{};
  t.data = data.data();
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  return t;
}

int32_t Call(const std::string& name, DLTensor& x, DLTensor& w, DLTensor& out, std::string* error) {
  const vm::BuiltinRegistry::LibraryKernel* k = DefaultRegistry().FindKernel(name);
  EXPECT_NE(k, nullptr) << name;
  if (k == nullptr) return -1;
  Ctx ctx{};
  ctx.set_error = SetError;
  ctx.parallel_for = SerialFor;
  ctx.num_threads = 3;
  KilnArg args[3];
  DLTensor* tensors[3] = {&x, &w, &out};
  for (int i = 0; i < 3; ++i) {
    args[i].value.tensor = tensors[i];
    args[i].type_code = kKilnArgTensor;
  }
  const int32_t rc = k->fn(args, 3, &ctx);
  *error = ctx.error;
  return rc;
}

// Weight j of a row, decoded naively from the block definitions (see relax/op/quantize.cc).
double NaiveWeight(const std::string& format, const uint8_t* row, int64_t j) {
  auto half = [](const uint8_t* p) {
    const int h = p[0] | p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
    const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
  };
  if (format == "q5_0" || format == "q5_1") {
    const bool q5_1 = format == "q5_1";
    const uint8_t* p = row + (j / 32) * (q5_1 ? 24 : 22);
    const uint8_t* fifth = p + (q5_1 ? 4 : 2);
    const int i = static_cast<int>(j % 32);
    const int q = (i < 16 ? fifth[4 + i] & 15 : fifth[4 + i - 16] >> 4) + 16 * ((fifth[i / 8] >> (i % 8)) & 1);
    return q5_1 ? half(p) * q + half(p + 2) : half(p) * (q - 16);
  }
  const int e = static_cast<int>(j % 256);
  if (format == "q2_K") {
    const uint8_t* p = row + (j / 256) * 84;
    const int q = (p[16 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    return half(p + 80) * (p[e / 16] & 15) * q - half(p + 82) * (p[e / 16] >> 4);
  }
  if (format == "q6_K") {
    const uint8_t* p = row + (j / 256) * 210;
    const int c = e / 128, part = (e % 128) / 32, l = e % 32;
    const int low = (p[64 * c + 32 * (part % 2) + l] >> (4 * (part / 2))) & 15;
    const int high = (p[128 + 32 * c + l] >> (2 * part)) & 3;
    return half(p + 208) * static_cast<int8_t>(p[192 + e / 16]) * ((low | high << 4) - 32);
  }
  if (format == "iq4_xs") {
    static constexpr int kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const uint8_t* p = row + (j / 256) * 136;
    const int g = e / 32, l = e % 32;
    const int scale = (((p[4 + g / 2] >> (4 * (g % 2))) & 15) | ((((p[2] | p[3] << 8) >> (2 * g)) & 3) << 4)) - 32;
    const uint8_t byte = p[8 + 16 * g + l % 16];
    return half(p) * scale * kValues[l < 16 ? byte & 15 : byte >> 4];
  }
  if (format == "q3_K") {
    const uint8_t* p = row + (j / 256) * 110;
    const int i = e / 16;  // scale i: a nibble of byte i % 8, two bits of byte 8 + i % 4
    const int scale = (((p[96 + i % 8] >> (4 * (i / 8))) & 15) | (((p[104 + i % 4] >> (2 * (i / 4))) & 3) << 4)) - 32;
    const int n = e / 128, part = (e % 128) / 32, l = e % 32;
    const int low = (p[32 + 32 * n + l] >> (2 * part)) & 3;
    return half(p + 108) * scale * (((p[l] >> (4 * n + part)) & 1) ? low : low - 4);
  }
  const bool q5 = format == "q5_K";
  const uint8_t* p = row + (j / 256) * (q5 ? 176 : 144);
  const int g = e / 32, l = e % 32;
  const int scale = g < 4 ? p[4 + g] & 63 : (p[8 + g] & 15) | (p[g] >> 6) << 4;
  const int min = g < 4 ? p[8 + g] & 63 : (p[8 + g] >> 4) | (p[4 + g] >> 6) << 4;
  int q = (p[(q5 ? 48 : 16) + 32 * (g / 2) + l] >> (4 * (g % 2))) & 15;
  if (q5) q += 16 * ((p[16 + l] >> g) & 1);
  return half(p) * scale * q - half(p + 2) * min;
}

struct FormatCase {
  std::string name;
  int64_t block_weights, block_bytes;
};

const FormatCase kFormats[] = {{"q5_0", 32, 22},   {"q5_1", 32, 24},   {"q4_K", 256, 144},
                               {"q5_K", 256, 176}, {"q6_K", 256, 210}, {"q3_K", 256, 110},
                               {"iq4_xs", 256, 136}, {"q2_K", 256, 84}};

// Random weights whose float16 parameters are modest (every parameter's high byte below 0x20).
std::vector<uint8_t> RandomWeights(const FormatCase& f, int64_t n, int64_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255), high(0, 0x1f);
  std::vector<uint8_t> w(static_cast<size_t>(n * k / f.block_weights * f.block_bytes));
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (size_t b = 0; b < w.size() / f.block_bytes; ++b) {
    uint8_t* p = w.data() + b * f.block_bytes;
    if (f.name == "q6_K" || f.name == "q3_K") {
      p[f.block_bytes - 1] = static_cast<uint8_t>(high(rng));
    } else if (f.name == "q2_K") {
      p[81] = static_cast<uint8_t>(high(rng)), p[83] = static_cast<uint8_t>(high(rng));
    } else {
      p[1] = static_cast<uint8_t>(high(rng));
      if (f.name != "q5_0") p[3] = static_cast<uint8_t>(high(rng));
    }
  }
  return w;
}

TEST(KQuantMatmulKernels, EveryFormatMatchesTheDecodedWeightsForManyRows) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const FormatCase& f : kFormats) {
    const int64_t k = 512;
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 13}, {5, 13}, {37, 13}, {1031, 3}}) {
      std::vector<uint8_t> w = RandomWeights(f, n, k, rng);
      std::vector<float> x(static_cast<size_t>(rows * k)), out(static_cast<size_t>(rows * n));
      for (auto& v : x) v = normal(rng);
      x[3] = std::numeric_limits<float>::infinity();  // row 0 is computed with float activations
      std::vector<int64_t> xs = {rows, k}, ws = {n, static_cast<int64_t>(w.size()) / n}, os = {rows, n};
      DLTensor xt = View(x, xs, {kDLFloat, 32, 1}), wt = View(w, ws, {kDLUInt, 8, 1}), ot = View(out, os, {kDLFloat, 32, 1});
      for (const char* prefix : {"kiln.cpu.quantized_matmul_", "kiln.cpu.quantized_matmul_f32x_"}) {
        SCOPED_TRACE(::testing::Message() << prefix << f.name << " rows " << rows);
        std::string error;
        ASSERT_EQ(Call(prefix + f.name, xt, wt, ot, &error), 0) << error;
        const bool quantized = std::string(prefix).find("f32x") == std::string::npos;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < n; ++c) {
            double want = 0, magnitude = 0;
            for (int64_t j = 0; j < k; ++j) {
              const double term = NaiveWeight(f.name, w.data() + c * ws[1], j) * x[r * k + j];
              want += term;
              magnitude += std::fabs(term);
            }
            const float got = out[r * n + c];
            if (r == 0) {
              EXPECT_TRUE(std::isinf(got) || std::isnan(got)) << "row 0 holds an inf: " << got;
              continue;
            }
            // Quantized activations move a result by about 1% of its terms' magnitude; float32
            // activations by float32 rounding.
            EXPECT_NEAR(got, want, (quantized ? 0.02 : 1e-6) * magnitude + 1e-6) << "row " << r << " column " << c;
          }
        }
      }
    }
  }
}

// The _by_block_ and _tiled_ kernels pick llama.cpp's order for each row from the call's row
// count: repacked Q4_K takes the first n - n % 4 rows (n > 3) in its GEMM's order, the rest
// in its GEMV's; the tiled kernel takes all rows in its order when n >= 8, else vec_dot's.
// Each row must equal DotQ8KRows in that order (checked bit for bit against naive loops in
// kquant_block_dot_test.cc) on the row's own Q8_K blocks.
// llama.cpp repacks Q2_K only in its AVX-512 build; by_block_q2_K follows the arithmetic
// chosen (builtins/ggml_simd.h): the repacked orders for AVX-512, the tiled kernel's for AVX2.
TEST(KQuantMatmulKernels, ByBlockAndTiledKernelsChooseLlamaCppsOrderByRowCount) {
  const GgmlSimd active = ActiveGgmlSimd();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t k = 768, n = 16;
  struct KernelCase {
    const char* name;
    FormatCase format;
    KQuantFormat kquant;
    bool by_block;
    GgmlSimd simd = GgmlSimd::kAvx512;
  };
  const KernelCase cases[] = {{"kiln.cpu.quantized_matmul_by_block_q4_K", kFormats[2], KQuantFormat::kQ4_K, true},
                              {"kiln.cpu.quantized_matmul_tiled_q4_K", kFormats[2], KQuantFormat::kQ4_K, false},
                              {"kiln.cpu.quantized_matmul_tiled_q5_K", kFormats[3], KQuantFormat::kQ5_K, false},
                              {"kiln.cpu.quantized_matmul_tiled_q6_K", kFormats[4], KQuantFormat::kQ6_K, false},
                              {"kiln.cpu.quantized_matmul_tiled_q3_K", kFormats[5], KQuantFormat::kQ3_K, false},
                              {"kiln.cpu.quantized_matmul_tiled_iq4_xs", kFormats[6], KQuantFormat::kIQ4_XS, false},
                              {"kiln.cpu.quantized_matmul_tiled_q2_K", kFormats[7], KQuantFormat::kQ2_K, false},
                              {"kiln.cpu.quantized_matmul_by_block_q2_K", kFormats[7], KQuantFormat::kQ2_K, true},
                              {"kiln.cpu.quantized_matmul_by_block_q2_K", kFormats[7], KQuantFormat::kQ2_K, false,
                               GgmlSimd::kAvx2}};
  for (const KernelCase& kc : cases) {
    SetGgmlSimd(kc.simd);
    for (int64_t rows : {1, 3, 4, 7, 8, 9, 14}) {
      SCOPED_TRACE(::testing::Message() << kc.name << " rows " << rows << " " << GgmlSimdName(kc.simd));
      std::vector<uint8_t> w = RandomWeights(kc.format, n, k, rng);
      std::vector<float> x(static_cast<size_t>(rows * k)), out(static_cast<size_t>(rows * n));
      for (auto& v : x) v = normal(rng);
      std::vector<int64_t> xs = {rows, k}, ws = {n, static_cast<int64_t>(w.size()) / n}, os = {rows, n};
      DLTensor xt = View(x, xs, {kDLFloat, 32, 1}), wt = View(w, ws, {kDLUInt, 8, 1}), ot = View(out, os, {kDLFloat, 32, 1});
      std::string error;
      ASSERT_EQ(Call(kc.name, xt, wt, ot, &error), 0) << error;
      for (int64_t r = 0; r < rows; ++r) {
        KQuantSummation order = KQuantSummation::kLanes;
        if (kc.by_block) {
          const KQuantSummation gemm =
              kc.kquant == KQuantFormat::kQ2_K ? KQuantSummation::kBlockHalves : KQuantSummation::kBlockQuarters;
          order = rows > 3 && r < rows - rows % 4 ? gemm : KQuantSummation::kBlocks;
        } else if (rows >= 8) {
          order = KQuantSummation::kTiles;
        }
        std::vector<Q8KBlock> q(static_cast<size_t>(k / 256));
        QuantizeRowQ8K(x.data() + r * k, k, q.data());
        for (int64_t c = 0; c < n; ++c) {
          float want = 0;
          DotQ8KRows(kc.kquant, order, w.data() + c * ws[1], q.data(), k / 256, 1, &want, 1, Q8Isa::kScalar);
          ASSERT_EQ(out[r * n + c], want) << "row " << r << " column " << c << " order " << static_cast<int>(order);
        }
      }
    }
  }
  SetGgmlSimd(active);
}

TEST(KQuantMatmulKernels, MismatchedShapesAreRefusedClearly) {
  std::vector<float> x(300), out(2);
  std::vector<uint8_t> w(2 * 144);
  std::vector<int64_t> xs = {1, 300}, ws = {2, 144}, os = {1, 2};
  DLTensor xt = View(x, xs, {kDLFloat, 32, 1}), wt = View(w, ws, {kDLUInt, 8, 1}), ot = View(out, os, {kDLFloat, 32, 1});
  std::string error;
  EXPECT_NE(Call("kiln.cpu.quantized_matmul_q4_K", xt, wt, ot, &error), 0);
  EXPECT_NE(error.find("k must be a multiple of 256"), std::string::npos) << error;
}

}  // namespace
}  // namespace kiln::builtins
