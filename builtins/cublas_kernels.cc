// Library kernels backed by cuBLAS, written against the kernel ABI (vm/kernel_abi.h) like
// generated kernels, so that relax/transform/dispatch_libraries.h can swap a matmul of a
// cuda function for one of them and the VM calls it exactly as it calls the function's
// generated kernels: on ctx->device's stream (ctx->stream), in order with them.
//
//   kiln.cublas.gemm_XY(a, b, out) "ttt": out = op_X(a) @ op_Y(b), X and Y each 'n' (the
//   tensor is the operand) or 't' (the tensor holds the operand with its last two axes
//   swapped: a [.., k, m], b [.., n, k]). out is [.., m, n]; its leading (batch) axes are
//   one strided batched GEMM: each operand either has the same leading axes as out or only
//   axes of extent 1 (none for a 2-D operand), which repeats it across the batch (stride 0).
//   a and b are float32 or both float16; out is float32, or float16 for float16 operands.
//   Products are summed in float32 (CUBLAS_COMPUTE_32F, no TF32), as the reference and the
//   generated kernels do. Every tensor is compact row-major on the call's CUDA device.
//
// Row-major to cuBLAS's column-major: a row-major [r, c] matrix is the column-major [c, r]
// one, so out = A B is computed as out^T = B^T A^T with the operands swapped.
#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "builtins/cublas_library.h"
#include "builtins/default_builtins.h"
#include "builtins/kernel_tensor_checks.h"
#include "vm/device.h"

namespace kiln::builtins {
namespace {

int32_t Fail(KilnCallContext* ctx, const std::string& message) {
  ctx->set_error(ctx, message.c_str());
  return 1;
}

std::string ShapeText(const DLTensor* t) {
  std::string s = "[";
  for (int i = 0; i < t->ndim; ++i) absl::StrAppend(&s, i ? ", " : "", t->shape[i]);
  return s + "]";
}

// CUDA_R_32F / CUDA_R_16F, or -1 for any other dtype.
int CudaDataType(const DLTensor* t) {
  if (t->dtype.code != kDLFloat || t->dtype.lanes != 1) return -1;
  if (t->dtype.bits == 32) return kCudaR32F;
  if (t->dtype.bits == 16) return kCudaR16F;
  return -1;
}

// The operand's matrices per batch step: m * k elements when its leading axes are out's,
// 0 when they are all 1 (repeated), -1 when neither.
int64_t BatchStride(const DLTensor* t, const DLTensor* out) {
  const int lead = t->ndim - 2;
  const int out_lead = out->ndim - 2;
  int64_t product = 1;
  for (int i = 0; i < lead; ++i) product *= t->shape[i];
  const int64_t matrix = t->shape[t->ndim - 2] * t->shape[t->ndim - 1];
  if (product == 1) return 0;
  if (lead != out_lead) return -1;
  for (int i = 0; i < lead; ++i) {
    if (t->shape[i] != out->shape[i]) return -1;
  }
  return matrix;
}

template <bool kTransA, bool kTransB>
int32_t Gemm(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  const std::string name = absl::StrCat("kiln.cublas.gemm_", kTransA ? "t" : "n", kTransB ? "t" : "n");
  if (num_args != 3) return Fail(ctx, name + " takes (a, b, out)");
  const DLTensor* a = args[0].value.tensor;
  const DLTensor* b = args[1].value.tensor;
  const DLTensor* out = args[2].value.tensor;
  if (ctx->device.device_type != kDLCUDA) {
    return Fail(ctx, absl::StrCat(name, " runs on a CUDA device, not ", vm::DeviceName(ctx->device),
                                  " (compile with --target cuda and run with --device cuda)"));
  }
  for (const DLTensor* t : {a, b, out}) {
    if (t->device.device_type != kDLCUDA || t->device.device_id != ctx->device.device_id) {
      return Fail(ctx, absl::StrCat(name, ": a tensor is on ", vm::DeviceName(t->device), ", not ",
                                    vm::DeviceName(ctx->device)));
    }
  }
  const std::string shapes = absl::StrCat("a ", ShapeText(a), ", b ", ShapeText(b), ", out ", ShapeText(out));
  const int a_type = CudaDataType(a), b_type = CudaDataType(b), out_type = CudaDataType(out);
  if (a_type < 0 || a_type != b_type || out_type < 0 || (a_type == kCudaR32F && out_type != kCudaR32F)) {
    return Fail(ctx, name + " needs float32 operands and result, or float16 operands and a float16 or float32 result");
  }
  if (!IsCompactRowMajor(a) || !IsCompactRowMajor(b) || !IsCompactRowMajor(out)) {
    return Fail(ctx, name + " needs compact row-major tensors");
  }
  if (a->ndim < 2 || b->ndim < 2 || out->ndim < 2) {
    return Fail(ctx, name + " needs operands of rank 2 or more, got " + shapes);
  }
  const int64_t m = kTransA ? a->shape[a->ndim - 1] : a->shape[a->ndim - 2];
  const int64_t k = kTransA ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
  const int64_t kb = kTransB ? b->shape[b->ndim - 1] : b->shape[b->ndim - 2];
  const int64_t n = kTransB ? b->shape[b->ndim - 2] : b->shape[b->ndim - 1];
  if (kb != k || out->shape[out->ndim - 2] != m || out->shape[out->ndim - 1] != n) {
    return Fail(ctx, absl::StrCat(name, ": shapes do not match ", kTransA ? "a^T" : "a", " @ ", kTransB ? "b^T" : "b",
                                  " = out: ", shapes));
  }
  int64_t batch = 1;
  for (int i = 0; i < out->ndim - 2; ++i) batch *= out->shape[i];
  const int64_t stride_a = BatchStride(a, out);
  const int64_t stride_b = BatchStride(b, out);
  if (stride_a < 0 || stride_b < 0) {
    return Fail(ctx, absl::StrCat(name, ": each operand's leading axes must be out's or all 1: ", shapes));
  }
  constexpr int64_t kMaxInt = INT32_MAX;
  if (m > kMaxInt || n > kMaxInt || k > kMaxInt || batch > kMaxInt) {
    return Fail(ctx, absl::StrCat(name, ": a dimension exceeds cuBLAS's int range: ", shapes));
  }
  if (m == 0 || n == 0 || batch == 0) return 0;
  absl::StatusOr<const CublasLibrary*> lib = LoadCublas();
  if (!lib.ok()) return Fail(ctx, absl::StrCat(name, ": ", lib.status().message()));
  absl::StatusOr<CublasHandle> handle = CublasHandleFor(ctx->device.device_id, ctx->stream);
  if (!handle.ok()) return Fail(ctx, absl::StrCat(name, ": ", handle.status().message()));
  auto data = [](const DLTensor* t) { return static_cast<char*>(t->data) + t->byte_offset; };
  // Column-major view: out^T [n, m] = op(b)^T [n, k] op(a)^T [k, m]; the leading dimension
  // of each row-major tensor is its last extent.
  const int lda = static_cast<int>(std::max<int64_t>(1, kTransA ? m : k));
  const int ldb = static_cast<int>(std::max<int64_t>(1, kTransB ? k : n));
  const float alpha = 1.0f, beta = 0.0f;  // beta 0: out is written, never read (k == 0 gives zeros)
  CublasStatus rc = (*lib)->gemm_strided_batched_ex(
      *handle, kTransB ? kCublasOpT : kCublasOpN, kTransA ? kCublasOpT : kCublasOpN, static_cast<int>(n),
      static_cast<int>(m), static_cast<int>(k), &alpha, data(b), b_type, ldb, stride_b, data(a), a_type, lda, stride_a,
      &beta, data(out), out_type, static_cast<int>(n), m * n, static_cast<int>(batch), kCublasCompute32F,
      kCublasGemmDefault);
  if (rc != kCublasSuccess) {
    return Fail(ctx, absl::StrCat(name, ": cublasGemmStridedBatchedEx (", shapes, "): ", CublasStatusText(**lib, rc)));
  }
  return 0;
}

}  // namespace

void RegisterCublasKernels(vm::BuiltinRegistry& r) {
  r.RegisterKernel("kiln.cublas.gemm_nn", "ttt", Gemm<false, false>);
  r.RegisterKernel("kiln.cublas.gemm_nt", "ttt", Gemm<false, true>);
  r.RegisterKernel("kiln.cublas.gemm_tn", "ttt", Gemm<true, false>);
  r.RegisterKernel("kiln.cublas.gemm_tt", "ttt", Gemm<true, true>);
}

}  // namespace kiln::builtins
