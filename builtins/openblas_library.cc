#include "builtins/openblas_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln::builtins {
namespace {

// The case Debian's OpenBLAS gets wrong (see the header). Intel CPUs with AVX-512 are
// detected correctly and left to OpenBLAS.
bool IsAmdWithAvx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

std::string ChooseCoreType() {
  if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set != nullptr && set[0] != '\0') {
    return std::string("OPENBLAS_CORETYPE=") + set + " (set by the user)";
  }
  if (!IsAmdWithAvx512()) return "chosen by OpenBLAS";
  // Before the library's constructor reads it; overwrite = 0 in case another thread of the
  // embedding program set it meanwhile.
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  return "OPENBLAS_CORETYPE=SkylakeX (AMD CPU with AVX-512)";
}

struct Loaded {
  OpenBlasLibrary library;
  std::string error;
  bool ok = false;
};

Loaded Load() {
  Loaded result;
  result.library.core_choice = ChooseCoreType();
  void* handle = nullptr;
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
  }
  if (handle == nullptr) {
    const char* why = dlerror();
    result.error = std::string("OpenBLAS could not be loaded (install Debian's libopenblas0): ") +
                   (why != nullptr ? why : "libopenblas.so.0 not found");
    return result;
  }
  // The handle is kept for the life of the process: kernels may run until exit.
  OpenBlasLibrary& lib = result.library;
  lib.sgemm = reinterpret_cast<decltype(lib.sgemm)>(dlsym(handle, "cblas_sgemm"));
  lib.set_num_threads = reinterpret_cast<decltype(lib.set_num_threads)>(dlsym(handle, "openblas_set_num_threads"));
  using CoreNameFn = char* (*)();
  if (auto core = reinterpret_cast<CoreNameFn>(dlsym(handle, "openblas_get_corename")); core != nullptr) {
    if (const char* name = core(); name != nullptr) lib.core_name = name;
  }
  if (lib.sgemm == nullptr) {
    result.error = "the loaded OpenBLAS has no cblas_sgemm";
    return result;
  }
  result.ok = true;
  return result;
}

}  // namespace

const OpenBlasLibrary* LoadOpenBlas(std::string* error) {
  static const Loaded* loaded = [] { return new Loaded(Load()); }();  // never destroyed: kernels may run at exit
  if (!loaded->ok) {
    if (error != nullptr) *error = loaded->error;
    return nullptr;
  }
  return &loaded->library;
}

}  // namespace kiln::builtins
