#include "builtins/cublas_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vm/cuda_device.h"

namespace kiln::builtins {
namespace {

absl::StatusOr<const CublasLibrary*> Open() {
  std::vector<std::string> names;
  if (const char* env = std::getenv("KILN_CUBLAS"); env != nullptr && *env != '\0') names.push_back(env);
  for (const char* n : {"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
                        "/usr/local/cuda/lib64/libcublas.so"}) {
    names.push_back(n);
  }
  void* handle = nullptr;
  std::string tried;
  std::string last_error;
  auto* lib = new CublasLibrary();
  for (const std::string& name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      lib->path = name;
      break;
    }
    absl::StrAppend(&tried, tried.empty() ? "" : ", ", name);
    const char* e = dlerror();
    last_error = e != nullptr ? e : "dlopen failed";
  }
  if (handle == nullptr) {
    delete lib;
    return absl::UnavailableError(absl::StrCat("cuBLAS not found (tried ", tried, "; set KILN_CUBLAS to its path): ",
                                               last_error));
  }
  std::string missing;
  auto sym = [&](auto& fn, const char* name, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (fn == nullptr && required) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
  };
  sym(lib->create, "cublasCreate_v2", true);
  sym(lib->set_stream, "cublasSetStream_v2", true);
  sym(lib->gemm_strided_batched_ex, "cublasGemmStridedBatchedEx", true);
  sym(lib->status_string, "cublasGetStatusString", false);
  if (!missing.empty()) {
    std::string path = lib->path;
    delete lib;
    return absl::UnavailableError(absl::StrCat("cuBLAS (", path, ") lacks ", missing));
  }
  return lib;
}

}  // namespace

absl::StatusOr<const CublasLibrary*> LoadCublas() {
  static const absl::StatusOr<const CublasLibrary*>* loaded = new absl::StatusOr<const CublasLibrary*>(Open());
  return *loaded;
}

std::string CublasStatusText(const CublasLibrary& lib, CublasStatus status) {
  const char* text = lib.status_string != nullptr ? lib.status_string(status) : nullptr;
  if (text == nullptr) return absl::StrCat("cuBLAS status ", status);
  return absl::StrCat(text, " (", status, ")");
}

absl::StatusOr<CublasHandle> CublasHandleFor(int device, void* stream) {
  absl::StatusOr<const CublasLibrary*> lib = LoadCublas();
  if (!lib.ok()) return lib.status();
  // cuBLAS runs on the context current on the calling thread: the device's, also when the
  // handle already exists (another thread may have made a different one current).
  if (absl::Status current = vm::MakeCudaContextCurrent(device); !current.ok()) return current;
  static std::mutex mutex;
  static auto* handles = new std::map<std::pair<int, void*>, CublasHandle>();
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(device, stream);
  if (auto it = handles->find(key); it != handles->end()) return it->second;
  CublasHandle handle = nullptr;
  CublasStatus rc = (*lib)->create(&handle);
  if (rc != kCublasSuccess) {
    return absl::InternalError(absl::StrCat("cublasCreate on cuda:", device, ": ", CublasStatusText(**lib, rc)));
  }
  rc = (*lib)->set_stream(handle, stream);
  if (rc != kCublasSuccess) {
    return absl::InternalError(absl::StrCat("cublasSetStream on cuda:", device, ": ", CublasStatusText(**lib, rc)));
  }
  handles->emplace(key, handle);
  return handle;
}

}  // namespace kiln::builtins
