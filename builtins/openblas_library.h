// OpenBLAS, loaded on first use (dlopen of libopenblas.so.0) rather than linked.
//
// Why not link it: OpenBLAS picks its kernels (its "core type") in a load-time constructor,
// from the CPU it detects or from the OPENBLAS_CORETYPE environment variable. Debian's
// OpenBLAS (0.3.21) does not know AMD's AVX-512 CPUs and falls back to its Haswell kernels,
// about half as fast as its SkylakeX ones there. Loading it ourselves lets us choose before
// that constructor runs, so library calls get OpenBLAS at its best without the user setting
// anything. It also keeps OpenBLAS optional for a runtime that never calls a BLAS kernel:
// only kiln.openblas.* kernels need it, and they report a clear error when it is missing.
//
// What it promises:
//  - LoadOpenBlas() loads the library once per process (thread-safe) and returns the same
//    answer every time: the entry points, or the reason it could not be loaded.
//  - Before loading, when OPENBLAS_CORETYPE is unset and the CPU is an AMD one with AVX-512
//    (F, BW, DQ, VL), it sets OPENBLAS_CORETYPE=SkylakeX in the environment. A value the
//    user set is never changed. If the process already had OpenBLAS loaded (linked by the
//    embedding program), that copy is used as it was initialized.
#pragma once

#include <string>

namespace kiln::builtins {

struct OpenBlasLibrary {
  // cblas_sgemm with the CBLAS enum arguments as ints (CblasRowMajor = 101, NoTrans = 111).
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc) = nullptr;
  void (*set_num_threads)(int threads) = nullptr;  // may be null (not every BLAS has it)
  std::string core_name;    // openblas_get_corename(), e.g. "SkylakeX"; "" when unknown
  std::string core_choice;  // what we did about OPENBLAS_CORETYPE, for diagnostics
};

inline constexpr int kCblasRowMajor = 101;
inline constexpr int kCblasNoTrans = 111;

// The library, or null with *error (when given) saying why it could not be loaded.
const OpenBlasLibrary* LoadOpenBlas(std::string* error = nullptr);

}  // namespace kiln::builtins
