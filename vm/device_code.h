// DeviceCode: the kernels of one GPU target carried in an executable (section 10, "device
// code", docs/vm.md), and the choice of which of its binaries a device loads.
//
// A CUDA executable holds, per architecture it was compiled for, the PTX (JIT-compiled by
// the driver for that GPU or a later one) and the cubin (loaded as is on exactly that
// architecture). The host functions in the CPU object launch kernel k through ctx->launch,
// k indexing `kernels`; each kernel records its parameter types, so the device packs the
// launch arguments (KilnArg: int64 / double / pointer) into the sizes the kernel expects.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::vm {

struct DeviceKernelInfo {
  std::string name;
  // TIR dtype names: "handle" (a device pointer), "int32", "int64", "float32", "float64",
  // "bool", ... ("float16" scalars are passed as float32).
  std::vector<std::string> param_types;
};

struct DeviceBinary {
  std::string format;  // "ptx" or "cubin"
  std::string arch;    // "sm_90"
  std::string bytes;
};

struct DeviceCode {
  std::string kind;  // the target kind: "cuda"
  std::vector<DeviceKernelInfo> kernels;
  std::vector<DeviceBinary> binaries;
  std::string source;  // the generated source (CUDA C), for diagnostics
};

// The binary a device of compute capability `major`.`minor` should load: the cubin of exactly
// its architecture, else the PTX of the newest architecture not above it; nullopt when none
// fits (the executable was compiled only for newer GPUs).
std::optional<size_t> ChooseBinary(const DeviceCode& code, int major, int minor);

}  // namespace kiln::vm
