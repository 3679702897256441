// NVRTC: CUDA C -> PTX and cubin at compile time, with the library opened at run time.
//
// libnvrtc is never linked: CompileCuda dlopens it on first use (KILN_NVRTC names a file to
// try first; then libnvrtc.so, the versioned names of CUDA 13 and 12, and
// /usr/local/cuda/lib64/libnvrtc.so), so the compiler and every tool start on machines
// without the CUDA toolkit and only compiling for cuda needs it; the error then says what
// was tried. For each architecture ("sm_80", "sm_90", ...) the unit is compiled twice:
// for the virtual architecture (compute_XX: PTX, which the driver JIT-compiles for that GPU
// and later ones) and for the real one (sm_XX: a cubin, which NVRTC produces by running
// ptxas, so every kernel is also checked by ptxas). Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::codegen {

struct CudaBinary {
  std::string format;  // "ptx" or "cubin"
  std::string arch;    // "sm_90": the architecture it was compiled for
  std::string bytes;
};

// Whether NVRTC can be opened here (for tests that skip without the toolkit); the error
// says why not.
absl::Status NvrtcAvailable();

// A PTX and a cubin per architecture (each "sm_NN", or with a suffix: "sm_90a"), in order.
// A compile error returns NVRTC's log (with the source's line numbers) in the message. An
// architecture that is no sm_NN, or that this NVRTC does not compile for (sm_20; NVRTC 13
// starts at sm_75), is an InvalidArgument naming the ones it does: the user's -arch.
absl::StatusOr<std::vector<CudaBinary>> CompileCuda(const std::string& source, const std::vector<std::string>& archs);

}  // namespace kiln::codegen
