#include "builtins/kquant_matmul_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "builtins/ggml_row_decode.h"
#include "builtins/ggml_simd.h"
#include "builtins/kquant_block_dot.h"
#include "builtins/q5_block_dot.h"
#include "builtins/q8_block_dot.h"
#include "builtins/quantized_matmul_operands.h"

namespace kiln::builtins {
namespace {

using Format = DecodableFormat;

const char* FormatName(Format f) {
  switch (f) {
    case Format::kQ5_0: return "q5_0";
    case Format::kQ5_1: return "q5_1";
    case Format::kQ4_K: return "q4_K";
    case Format::kQ5_K: return "q5_K";
    case Format::kQ6_K: return "q6_K";
    case Format::kQ3_K: return "q3_K";
    case Format::kIQ4_XS: return "iq4_xs";
    case Format::kQ2_K: return "q2_K";
  }
  return "?";
}

constexpr bool IsKQuantFormat(Format f) {
  return f == Format::kQ2_K || f == Format::kQ3_K || f == Format::kQ4_K || f == Format::kQ5_K || f == Format::kQ6_K ||
         f == Format::kIQ4_XS;
}
bool IsKQuant(Format f) { return IsKQuantFormat(f); }

KQuantFormat ToKQuant(Format f) {
  switch (f) {
    case Format::kQ2_K: return KQuantFormat::kQ2_K;
    case Format::kQ3_K: return KQuantFormat::kQ3_K;
    case Format::kIQ4_XS: return KQuantFormat::kIQ4_XS;
    case Format::kQ4_K: return KQuantFormat::kQ4_K;
    case Format::kQ5_K: return KQuantFormat::kQ5_K;
    default: return KQuantFormat::kQ6_K;
  }
}

// Which kernel: float32 activations, or 8-bit ones summed in one of llama.cpp's orders
// (kquant_block_dot.h): its vec_dot, its repacked Q4_K or Q2_K kernels, or its tiled kernel,
// which llama.cpp runs only for calls of kTiledMinRows rows or more (fewer go to vec_dot).
enum class Kernel { kFloat32, kLanes, kByBlock, kTiled };

// ggml-cpu's tiled/tiled.cpp ggml_tiled_min_batch: "profitable at rows >= 8".
constexpr int64_t kTiledMinRows = 8;

std::string KernelName(Format f, Kernel kernel) {
  switch (kernel) {
    case Kernel::kFloat32: return QuantizedMatmulKernelName(FormatName(f), false);
    case Kernel::kLanes: return QuantizedMatmulKernelName(FormatName(f), true);
    case Kernel::kByBlock: return std::string("kiln.cpu.quantized_matmul_by_block_") + FormatName(f);
    case Kernel::kTiled: return std::string("kiln.cpu.quantized_matmul_tiled_") + FormatName(f);
  }
  return "?";
}

struct Job {
  Format format;
  KQuantSummation summation;
  Q8Isa isa;
  const float* x;
  const uint8_t* w;
  float* out;
  Q8Block* q8;         // rows x (k / 32), Q5 formats
  Q8KBlock* q8k;       // rows x (k / 256), K-quants
  uint8_t* nonfinite;  // per row: holds an inf or NaN
  // kByBlock: rows below this one in llama.cpp's GEMM order (`gemm_summation`), the rest in
  // its GEMV order (`summation`).
  int64_t gemm_rows;
  KQuantSummation gemm_summation;
  int64_t rows, n, k, row_bytes, rows_per_task, columns_per_task;
};

int32_t QuantizeTask(int64_t task, int64_t, void* closure) {
  const Job& job = *static_cast<const Job*>(closure);
  const int64_t end = std::min(job.rows, (task + 1) * job.rows_per_task);
  for (int64_t r = task * job.rows_per_task; r < end; ++r) {
    const float* row = job.x + r * job.k;
    job.nonfinite[r] = !std::all_of(row, row + job.k, [](float v) { return std::isfinite(v); });
    if (IsKQuant(job.format)) {
      QuantizeRowQ8K(row, job.k, job.q8k + r * (job.k / kKQuantBlockWeights));
    } else {
      QuantizeRowQ8(row, job.k, job.q8 + r * (job.k / 32), job.isa);
    }
  }
  return 0;
}

int32_t QuantizedDotTask(int64_t task, int64_t, void* closure) {
  const Job& job = *static_cast<const Job*>(closure);
  const int64_t begin = task * job.columns_per_task;
  const int64_t end = std::min(job.n, begin + job.columns_per_task);
  const bool kquant = IsKQuant(job.format);
  const int64_t blocks = job.k / DecodableBlockWeights(job.format);
  const int64_t row_activation_bytes =
      kquant ? blocks * static_cast<int64_t>(sizeof(Q8KBlock)) : blocks * static_cast<int64_t>(sizeof(Q8Block));
  // Chunks of activation rows small enough to stay in L2 while the task's weight rows pass
  // over them (a row's result does not depend on its chunk).
  const int64_t chunk = std::max<int64_t>(4, (int64_t{96} << 10) / row_activation_bytes / 4 * 4);
  for (int64_t r0 = 0; r0 < job.rows; r0 += chunk) {
    const int64_t count = std::min(chunk, job.rows - r0);
    if (!kquant) {
      const Q5Format q5 = job.format == Format::kQ5_0 ? Q5Format::kQ5_0 : Q5Format::kQ5_1;
      DotQ5Tile(q5, job.w + begin * job.row_bytes, end - begin, job.row_bytes, job.q8 + r0 * blocks, blocks, count,
                job.out + r0 * job.n + begin, job.n, job.isa);
      continue;
    }
    for (int64_t col = begin; col < end; ++col) {
      const uint8_t* weights = job.w + col * job.row_bytes;
      float* out = job.out + r0 * job.n + col;
      // Rows [r0, split) in the GEMM order, [split, r0 + count) in `summation`.
      const int64_t split = std::clamp(job.gemm_rows, r0, r0 + count);
      if (split > r0) {
        DotQ8KRows(ToKQuant(job.format), job.gemm_summation, weights, job.q8k + r0 * blocks, blocks,
                   split - r0, out, job.n, job.isa);
      }
      DotQ8KRows(ToKQuant(job.format), job.summation, weights, job.q8k + split * blocks, blocks, r0 + count - split,
                 out + (split - r0) * job.n, job.n, job.isa);
    }
  }
  return 0;
}

// Float32 activations: each weight row decoded once, then its dot product with every listed
// row of x, summed in float64 (8 partial sums, added pairwise): a K-quant's terms can be
// thousands of times its result (int8 scales times 6-bit quants), which float32 sums of
// hundreds of terms would round visibly.
int32_t FloatDotTask(int64_t task, int64_t, void* closure) {
  const Job& job = *static_cast<const Job*>(closure);
  thread_local std::vector<float> decoded;
  decoded.resize(static_cast<size_t>(job.k));
  const int64_t begin = task * job.columns_per_task;
  const int64_t end = std::min(job.n, begin + job.columns_per_task);
  for (int64_t col = begin; col < end; ++col) {
    DecodeRow(job.format, job.w + col * job.row_bytes, job.k, decoded.data());
    for (int64_t r = 0; r < job.rows; ++r) {
      if (job.nonfinite != nullptr && !job.nonfinite[r]) continue;
      const float* x = job.x + r * job.k;
      double partial[8] = {};
      for (int64_t j = 0; j < job.k; j += 8) {
        for (int l = 0; l < 8; ++l) partial[l] += static_cast<double>(decoded[static_cast<size_t>(j + l)]) * x[j + l];
      }
      job.out[r * job.n + col] = static_cast<float>(((partial[0] + partial[4]) + (partial[2] + partial[6])) +
                                                    ((partial[1] + partial[5]) + (partial[3] + partial[7])));
    }
  }
  return 0;
}

template <Format F, Kernel K>
int32_t QuantizedMatmul(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  constexpr bool kQuantizeActivations = K != Kernel::kFloat32;
  QuantizedMatmulOperands o;
  const std::string name = KernelName(F, K);
  if (!ReadQuantizedMatmulOperands(name, args, num_args, DecodableBlockWeights(F), DecodableBlockBytes(F), ctx, &o)) {
    return 1;
  }
  const int64_t rows = o.rows, n = o.n, k = o.k;
  if (rows == 0 || n == 0) return 0;
  // llama.cpp repacks Q2_K weights only when it is built for AVX-512 (ggml-cpu repack.cpp
  // ggml_repack_get_optimal_repack_type): in its AVX2 build they take the tiled kernel.
  const bool by_block = K == Kernel::kByBlock && (F != Format::kQ2_K || ActiveGgmlSimd() == GgmlSimd::kAvx512);
  const bool tiled = K == Kernel::kTiled || (K == Kernel::kByBlock && !by_block);
  const KQuantSummation summation = by_block                           ? KQuantSummation::kBlocks
                                    : tiled && rows >= kTiledMinRows ? KQuantSummation::kTiles
                                                                     : KQuantSummation::kLanes;
  // llama.cpp's repacked kernels take rows in fours (GEMM) when there are more than 3, the
  // last rows % 4 alone (GEMV): ggml-cpu repack.cpp forward_mul_mat_one_chunk. Its Q4_K
  // GEMM sums a quarter super-block into each integer, its Q2_K GEMM half of one.
  const int64_t gemm_rows = by_block && rows > 3 ? rows - rows % 4 : 0;
  const KQuantSummation gemm_summation = F == Format::kQ2_K ? KQuantSummation::kBlockHalves : KQuantSummation::kBlockQuarters;
  Job job{F,         summation, BestQ8Isa(), o.x, o.w, o.out, nullptr, nullptr, nullptr, gemm_rows,
          gemm_summation, rows,   n,           k,   o.row_bytes, 0, 0};
  if (k == 0) {
    std::fill(job.out, job.out + rows * n, 0.0f);
    return 0;
  }
  // About 8 tasks per thread so uneven threads still balance; at least 4 columns each.
  const int64_t threads = std::max<int64_t>(1, ctx->num_threads);
  job.columns_per_task = std::max<int64_t>(4, (n + threads * 8 - 1) / (threads * 8));
  const int64_t column_tasks = (n + job.columns_per_task - 1) / job.columns_per_task;
  if constexpr (!kQuantizeActivations) {
    return ctx->parallel_for(ctx, column_tasks, FloatDotTask, &job);
  }
  // The caller's buffers: tasks write disjoint rows of them, then only read them.
  thread_local std::vector<Q8Block> q8;
  thread_local std::vector<Q8KBlock> q8k;
  thread_local std::vector<uint8_t> nonfinite;
  if (IsKQuant(F)) {
    q8k.resize(static_cast<size_t>(rows * (k / kKQuantBlockWeights)));
    job.q8k = q8k.data();
  } else {
    q8.resize(static_cast<size_t>(rows * (k / 32)));
    job.q8 = q8.data();
  }
  nonfinite.assign(static_cast<size_t>(rows), 0);
  job.nonfinite = nonfinite.data();
  job.rows_per_task = std::max<int64_t>(1, (rows + threads * 4 - 1) / (threads * 4));
  if (int32_t rc = ctx->parallel_for(ctx, (rows + job.rows_per_task - 1) / job.rows_per_task, QuantizeTask, &job)) {
    return rc;
  }
  if (int32_t rc = ctx->parallel_for(ctx, column_tasks, QuantizedDotTask, &job)) return rc;
  // Rows with an inf or NaN again with float activations (IEEE arithmetic keeps an inf an
  // inf, where the quantized block would be NaN throughout).
  if (std::any_of(nonfinite.begin(), nonfinite.end(), [](uint8_t v) { return v != 0; })) {
    return ctx->parallel_for(ctx, column_tasks, FloatDotTask, &job);
  }
  return 0;
}

template <Format F, Kernel K>
void Register(vm::BuiltinRegistry& registry) {
  registry.RegisterKernel(KernelName(F, K), "ttt", QuantizedMatmul<F, K>);
}

template <Format F>
void Register(vm::BuiltinRegistry& registry) {
  Register<F, Kernel::kLanes>(registry);
  Register<F, Kernel::kFloat32>(registry);
  if constexpr (IsKQuantFormat(F)) Register<F, Kernel::kTiled>(registry);
  if constexpr (F == Format::kQ4_K || F == Format::kQ2_K) Register<F, Kernel::kByBlock>(registry);
}

}  // namespace

void RegisterKQuantMatmulKernels(vm::BuiltinRegistry& registry) {
  Register<Format::kQ5_0>(registry);
  Register<Format::kQ5_1>(registry);
  Register<Format::kQ2_K>(registry);
  Register<Format::kQ3_K>(registry);
  Register<Format::kQ4_K>(registry);
  Register<Format::kQ5_K>(registry);
  Register<Format::kQ6_K>(registry);
  Register<Format::kIQ4_XS>(registry);
}

}  // namespace kiln::builtins
