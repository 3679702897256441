#include "builtins/paged_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/paged_kv_cache.h"
#include "support/float16.h"
#include "vm/dtype.h"
#include "vm/thread_pool.h"

namespace kiln::builtins {

namespace {

using vm::BuiltinContext;
using vm::Tensor;
using vm::Value;

using support::FloatToHalf;
using support::HalfToFloat;

// --- inner loops: dot(q, key) and out += w * value over head_dim elements. ---

float DotF32(const float* q, const float* k, int64_t d) {
  float s = 0;
  for (int64_t i = 0; i < d; ++i) s += q[i] * k[i];
  return s;
}

void AxpyF32(float w, const float* v, float* out, int64_t d) {
  for (int64_t i = 0; i < d; ++i) out[i] += w * v[i];
}

float DotF16Scalar(const float* q, const uint16_t* k, int64_t d) {
  float s = 0;
  for (int64_t i = 0; i < d; ++i) s += q[i] * HalfToFloat(k[i]);
  return s;
}

void AxpyF16Scalar(float w, const uint16_t* v, float* out, int64_t d) {
  for (int64_t i = 0; i < d; ++i) out[i] += w * HalfToFloat(v[i]);
}

// The same with F16C conversions and AVX2 FMA, for CPUs that have them (chosen at run time:
// the library is built for the baseline x86-64).
__attribute__((target("avx2,fma,f16c"))) float DotF16Avx2(const float* q, const uint16_t* k, int64_t d) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv, acc);
  }
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  float s = _mm_cvtss_f32(lo);
  for (; i < d; ++i) s += q[i] * HalfToFloat(k[i]);
  return s;
}

__attribute__((target("avx2,fma,f16c"))) void AxpyF16Avx2(float w, const uint16_t* v, float* out, int64_t d) {
  const __m256 wv = _mm256_set1_ps(w);
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(wv, vv, _mm256_loadu_ps(out + i)));
  }
  for (; i < d; ++i) out[i] += w * HalfToFloat(v[i]);
}

bool HasAvx2F16c() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

absl::Status Error(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("kiln.kv_cache.attention: ", what));
}

absl::Status CheckTensor(const Tensor& t, const char* name, int64_t n, int64_t heads, int64_t d) {
  if (!vm::operator==(t.dtype(), vm::DTypeFloat32()) || !t.strides().empty() || t.device().device_type != kDLCPU) {
    return Error(absl::StrCat(name, " must be a contiguous float32 CPU tensor, got ", t.Describe()));
  }
  if (t.shape() != std::vector<int64_t>{n, heads, d}) {
    return Error(absl::StrCat(name, " must have shape [", n, ", ", heads, ", ", d, "], got ", t.Describe()));
  }
  return absl::OkStatus();
}

struct AttentionJob {
  PagedKvCache* cache;
  int64_t layer;
  const float* q;
  float* out;
  int64_t q_heads, kv_heads, d;
  float scale;
};

int32_t AttentionTask(int64_t task, int64_t, void* closure) {
  const AttentionJob& job = *static_cast<const AttentionJob*>(closure);
  PagedKvCache& cache = *job.cache;
  const int64_t t = task / job.kv_heads;
  const int64_t g = task % job.kv_heads;
  const int64_t group = job.q_heads / job.kv_heads;
  const PagedKvCache::StepToken& token = cache.step_tokens()[static_cast<size_t>(t)];
  const std::vector<int32_t>& pages = *cache.step_sequences()[static_cast<size_t>(token.sequence)].pages;
  const int64_t length = token.position + 1;
  const int64_t page_size = cache.config().page_size;
  const bool f16 = cache.element_bytes() == 2;
  const bool avx2 = f16 && HasAvx2F16c();
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(group * length));
  // Scores of every q head of the group against every key, read once.
  for (int64_t p = 0; p < length; ++p) {
    const uint8_t* key = cache.KeyAt(job.layer, pages[static_cast<size_t>(p / page_size)], g, p % page_size);
    for (int64_t r = 0; r < group; ++r) {
      const float* q = job.q + (t * job.q_heads + g * group + r) * job.d;
      float s = !f16  ? DotF32(q, reinterpret_cast<const float*>(key), job.d)
                : avx2 ? DotF16Avx2(q, reinterpret_cast<const uint16_t*>(key), job.d)
                       : DotF16Scalar(q, reinterpret_cast<const uint16_t*>(key), job.d);
      scores[static_cast<size_t>(r * length + p)] = s * job.scale;
    }
  }
  for (int64_t r = 0; r < group; ++r) {
    float* row = scores.data() + r * length;
    float max = row[0];
    for (int64_t p = 1; p < length; ++p) max = std::max(max, row[p]);
    float sum = 0;
    for (int64_t p = 0; p < length; ++p) {
      row[p] = std::exp(row[p] - max);
      sum += row[p];
    }
    const float inv = 1.0f / sum;
    for (int64_t p = 0; p < length; ++p) row[p] *= inv;
    float* out = job.out + (t * job.q_heads + g * group + r) * job.d;
    std::fill(out, out + job.d, 0.0f);
  }
  for (int64_t p = 0; p < length; ++p) {
    const uint8_t* value = cache.ValueAt(job.layer, pages[static_cast<size_t>(p / page_size)], g, p % page_size);
    for (int64_t r = 0; r < group; ++r) {
      float* out = job.out + (t * job.q_heads + g * group + r) * job.d;
      const float w = scores[static_cast<size_t>(r * length + p)];
      if (!f16) {
        AxpyF32(w, reinterpret_cast<const float*>(value), out, job.d);
      } else if (avx2) {
        AxpyF16Avx2(w, reinterpret_cast<const uint16_t*>(value), out, job.d);
      } else {
        AxpyF16Scalar(w, reinterpret_cast<const uint16_t*>(value), out, job.d);
      }
    }
  }
  return 0;
}

absl::Status Attention(BuiltinContext&, const Value* const* args, int, Value* result) {
  PagedKvCache& cache = args[0]->as_object<PagedKvCache>();
  const int64_t layer = args[1]->as_int();
  const Tensor& q = args[2]->as_tensor();
  const Tensor& k = args[3]->as_tensor();
  const Tensor& v = args[4]->as_tensor();
  const double scale = args[5]->as_double();
  const PagedKvCache::Config& c = cache.config();
  if (!cache.in_forward()) return Error("called outside a step (the caller must run BeginForward first)");
  if (layer < 0 || layer >= c.num_layers) return Error(absl::StrCat("layer ", layer, " is outside [0, ", c.num_layers, ")"));
  const int64_t n = static_cast<int64_t>(cache.step_tokens().size());
  if (q.ndim() != 3 || q.shape()[1] <= 0 || q.shape()[1] % c.num_kv_heads != 0) {
    return Error(absl::StrCat("q must be [", n, ", a multiple of ", c.num_kv_heads, " heads, ", c.head_dim, "], got ",
                              q.Describe()));
  }
  const int64_t q_heads = q.shape()[1];
  if (absl::Status s = CheckTensor(q, "q", n, q_heads, c.head_dim); !s.ok()) return s;
  if (absl::Status s = CheckTensor(k, "k", n, c.num_kv_heads, c.head_dim); !s.ok()) return s;
  if (absl::Status s = CheckTensor(v, "v", n, c.num_kv_heads, c.head_dim); !s.ok()) return s;

  // Store the step's keys and values.
  const bool f16 = cache.element_bytes() == 2;
  for (int64_t t = 0; t < n; ++t) {
    const PagedKvCache::StepToken& token = cache.step_tokens()[static_cast<size_t>(t)];
    const std::vector<int32_t>& pages = *cache.step_sequences()[static_cast<size_t>(token.sequence)].pages;
    const int32_t page = pages[static_cast<size_t>(token.position / c.page_size)];
    const int64_t slot = token.position % c.page_size;
    for (int64_t g = 0; g < c.num_kv_heads; ++g) {
      const float* ks = k.data_as<float>() + (t * c.num_kv_heads + g) * c.head_dim;
      const float* vs = v.data_as<float>() + (t * c.num_kv_heads + g) * c.head_dim;
      uint8_t* kd = cache.KeyAt(layer, page, g, slot);
      uint8_t* vd = cache.ValueAt(layer, page, g, slot);
      if (f16) {
        for (int64_t i = 0; i < c.head_dim; ++i) {
          reinterpret_cast<uint16_t*>(kd)[i] = FloatToHalf(ks[i]);
          reinterpret_cast<uint16_t*>(vd)[i] = FloatToHalf(vs[i]);
        }
      } else {
        std::memcpy(kd, ks, static_cast<size_t>(c.head_dim) * 4);
        std::memcpy(vd, vs, static_cast<size_t>(c.head_dim) * 4);
      }
    }
  }

  absl::StatusOr<Tensor> out = Tensor::Empty({n, q_heads, c.head_dim}, vm::DTypeFloat32());
  if (!out.ok()) return out.status();
  AttentionJob job{&cache, layer, q.data_as<float>(), out->data_as<float>(), q_heads, c.num_kv_heads, c.head_dim,
                   static_cast<float>(scale)};
  if (n * c.num_kv_heads > 0) vm::ThreadPool::Global().ParallelFor(n * c.num_kv_heads, AttentionTask, &job);
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

absl::Status Positions(BuiltinContext&, const Value* const* args, int, Value* result) {
  PagedKvCache& cache = args[0]->as_object<PagedKvCache>();
  if (!cache.in_forward()) {
    return absl::FailedPreconditionError(
        "kiln.kv_cache.positions: called outside a step (the caller must run BeginForward first)");
  }
  const int64_t n = static_cast<int64_t>(cache.step_tokens().size());
  absl::StatusOr<Tensor> out = Tensor::Empty({n}, vm::DTypeInt64());
  if (!out.ok()) return out.status();
  for (int64_t t = 0; t < n; ++t) out->data_as<int64_t>()[t] = cache.step_tokens()[static_cast<size_t>(t)].position;
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

}  // namespace

void RegisterKvCacheBuiltins(vm::BuiltinRegistry& registry) {
  registry.RegisterBuiltin("kiln.kv_cache.positions", "(object:paged_kv_cache) -> tensor", Positions);
  registry.RegisterBuiltin("kiln.kv_cache.attention",
                           "(object:paged_kv_cache, int, tensor, tensor, tensor, double) -> tensor", Attention);
}

}  // namespace kiln::builtins
