// The instruction-set extensions of the CPU this process runs on, read with cpuid (no LLVM),
// under LLVM's feature names ("avx2", "avx512f", "f16c", ...), so that the compiler can
// record which extensions an executable's kernels were compiled for and the loader can
// refuse an executable the host cannot run, instead of dying of SIGILL in a kernel.
//
// Promises:
// - KnownCpuFeatures() lists every extension this runtime can detect: the ones a compiler
//   may use in ordinary code (SSE to AVX-512, FMA, F16C, BMI, VNNI, AMX, ...). The compiler
//   records only features from this list (codegen/build_executable.cc).
// - HostHasCpuFeature() is true only when the CPU has the extension AND the operating system
//   saves its registers (XCR0 bits for AVX, AVX-512 and AMX state), as LLVM's own host
//   detection does, so an executable compiled with `--mcpu host` always loads on its host.
// - CheckCpuFeatures() is OK when the host has every listed feature; otherwise the error
//   names the CPU the executable was compiled for, every missing feature, and this CPU. A
//   feature this runtime does not know is refused too (a newer compiler's executable).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kiln::vm {

const std::vector<std::string>& KnownCpuFeatures();
bool IsKnownCpuFeature(const std::string& name);
// False for unknown names.
bool HostHasCpuFeature(const std::string& name);
// The processor's brand string ("AMD EPYC 9R14 96-Core Processor"), or "this CPU".
std::string HostCpuDescription();

// `cpu` is the name the kernels were compiled for (e.g. "skylake-avx512"), for the message.
absl::Status CheckCpuFeatures(const std::string& cpu, const std::vector<std::string>& features);

}  // namespace kiln::vm
