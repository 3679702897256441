#include "codegen/nvrtc_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::codegen {

namespace {

// The few NVRTC entry points used, declared here so that no CUDA header is needed to build.
using nvrtcProgram = void*;
using nvrtcResult = int;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct Nvrtc {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  // Optional (NVRTC 11.2 on): the architectures this NVRTC compiles for, as numbers (90).
  nvrtcResult (*GetNumSupportedArchs)(int*);
  nvrtcResult (*GetSupportedArchs)(int*);
};

constexpr nvrtcResult kNvrtcErrorInvalidOption = 5;

// Opened once per process; the error is kept so every caller gets the same line.
const absl::StatusOr<Nvrtc>& Library() {
  static const absl::StatusOr<Nvrtc>* library = [] {
    std::vector<std::string> names;
    if (const char* env = std::getenv("KILN_NVRTC"); env != nullptr && *env) names.push_back(env);
    for (const char* n : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"}) {
      names.push_back(n);
    }
    void* handle = nullptr;
    std::string last_error;
    for (const std::string& n : names) {
      handle = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
      const char* e = dlerror();
      last_error = e ? e : "unknown error";
    }
    if (handle == nullptr) {
      return new absl::StatusOr<Nvrtc>(absl::UnavailableError(
          absl::StrCat("NVRTC not found (tried ", absl::StrJoin(names, ", "), "; set KILN_NVRTC to its path): ",
                       last_error)));
    }
    Nvrtc n{};
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (fn == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    };
    sym(n.GetErrorString, "nvrtcGetErrorString");
    sym(n.Version, "nvrtcVersion");
    sym(n.CreateProgram, "nvrtcCreateProgram");
    sym(n.DestroyProgram, "nvrtcDestroyProgram");
    sym(n.CompileProgram, "nvrtcCompileProgram");
    sym(n.GetProgramLogSize, "nvrtcGetProgramLogSize");
    sym(n.GetProgramLog, "nvrtcGetProgramLog");
    sym(n.GetPTXSize, "nvrtcGetPTXSize");
    sym(n.GetPTX, "nvrtcGetPTX");
    sym(n.GetCUBINSize, "nvrtcGetCUBINSize");
    sym(n.GetCUBIN, "nvrtcGetCUBIN");
    n.GetNumSupportedArchs = reinterpret_cast<nvrtcResult (*)(int*)>(dlsym(handle, "nvrtcGetNumSupportedArchs"));
    n.GetSupportedArchs = reinterpret_cast<nvrtcResult (*)(int*)>(dlsym(handle, "nvrtcGetSupportedArchs"));
    if (!missing.empty()) {
      return new absl::StatusOr<Nvrtc>(absl::UnavailableError(absl::StrCat("NVRTC lacks ", missing)));
    }
    return new absl::StatusOr<Nvrtc>(n);
  }();
  return *library;
}

// One compilation for `arch_option` ("compute_90" or "sm_90", from the user's `user_arch`);
// the PTX or cubin bytes.
absl::StatusOr<std::string> CompileOnce(const Nvrtc& nv, const std::string& source, const std::string& user_arch,
                                        const std::string& arch_option, bool cubin) {
  nvrtcProgram program = nullptr;
  nvrtcResult rc = nv.CreateProgram(&program, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr);
  if (rc != kNvrtcSuccess) return absl::InternalError(absl::StrCat("nvrtcCreateProgram: ", nv.GetErrorString(rc)));
  std::string arch = absl::StrCat("--gpu-architecture=", arch_option);
  const char* options[] = {arch.c_str(), "--std=c++17", "-default-device"};
  rc = nv.CompileProgram(program, 3, options);
  std::string log;
  size_t log_size = 0;
  if (nv.GetProgramLogSize(program, &log_size) == kNvrtcSuccess && log_size > 1) {
    log.resize(log_size);
    nv.GetProgramLog(program, log.data());
    log.resize(log_size - 1);
  }
  absl::StatusOr<std::string> out;
  if (rc == kNvrtcErrorInvalidOption || absl::StartsWith(log, "Command-line error")) {
    // The other options are fixed: the architecture (the user's -arch) is what NVRTC refused
    // (an unknown number, or a suffix the number lacks: sm_80a).
    int major = 0, minor = 0;
    nv.Version(&major, &minor);
    const std::string first_line = log.substr(0, log.find('\n'));
    out = absl::InvalidArgumentError(absl::StrCat("CUDA architecture '", user_arch, "' is not one NVRTC ", major, ".",
                                                  minor, " compiles for (", arch_option, ": ",
                                                  first_line.empty() ? nv.GetErrorString(rc) : first_line, ")"));
  } else if (rc != kNvrtcSuccess) {
    out = absl::InternalError(absl::StrCat("NVRTC failed to compile the generated CUDA C for ", arch_option, " (",
                                           nv.GetErrorString(rc), "; a bug in Kiln's CUDA code generator):\n", log));
  } else {
    size_t size = 0;
    std::string bytes;
    rc = cubin ? nv.GetCUBINSize(program, &size) : nv.GetPTXSize(program, &size);
    if (rc == kNvrtcSuccess) {
      bytes.resize(size);
      rc = cubin ? nv.GetCUBIN(program, bytes.data()) : nv.GetPTX(program, bytes.data());
    }
    if (rc != kNvrtcSuccess) {
      out = absl::InternalError(absl::StrCat("NVRTC gave no ", cubin ? "cubin" : "PTX", " for ", arch_option, ": ",
                                             nv.GetErrorString(rc)));
    } else {
      if (!cubin && !bytes.empty() && bytes.back() == '\0') bytes.pop_back();
      out = std::move(bytes);
    }
  }
  nv.DestroyProgram(&program);
  return out;
}

}  // namespace

absl::Status NvrtcAvailable() { return Library().status(); }

absl::StatusOr<std::vector<CudaBinary>> CompileCuda(const std::string& source, const std::vector<std::string>& archs) {
  const absl::StatusOr<Nvrtc>& nv = Library();
  if (!nv.ok()) return nv.status();
  std::vector<CudaBinary> binaries;
  for (const std::string& arch : archs) {
    // sm_NN, optionally with a letter suffix (sm_90a).
    const std::string number = arch.substr(std::min<size_t>(arch.size(), 3));
    const size_t digits = std::min(number.find_first_not_of("0123456789"), number.size());
    int value = 0;
    if (!absl::StartsWith(arch, "sm_") || digits < 2 || number.size() - digits > 1 ||
        (digits < number.size() && !absl::ascii_isalpha(number.back())) ||
        !absl::SimpleAtoi(number.substr(0, digits), &value)) {
      return absl::InvalidArgumentError(absl::StrCat("CUDA architecture '", arch, "': expected sm_NN such as sm_90"));
    }
    if (nv->GetNumSupportedArchs != nullptr && nv->GetSupportedArchs != nullptr) {
      int count = 0;
      std::vector<int> supported;
      if (nv->GetNumSupportedArchs(&count) == kNvrtcSuccess && count > 0) {
        supported.resize(static_cast<size_t>(count));
        if (nv->GetSupportedArchs(supported.data()) != kNvrtcSuccess) supported.clear();
      }
      if (!supported.empty() && std::find(supported.begin(), supported.end(), value) == supported.end()) {
        int major = 0, minor = 0;
        nv->Version(&major, &minor);
        return absl::InvalidArgumentError(
            absl::StrCat("CUDA architecture '", arch, "' is not one NVRTC ", major, ".", minor, " compiles for (sm_",
                         absl::StrJoin(supported, ", sm_"), ")"));
      }
    }
    absl::StatusOr<std::string> ptx = CompileOnce(*nv, source, arch, "compute_" + number, /*cubin=*/false);
    if (!ptx.ok()) return ptx.status();
    binaries.push_back({"ptx", arch, *std::move(ptx)});
    absl::StatusOr<std::string> cubin = CompileOnce(*nv, source, arch, arch, /*cubin=*/true);
    if (!cubin.ok()) return cubin.status();
    binaries.push_back({"cubin", arch, *std::move(cubin)});
  }
  return binaries;
}

}  // namespace kiln::codegen
