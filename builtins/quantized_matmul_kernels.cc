#include "builtins/quantized_matmul_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "builtins/q8_block_dot.h"
#include "builtins/quantized_matmul_operands.h"
#include "support/float16.h"

namespace kiln::builtins {

namespace {

using support::HalfToFloat;

enum class Format { kQ4_0, kQ4_1, kQ8_0, kIQ4_NL };

constexpr int64_t kBlock = 32;

int64_t BlockBytes(Format f) { return f == Format::kQ4_1 ? 20 : f == Format::kQ8_0 ? 34 : 18; }
const char* FormatName(Format f) {
  switch (f) {
    case Format::kQ4_0: return "q4_0";
    case Format::kQ4_1: return "q4_1";
    case Format::kQ8_0: return "q8_0";
    case Format::kIQ4_NL: return "iq4_nl";
  }
  return "?";
}

uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// --- decoding one weight row of `blocks` blocks into float32 ---

void DecodeRowScalar(Format f, const uint8_t* row, int64_t blocks, float* out) {
  for (int64_t b = 0; b < blocks; ++b, row += BlockBytes(f), out += kBlock) {
    const float d = HalfToFloat(Load16(row));
    if (f == Format::kQ8_0) {
      for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(static_cast<int8_t>(row[2 + j])) * d;
      continue;
    }
    if (f == Format::kIQ4_NL) {  // ggml's dequantize_row_iq4_nl: d * value
      for (int j = 0; j < 16; ++j) {
        out[j] = d * static_cast<float>(kIq4NlValues[row[2 + j] & 15]);
        out[j + 16] = d * static_cast<float>(kIq4NlValues[row[2 + j] >> 4]);
      }
      continue;
    }
    const uint8_t* qs = row + (f == Format::kQ4_1 ? 4 : 2);
    const float m = f == Format::kQ4_1 ? HalfToFloat(Load16(row + 2)) : 0.0f;
    for (int j = 0; j < 16; ++j) {
      const int lo = qs[j] & 15, hi = qs[j] >> 4;
      if (f == Format::kQ4_1) {
        out[j] = static_cast<float>(lo) * d + m;
        out[j + 16] = static_cast<float>(hi) * d + m;
      } else {
        out[j] = static_cast<float>(lo - 8) * d;
        out[j + 16] = static_cast<float>(hi - 8) * d;
      }
    }
  }
}

__attribute__((target("avx2,fma,f16c"))) void DecodeRowAvx2(Format f, const uint8_t* row, int64_t blocks, float* out) {
  const int64_t bytes = BlockBytes(f);
  for (int64_t b = 0; b < blocks; ++b, row += bytes, out += kBlock) {
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(Load16(row)));
    if (f == Format::kQ8_0) {
      for (int j = 0; j < 32; j += 8) {
        __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 2 + j));
        _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
      }
      continue;
    }
    if (f == Format::kIQ4_NL) {
      DecodeRowScalar(f, row, 1, out);  // a table lookup per weight; rare enough (rows with an inf or NaN)
      continue;
    }
    // q4_1: q * d + m; q4_0: (q - 8) * d = q * d - 8d.
    const __m256 m = f == Format::kQ4_1 ? _mm256_set1_ps(_cvtsh_ss(Load16(row + 2)))
                                        : _mm256_mul_ps(d, _mm256_set1_ps(-8.0f));
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + (f == Format::kQ4_1 ? 4 : 2)));
    const __m128i mask = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(raw, mask);                     // weights 0..15
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), mask);  // weights 16..31
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int p = 0; p < 4; ++p) {
      __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[p]));
      _mm256_storeu_ps(out + 8 * p, _mm256_fmadd_ps(q, d, m));
    }
  }
}

// --- dot products of a decoded row with rows of x (k a multiple of 32) ---

void DotRowsScalar(const float* w, const float* x, int64_t rows, int64_t k, int64_t x_stride, float* out,
                   int64_t out_stride) {
  for (int64_t i = 0; i < rows; ++i) {
    float s = 0;
    for (int64_t j = 0; j < k; ++j) s += w[j] * x[i * x_stride + j];
    out[i * out_stride] = s;
  }
}

__attribute__((target("avx2,fma"))) float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Every row of x is summed in the same order whether it is one of a group of four or a
// row on its own (two accumulators per row: lanes of j mod 16 < 8 and >= 8, added at the
// end): a row's result never depends on how many rows the call has, so a sequence's logits
// are the same alone or batched with others (the serving engine's promise that batching
// never changes a greedy result).
__attribute__((target("avx2,fma"))) void DotRowsAvx2(const float* w, const float* x, int64_t rows, int64_t k,
                                                     int64_t x_stride, float* out, int64_t out_stride) {
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* x0 = x + i * x_stride;
    const float* x1 = x0 + x_stride;
    const float* x2 = x1 + x_stride;
    const float* x3 = x2 + x_stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
    for (int64_t j = 0; j < k; j += 16) {
      const __m256 wa = _mm256_loadu_ps(w + j);
      const __m256 wb = _mm256_loadu_ps(w + j + 8);
      a0 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(x0 + j), a0);
      b0 = _mm256_fmadd_ps(wb, _mm256_loadu_ps(x0 + j + 8), b0);
      a1 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(x1 + j), a1);
      b1 = _mm256_fmadd_ps(wb, _mm256_loadu_ps(x1 + j + 8), b1);
      a2 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(x2 + j), a2);
      b2 = _mm256_fmadd_ps(wb, _mm256_loadu_ps(x2 + j + 8), b2);
      a3 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(x3 + j), a3);
      b3 = _mm256_fmadd_ps(wb, _mm256_loadu_ps(x3 + j + 8), b3);
    }
    out[i * out_stride] = HorizontalSum(_mm256_add_ps(a0, b0));
    out[(i + 1) * out_stride] = HorizontalSum(_mm256_add_ps(a1, b1));
    out[(i + 2) * out_stride] = HorizontalSum(_mm256_add_ps(a2, b2));
    out[(i + 3) * out_stride] = HorizontalSum(_mm256_add_ps(a3, b3));
  }
  for (; i < rows; ++i) {
    const float* xi = x + i * x_stride;
    // Two accumulators also hide the FMA latency for the single-row (decode) case.
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
    for (int64_t j = 0; j < k; j += 16) {
      a = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(xi + j), a);
      b = _mm256_fmadd_ps(_mm256_loadu_ps(w + j + 8), _mm256_loadu_ps(xi + j + 8), b);
    }
    out[i * out_stride] = HorizontalSum(_mm256_add_ps(a, b));
  }
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

struct Job {
  Format format;
  const float* x;
  const uint8_t* w;
  float* out;
  int64_t rows, n, k, row_bytes, columns_per_task;
};

int32_t Task(int64_t task, int64_t, void* closure) {
  const Job& job = *static_cast<const Job*>(closure);
  thread_local std::vector<float> decoded;
  decoded.resize(static_cast<size_t>(job.k));
  const bool avx2 = HasAvx2();
  const int64_t begin = task * job.columns_per_task;
  const int64_t end = std::min(job.n, begin + job.columns_per_task);
  for (int64_t col = begin; col < end; ++col) {
    const uint8_t* row = job.w + col * job.row_bytes;
    if (avx2) {
      DecodeRowAvx2(job.format, row, job.k / kBlock, decoded.data());
      DotRowsAvx2(decoded.data(), job.x, job.rows, job.k, job.k, job.out + col, job.n);
    } else {
      DecodeRowScalar(job.format, row, job.k / kBlock, decoded.data());
      DotRowsScalar(decoded.data(), job.x, job.rows, job.k, job.k, job.out + col, job.n);
    }
  }
  return 0;
}

// --- activations quantized to Q8 blocks, as llama.cpp (builtins/q8_block_dot.h) ---

QuantWeightFormat ToWeightFormat(Format f) {
  switch (f) {
    case Format::kQ4_0: return QuantWeightFormat::kQ4_0;
    case Format::kQ4_1: return QuantWeightFormat::kQ4_1;
    case Format::kQ8_0: return QuantWeightFormat::kQ8_0;
    case Format::kIQ4_NL: return QuantWeightFormat::kIQ4_NL;
  }
  return QuantWeightFormat::kQ8_0;
}

struct Q8Job {
  QuantWeightFormat format;
  Q8Isa isa;
  const float* x;
  const uint8_t* w;
  float* out;
  Q8Block* quantized;  // rows x (k / 32)
  uint8_t* nonfinite;  // per row: holds an inf or NaN (computed with float activations)
  int64_t rows, n, k, row_bytes, rows_per_task, columns_per_task;
  bool by_block;  // ggml's repacked order (DotQ8RowsByBlock), else its vec_dot lanes
};

int32_t QuantizeTask(int64_t task, int64_t, void* closure) {
  const Q8Job& job = *static_cast<const Q8Job*>(closure);
  const int64_t blocks = job.k / kBlock;
  const int64_t end = std::min(job.rows, (task + 1) * job.rows_per_task);
  for (int64_t r = task * job.rows_per_task; r < end; ++r) {
    const float* row = job.x + r * job.k;
    job.nonfinite[r] = !std::all_of(row, row + job.k, [](float v) { return std::isfinite(v); });
    QuantizeRowQ8(row, job.k, job.quantized + r * blocks, job.isa);
  }
  return 0;
}

int32_t DotTask(int64_t task, int64_t, void* closure) {
  const Q8Job& job = *static_cast<const Q8Job*>(closure);
  const int64_t begin = task * job.columns_per_task;
  const int64_t end = std::min(job.n, begin + job.columns_per_task);
  const int64_t blocks = job.k / kBlock;
  // Chunks of activation rows small enough to stay in L2 while the task's weight rows pass
  // over them (a row's result does not depend on the chunk it is in).
  const int64_t chunk = std::max<int64_t>(4, (int64_t{96} << 10) / (blocks * static_cast<int64_t>(sizeof(Q8Block))) / 4 * 4);
  for (int64_t r0 = 0; r0 < job.rows; r0 += chunk) {
    const int64_t count = std::min(chunk, job.rows - r0);
    if (job.by_block) {
      DotQ8RowsByBlock(job.format, job.w + begin * job.row_bytes, end - begin, job.quantized + r0 * blocks, blocks,
                       count, job.out + r0 * job.n + begin, job.n, job.isa);
      continue;
    }
    for (int64_t col = begin; col < end; ++col) {
      DotQ8Rows(job.format, job.w + col * job.row_bytes, job.quantized + r0 * blocks, blocks, count,
                job.out + r0 * job.n + col, job.n, job.isa);
    }
  }
  return 0;
}

// How a kernel computes: float32 activations, or 8-bit activations summed in ggml's
// vec_dot lanes or in its repacked block order (builtins/q8_block_dot.h).
enum class Activations { kFloat32, kQ8Lanes, kQ8ByBlock };

const char* KernelPrefix(Activations a) {
  switch (a) {
    case Activations::kFloat32: return "kiln.cpu.quantized_matmul_f32x_";
    case Activations::kQ8Lanes: return "kiln.cpu.quantized_matmul_";
    case Activations::kQ8ByBlock: return "kiln.cpu.quantized_matmul_by_block_";
  }
  return "";
}

template <Format F, Activations A>
int32_t QuantizedMatmul(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  constexpr bool kQuantizeActivations = A != Activations::kFloat32;
  QuantizedMatmulOperands o;
  const std::string name = std::string(KernelPrefix(A)) + FormatName(F);
  if (!ReadQuantizedMatmulOperands(name, args, num_args, kBlock, BlockBytes(F), ctx, &o)) return 1;
  const int64_t rows = o.rows, n = o.n, k = o.k, row_bytes = o.row_bytes;
  if (rows == 0 || n == 0) return 0;
  Job job{F, o.x, o.w, o.out, rows, n, k, row_bytes, 0};
  if (k == 0) {
    std::fill(job.out, job.out + rows * n, 0.0f);
    return 0;
  }
  // About 8 tasks per thread so uneven threads still balance; at least 4 columns each.
  const int64_t threads = std::max<int64_t>(1, ctx->num_threads);
  if constexpr (kQuantizeActivations) {
    // The caller's buffer: tasks write disjoint rows of it, then only read it.
    thread_local std::vector<Q8Block> quantized;
    thread_local std::vector<uint8_t> nonfinite;
    quantized.resize(static_cast<size_t>(rows * (k / kBlock)));
    nonfinite.assign(static_cast<size_t>(rows), 0);
    Q8Job q8{ToWeightFormat(F), BestQ8Isa(), job.x, job.w, job.out, quantized.data(), nonfinite.data(),
             rows, n, k, row_bytes, 0, 0, A == Activations::kQ8ByBlock};
    q8.rows_per_task = std::max<int64_t>(1, (rows + threads * 4 - 1) / (threads * 4));
    if (int32_t rc = ctx->parallel_for(ctx, (rows + q8.rows_per_task - 1) / q8.rows_per_task, QuantizeTask, &q8)) {
      return rc;
    }
    q8.columns_per_task = std::max<int64_t>(4, (n + threads * 8 - 1) / (threads * 8));
    if (q8.by_block) q8.columns_per_task = (q8.columns_per_task + 7) / 8 * 8;  // whole groups of 8 weight rows
    if (int32_t rc = ctx->parallel_for(ctx, (n + q8.columns_per_task - 1) / q8.columns_per_task, DotTask, &q8)) {
      return rc;
    }
    // A block holding an inf or NaN quantizes to NaN throughout (its scale is inf), where
    // IEEE arithmetic keeps an inf an inf: such rows (a row's result depends only on the
    // row, so batching still changes nothing) are computed again with float activations.
    for (int64_t r = 0; r < rows; ++r) {
      if (!nonfinite[static_cast<size_t>(r)]) continue;
      Job row = job;
      row.x += r * k;
      row.out += r * n;
      row.rows = 1;
      row.columns_per_task = std::max<int64_t>(4, (n + threads * 8 - 1) / (threads * 8));
      if (int32_t rc = ctx->parallel_for(ctx, (n + row.columns_per_task - 1) / row.columns_per_task, Task, &row)) {
        return rc;
      }
    }
    return 0;
  }
  job.columns_per_task = std::max<int64_t>(4, (n + threads * 8 - 1) / (threads * 8));
  const int64_t tasks = (n + job.columns_per_task - 1) / job.columns_per_task;
  return ctx->parallel_for(ctx, tasks, Task, &job);
}

}  // namespace

void RegisterQuantizedMatmulKernels(vm::BuiltinRegistry& registry) {
  registry.RegisterKernel("kiln.cpu.quantized_matmul_q4_0", "ttt", QuantizedMatmul<Format::kQ4_0, Activations::kQ8Lanes>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_q4_1", "ttt", QuantizedMatmul<Format::kQ4_1, Activations::kQ8Lanes>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_q8_0", "ttt", QuantizedMatmul<Format::kQ8_0, Activations::kQ8Lanes>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_by_block_q4_0", "ttt",
                          QuantizedMatmul<Format::kQ4_0, Activations::kQ8ByBlock>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_by_block_q8_0", "ttt",
                          QuantizedMatmul<Format::kQ8_0, Activations::kQ8ByBlock>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_iq4_nl", "ttt", QuantizedMatmul<Format::kIQ4_NL, Activations::kQ8Lanes>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_by_block_iq4_nl", "ttt",
                          QuantizedMatmul<Format::kIQ4_NL, Activations::kQ8ByBlock>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_f32x_iq4_nl", "ttt",
                          QuantizedMatmul<Format::kIQ4_NL, Activations::kFloat32>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_f32x_q4_0", "ttt", QuantizedMatmul<Format::kQ4_0, Activations::kFloat32>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_f32x_q4_1", "ttt", QuantizedMatmul<Format::kQ4_1, Activations::kFloat32>);
  registry.RegisterKernel("kiln.cpu.quantized_matmul_f32x_q8_0", "ttt", QuantizedMatmul<Format::kQ8_0, Activations::kFloat32>);
}

}  // namespace kiln::builtins
