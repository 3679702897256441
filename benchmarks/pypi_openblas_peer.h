// The newest OpenBLAS reachable as a second benchmark peer: the one PyPI's numpy bundles
// (numpy.libs/libscipy_openblas64_-<hash>.so), loaded by path with dlopen.
//
// Why a second peer: Debian's OpenBLAS (0.3.21) is years older; the wheel's is current and
// much faster on some shapes (the M = 1 GEMV streams its weight about 2.5x faster), so a
// ratio against Debian's alone flatters Kiln. benchmarks/matmul_bench.sh finds the file
// through a virtual environment of its own and passes its path.
//
// The wheel's build renames its symbols so it cannot clash with another BLAS in the same
// process: `scipy_` in front and `64_` behind, with 64-bit integers (ILP64) for sizes and
// leading dimensions (`nm -D` on the file lists them). Older wheels used `cblas_sgemm64_`
// without the prefix. Both spellings are tried; the CBLAS enum arguments stay `int`.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln::bench {

struct PypiOpenBlas {
  void (*sgemm)(int order, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) = nullptr;
  // cblas_sgemv, for single rows (numpy calls it there; sgemm is much slower at M = 1).
  void (*sgemv)(int order, int trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda, const float* x,
                int64_t incx, float beta, float* y, int64_t incy) = nullptr;
  std::string core_name;
};

// Loads the library at `path`; false with *error saying why (missing file, no sgemm symbol).
// Sets its thread count to `threads` (the wheel's pool is its own, separate from Debian's).
inline bool LoadPypiOpenBlas(const std::string& path, int threads, PypiOpenBlas* out, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + path + ": " + (why ? why : "unknown error");
    return false;
  }
  auto find = [&](const char* const* names) -> void* {
    for (const char* const* n = names; *n != nullptr; ++n) {
      if (void* sym = dlsym(handle, *n)) return sym;
    }
    return nullptr;
  };
  static const char* const kSgemm[] = {"scipy_cblas_sgemm64_", "cblas_sgemm64_", nullptr};
  static const char* const kSgemv[] = {"scipy_cblas_sgemv64_", "cblas_sgemv64_", nullptr};
  static const char* const kThreads[] = {"scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", nullptr};
  static const char* const kCore[] = {"scipy_openblas_get_corename64_", "openblas_get_corename64_", nullptr};
  out->sgemm = reinterpret_cast<decltype(out->sgemm)>(find(kSgemm));
  if (out->sgemm == nullptr) {
    *error = path + " has no 64-bit-index cblas_sgemm (looked for scipy_cblas_sgemm64_, cblas_sgemm64_)";
    return false;
  }
  out->sgemv = reinterpret_cast<decltype(out->sgemv)>(find(kSgemv));
  if (out->sgemv == nullptr) {
    *error = path + " has no 64-bit-index cblas_sgemv (looked for scipy_cblas_sgemv64_, cblas_sgemv64_)";
    return false;
  }
  if (auto set_threads = reinterpret_cast<void (*)(int)>(find(kThreads))) set_threads(threads);
  if (auto core = reinterpret_cast<const char* (*)()>(find(kCore))) out->core_name = core();
  return true;
}

}  // namespace kiln::bench
