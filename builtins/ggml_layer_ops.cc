#include "builtins/ggml_layer_ops.h"

#include <immintrin.h>
#include <math.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/ggml_simd.h"
#include "vm/dtype.h"
#include "vm/thread_pool.h"

namespace kiln::builtins {

// The element loops, compiled for AVX2+FMA (std::fma one instruction) and for the baseline.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace ggml_ops_avx2 {
#include "builtins/ggml_expf.inc"
#include "builtins/ggml_expf_avx2.inc"

// ggml_vec_swiglu_f32: its vector loop (kLanes at a time, the build's exp) over the first
// f & ~(kLanes - 1) elements, the C library's expf after. Eight elements per step here, each
// lane the per-element operations.
template <int kLanes>
static void SwiGluRow(const float* gate, const float* up, int64_t f, float* out) {
  const int64_t vectorized = f & ~int64_t{kLanes - 1};
  for (int64_t i = 0; i < vectorized; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 minus_g = _mm256_xor_ps(g, _mm256_set1_ps(-0.0f));
    const __m256 e = kLanes == 16 ? GgmlExpfVector(minus_g) : GgmlExpfAvx2BuildVector(minus_g);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), _mm256_loadu_ps(up + i)));
  }
  for (int64_t i = vectorized; i < f; ++i) out[i] = gate[i] / (1.0f + ::expf(-gate[i])) * up[i];
}

static void Rotate(float x0, float x1, float c, float s, float* y0, float* y1) {
  *y0 = std::fma(x0, c, -(x1 * s));
  *y1 = std::fma(x0, s, x1 * c);
}
}  // namespace ggml_ops_avx2
#pragma GCC pop_options

namespace ggml_ops_portable {
#include "builtins/ggml_expf.inc"

// ggml_vec_swiglu_f32: its vector loop (kLanes at a time, the build's exp) over the first
// f & ~(kLanes - 1) elements, the C library's expf after.
template <int kLanes>
static void SwiGluRow(const float* gate, const float* up, int64_t f, float* out) {
  const int64_t vectorized = f & ~int64_t{kLanes - 1};
  for (int64_t i = 0; i < vectorized; ++i) {
    const float e = kLanes == 16 ? GgmlExpf(-gate[i]) : GgmlExpfAvx2Build(-gate[i]);
    out[i] = gate[i] / (1.0f + e) * up[i];
  }
  for (int64_t i = vectorized; i < f; ++i) out[i] = gate[i] / (1.0f + ::expf(-gate[i])) * up[i];
}

static void Rotate(float x0, float x1, float c, float s, float* y0, float* y1) {
  *y0 = std::fma(x0, c, -(x1 * s));
  *y1 = std::fma(x0, s, x1 * c);
}
}  // namespace ggml_ops_portable

namespace {

using vm::BuiltinContext;
using vm::Tensor;
using vm::Value;

std::atomic<bool> force_portable{false};

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has && !force_portable.load(std::memory_order_relaxed);
}

// f(row) for every row in [0, rows), in tasks of a few rows on the VM's thread pool (each
// row's arithmetic is the same whichever thread runs it).
template <typename F>
void ForEachRow(int64_t rows, const F& f) {
  constexpr int64_t kRowsPerTask = 4;
  struct Closure {
    const F* f;
    int64_t rows;
  } closure{&f, rows};
  auto body = [](int64_t task, int64_t, void* c) -> int32_t {
    const Closure& cl = *static_cast<const Closure*>(c);
    for (int64_t r = task * kRowsPerTask; r < std::min(cl.rows, (task + 1) * kRowsPerTask); ++r) (*cl.f)(r);
    return 0;
  };
  if (rows > 0) vm::ThreadPool::Global().ParallelFor((rows + kRowsPerTask - 1) / kRowsPerTask, body, &closure);
}

absl::Status CheckFloat32(const char* builtin, const char* name, const Tensor& t) {
  if (!vm::operator==(t.dtype(), vm::DTypeFloat32()) || !t.strides().empty() || t.device().device_type != kDLCPU ||
      t.ndim() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(builtin, ": ", name, " must be a contiguous float32 CPU tensor, got ", t.Describe()));
  }
  return absl::OkStatus();
}

absl::Status RmsNorm(BuiltinContext&, const Value* const* args, int, Value* result) {
  constexpr const char* kName = "kiln.ggml.rms_norm";
  const Tensor& x = args[0]->as_tensor();
  const Tensor& w = args[1]->as_tensor();
  const float eps = static_cast<float>(args[2]->as_double());
  if (absl::Status s = CheckFloat32(kName, "x", x); !s.ok()) return s;
  if (absl::Status s = CheckFloat32(kName, "w", w); !s.ok()) return s;
  const int64_t h = x.shape().back();
  if (w.ndim() != 1 || w.shape()[0] != h) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": w must have shape [", h, "], got ", w.Describe()));
  }
  absl::StatusOr<Tensor> out = Tensor::Empty(x.shape(), vm::DTypeFloat32());
  if (!out.ok()) return out.status();
  const int64_t rows = h == 0 ? 0 : x.numel() / h;
  Tensor& y = *out;
  ForEachRow(rows, [&](int64_t r) {
    const float* xr = x.data_as<float>() + r * h;
    float* yr = y.data_as<float>() + r * h;
    double sum = 0;
    for (int64_t i = 0; i < h; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(h));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < h; ++i) yr[i] = (scale * xr[i]) * w.data_as<float>()[i];
  });
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

absl::Status Rope(BuiltinContext&, const Value* const* args, int, Value* result) {
  constexpr const char* kName = "kiln.ggml.rope";
  const Tensor& x = args[0]->as_tensor();
  const Tensor& positions = args[1]->as_tensor();
  const float base = static_cast<float>(args[2]->as_double());
  const int64_t dims = args[3]->as_int();
  const bool neox = args[4]->as_int() != 0;
  if (absl::Status s = CheckFloat32(kName, "x", x); !s.ok()) return s;
  if (x.ndim() != 3) return absl::InvalidArgumentError(absl::StrCat(kName, ": x must be (n, heads, d), got ", x.Describe()));
  const int64_t n = x.shape()[0], heads = x.shape()[1], d = x.shape()[2];
  if (!vm::operator==(positions.dtype(), vm::DTypeInt64()) || positions.shape() != std::vector<int64_t>{n} ||
      !positions.strides().empty() || positions.device().device_type != kDLCPU) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, ": positions must be a contiguous int64 CPU tensor of shape [", n, "], got ", positions.Describe()));
  }
  if (dims <= 0 || dims % 2 != 0 || dims > d) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": rotary_dims ", dims, " must be even and in (0, ", d, "]"));
  }
  if (!(base > 0)) return absl::InvalidArgumentError(absl::StrCat(kName, ": base must be positive, got ", base));
  absl::StatusOr<Tensor> out = Tensor::Empty(x.shape(), vm::DTypeFloat32());
  if (!out.ok()) return out.status();
  const float step = ::powf(base, -2.0f / static_cast<float>(dims));
  const bool avx2 = HasAvx2Fma();
  Tensor& y = *out;
  ForEachRow(n, [&](int64_t t) {
    std::vector<float> cosines(static_cast<size_t>(dims / 2)), sines(static_cast<size_t>(dims / 2));
    float theta = static_cast<float>(static_cast<int32_t>(positions.data_as<int64_t>()[t]));
    for (int64_t m = 0; m < dims / 2; ++m) {
      ::sincosf(theta, &sines[static_cast<size_t>(m)], &cosines[static_cast<size_t>(m)]);
      theta *= step;
    }
    for (int64_t h = 0; h < heads; ++h) {
      const float* src = x.data_as<float>() + (t * heads + h) * d;
      float* dst = y.data_as<float>() + (t * heads + h) * d;
      for (int64_t m = 0; m < dims / 2; ++m) {
        const int64_t a = neox ? m : 2 * m;
        const int64_t b = neox ? m + dims / 2 : 2 * m + 1;
        const float c = cosines[static_cast<size_t>(m)], s = sines[static_cast<size_t>(m)];
        if (avx2) {
          ggml_ops_avx2::Rotate(src[a], src[b], c, s, &dst[a], &dst[b]);
        } else {
          ggml_ops_portable::Rotate(src[a], src[b], c, s, &dst[a], &dst[b]);
        }
      }
      for (int64_t i = dims; i < d; ++i) dst[i] = src[i];
    }
  });
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

absl::Status SwiGlu(BuiltinContext&, const Value* const* args, int, Value* result) {
  constexpr const char* kName = "kiln.ggml.swiglu";
  const Tensor& gate = args[0]->as_tensor();
  const Tensor& up = args[1]->as_tensor();
  if (absl::Status s = CheckFloat32(kName, "gate", gate); !s.ok()) return s;
  if (absl::Status s = CheckFloat32(kName, "up", up); !s.ok()) return s;
  if (gate.shape() != up.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": gate ", gate.Describe(), " and up ", up.Describe(), " differ"));
  }
  absl::StatusOr<Tensor> out = Tensor::Empty(gate.shape(), vm::DTypeFloat32());
  if (!out.ok()) return out.status();
  const int64_t f = gate.shape().back();
  const int64_t rows = f == 0 ? 0 : gate.numel() / f;
  Tensor& result_tensor = *out;
  const bool avx2 = HasAvx2Fma();
  const bool avx512_build = ActiveGgmlSimd() == GgmlSimd::kAvx512;
  ForEachRow(rows, [&](int64_t r) {
    const float* g = gate.data_as<float>() + r * f;
    const float* u = up.data_as<float>() + r * f;
    float* y = result_tensor.data_as<float>() + r * f;
    if (avx512_build) {
      avx2 ? ggml_ops_avx2::SwiGluRow<16>(g, u, f, y) : ggml_ops_portable::SwiGluRow<16>(g, u, f, y);
    } else {
      avx2 ? ggml_ops_avx2::SwiGluRow<8>(g, u, f, y) : ggml_ops_portable::SwiGluRow<8>(g, u, f, y);
    }
  });
  *result = Value(*std::move(out));
  return absl::OkStatus();
}

}  // namespace

void ForcePortableLayerOpsForTesting(bool portable) { force_portable.store(portable); }

void RegisterGgmlLayerOps(vm::BuiltinRegistry& registry) {
  registry.RegisterBuiltin("kiln.ggml.rms_norm", "(tensor, tensor, double) -> tensor", RmsNorm);
  registry.RegisterBuiltin("kiln.ggml.rope", "(tensor, tensor, double, int, int) -> tensor", Rope);
  registry.RegisterBuiltin("kiln.ggml.swiglu", "(tensor, tensor) -> tensor", SwiGlu);
}

}  // namespace kiln::builtins
