// OpenBLAS as the benchmarks' peer, at its best on this machine.
//
// The product respects an OPENBLAS_CORETYPE the user set (builtins/openblas_library.h). A
// benchmark's peer must be measured at its best instead: on a CPU with AVX-512 it asks for
// OpenBLAS's SkylakeX kernels even when the environment says otherwise (these machines
// export OPENBLAS_CORETYPE=Haswell, which halves sgemm), unless --openblas-core=NAME picks
// one. Call before anything else loads OpenBLAS: the core type is read once, at load.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "builtins/openblas_library.h"

namespace kiln::bench {

// `requested`: the --openblas-core flag's value, or "" for the best this CPU supports.
// Exits with a message when OpenBLAS cannot be loaded: a benchmark without its peer is
// meaningless.
inline const builtins::OpenBlasLibrary& LoadOpenBlasPeer(const std::string& requested, int threads) {
  std::string core = requested;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (core.empty() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    core = "SkylakeX";
  }
#endif
  if (!core.empty()) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  std::string error;
  const builtins::OpenBlasLibrary* lib = builtins::LoadOpenBlas(&error);
  if (lib == nullptr) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    std::exit(1);
  }
  if (lib->set_num_threads != nullptr) lib->set_num_threads(threads);
  std::printf("OpenBLAS peer: core %s, %d threads\n", lib->core_name.empty() ? "unknown" : lib->core_name.c_str(),
              threads);
  return *lib;
}

// Debian's cblas_sgemv, from the copy LoadOpenBlas loaded (RTLD_NOLOAD finds it without
// loading another); null when absent. A caller with one row calls it rather than sgemm, as
// numpy does: OpenBLAS's sgemm is much slower than its sgemv there.
using SgemvFn = void (*)(int order, int trans, int m, int n, float alpha, const float* a, int lda, const float* x,
                         int incx, float beta, float* y, int incy);
inline constexpr int kCblasTrans = 112;
inline SgemvFn DebianSgemv() {
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return reinterpret_cast<SgemvFn>(dlsym(handle, "cblas_sgemv"));
  }
  return nullptr;
}

}  // namespace kiln::bench
