// Library kernels backed by OpenBLAS, written against the kernel ABI (vm/kernel_abi.h) like
// generated kernels, so that relax/transform/dispatch_libraries.h can swap a matmul for one
// of them and the VM calls it exactly as it calls generated code.
//
//   kiln.openblas.sgemm(a, b, out) "ttt": float32 out = a @ b, either 2-D a [m, k],
//   b [k, n], out [m, n], or 3-D with one shared batch size [p, m, k] @ [p, k, n]. All three
//   must be row-major and compact (byte_offset is honoured; strides must be absent or compact).
//
// OpenBLAS is loaded on first use (builtins/openblas_library.h), which chooses its best
// kernels on CPUs it misdetects. Its thread count follows the VM's pool (ctx->num_threads)
// unless the user set OPENBLAS_NUM_THREADS or OMP_NUM_THREADS: the pool's threads sleep
// while a library call runs, so the two never compete for cores.
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

#include "builtins/default_builtins.h"
#include "builtins/kernel_tensor_checks.h"
#include "builtins/openblas_library.h"
#include "vm/dtype.h"

namespace kiln::builtins {
namespace {

bool IsF32(const DLTensor* t) { return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1; }

float* F32(const DLTensor* t) { return reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset); }

int32_t Fail(KilnCallContext* ctx, const std::string& message) {
  ctx->set_error(ctx, message.c_str());
  return 1;
}

std::string ShapeText(const DLTensor* t) {
  std::string s = "[";
  for (int i = 0; i < t->ndim; ++i) s += (i ? ", " : "") + std::to_string(t->shape[i]);
  return s + "]";
}

// The library, with its threads matched to the pool on first use; null after reporting why.
const OpenBlasLibrary* Library(KilnCallContext* ctx) {
  std::string error;
  const OpenBlasLibrary* lib = LoadOpenBlas(&error);
  if (lib == nullptr) {
    Fail(ctx, "kiln.openblas.sgemm: " + error);
    return nullptr;
  }
  static std::once_flag threads_set;
  std::call_once(threads_set, [&] {
    if (lib->set_num_threads != nullptr && ctx->num_threads > 0 && std::getenv("OPENBLAS_NUM_THREADS") == nullptr &&
        std::getenv("OMP_NUM_THREADS") == nullptr) {
      lib->set_num_threads(ctx->num_threads);
    }
  });
  return lib;
}

int32_t Sgemm(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (num_args != 3) return Fail(ctx, "kiln.openblas.sgemm takes (a, b, out)");
  const DLTensor* a = args[0].value.tensor;
  const DLTensor* b = args[1].value.tensor;
  const DLTensor* out = args[2].value.tensor;
  if (!IsF32(a) || !IsF32(b) || !IsF32(out)) return Fail(ctx, "kiln.openblas.sgemm needs float32 tensors");
  if (!IsCompactRowMajor(a) || !IsCompactRowMajor(b) || !IsCompactRowMajor(out)) {
    return Fail(ctx, "kiln.openblas.sgemm needs compact row-major tensors");
  }
  const int nd = a->ndim;
  const std::string shapes = "a " + ShapeText(a) + ", b " + ShapeText(b) + ", out " + ShapeText(out);
  if ((nd != 2 && nd != 3) || b->ndim != nd || out->ndim != nd) {
    return Fail(ctx, "kiln.openblas.sgemm needs 2-D or 3-D operands of equal rank, got " + shapes);
  }
  const int64_t batch = nd == 3 ? a->shape[0] : 1;
  const int64_t m = a->shape[nd - 2], k = a->shape[nd - 1], n = b->shape[nd - 1];
  if (b->shape[nd - 2] != k || out->shape[nd - 2] != m || out->shape[nd - 1] != n ||
      (nd == 3 && (b->shape[0] != batch || out->shape[0] != batch))) {
    return Fail(ctx, "kiln.openblas.sgemm: shapes do not match a @ b = out: " + shapes);
  }
  constexpr int64_t kMaxInt = INT32_MAX;
  if (m > kMaxInt || n > kMaxInt || k > kMaxInt) return Fail(ctx, "kiln.openblas.sgemm: dimension too large for BLAS");
  const OpenBlasLibrary* lib = Library(ctx);
  if (lib == nullptr) return 1;
  float* pa = F32(a);
  float* pb = F32(b);
  float* pc = F32(out);
  for (int64_t i = 0; i < batch; ++i) {
    if (m == 0 || n == 0) break;
    if (k == 0) {
      for (int64_t j = 0; j < m * n; ++j) pc[i * m * n + j] = 0.0f;
      continue;
    }
    lib->sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, pa + i * m * k, static_cast<int>(k), pb + i * k * n, static_cast<int>(n),
                0.0f, pc + i * m * n, static_cast<int>(n));
  }
  return 0;
}

}  // namespace

void RegisterOpenBlasKernels(vm::BuiltinRegistry& r) { r.RegisterKernel("kiln.openblas.sgemm", "ttt", Sgemm); }

}  // namespace kiln::builtins
