// cuBLAS, loaded on first use (dlopen) rather than linked, like the CUDA driver
// (vm/cuda_device.h): a runtime built with it starts on machines without a GPU or without
// the CUDA toolkit's libraries, and only an executable that calls a kiln.cublas.* kernel
// needs it. That kernel then fails with a status naming what was tried.
//
// What it promises:
//  - LoadCublas() opens the library once per process (thread-safe) and returns the same
//    answer every time: the entry points, or the reason it could not be loaded. KILN_CUBLAS
//    names a file to try first; then libcublas.so, libcublas.so.13, .12, .11 and
//    /usr/local/cuda/lib64/libcublas.so.
//  - CublasHandleFor(device, stream) gives one cuBLAS handle per (CUDA device, stream),
//    created on first use with that device's context current and bound to the stream, and
//    kept for the process (cuBLAS handles are costly to create: they allocate workspace).
//    Calls on one handle must not overlap: the VM calls kernels of one stream in order.
//
// Declared here without cuBLAS's headers (enums as ints, values from cublas_api.h and
// library_types.h, stable across CUDA 11 to 13), so building needs no CUDA toolkit.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kiln::builtins {

using CublasStatus = int;
using CublasHandle = void*;

inline constexpr CublasStatus kCublasSuccess = 0;
inline constexpr int kCublasOpN = 0;
inline constexpr int kCublasOpT = 1;
inline constexpr int kCudaR16F = 2;   // cudaDataType CUDA_R_16F
inline constexpr int kCudaR32F = 0;   // CUDA_R_32F
inline constexpr int kCublasCompute32F = 68;  // CUBLAS_COMPUTE_32F: float accumulation, no TF32
inline constexpr int kCublasGemmDefault = -1;  // CUBLAS_GEMM_DEFAULT: cuBLAS's heuristic

struct CublasLibrary {
  CublasStatus (*create)(CublasHandle*) = nullptr;
  CublasStatus (*set_stream)(CublasHandle, void* stream) = nullptr;
  // cublasGemmStridedBatchedEx: column-major C[i] = alpha op(A[i]) op(B[i]) + beta C[i] for
  // i < batch, A[i] = A + i * stride_a (elements); a stride of 0 repeats one matrix.
  CublasStatus (*gemm_strided_batched_ex)(CublasHandle, int trans_a, int trans_b, int m, int n, int k,
                                          const void* alpha, const void* a, int a_type, int lda, long long stride_a,
                                          const void* b, int b_type, int ldb, long long stride_b, const void* beta,
                                          void* c, int c_type, int ldc, long long stride_c, int batch,
                                          int compute_type, int algo) = nullptr;
  const char* (*status_string)(CublasStatus) = nullptr;  // may be null (cuBLAS before 11.4)
  std::string path;  // the file that was opened
};

// The library, or why it cannot be loaded (Unavailable, one line).
absl::StatusOr<const CublasLibrary*> LoadCublas();

// "CUBLAS_STATUS_INVALID_VALUE (7)", or the number where the library has no names.
std::string CublasStatusText(const CublasLibrary& lib, CublasStatus status);

// The handle for CUDA device `device` bound to `stream` (a CUstream); the device's context is
// made current on the calling thread first.
absl::StatusOr<CublasHandle> CublasHandleFor(int device, void* stream);

}  // namespace kiln::builtins
