// The CUDA device: GPU memory, copies, a stream and kernel launches through the CUDA driver
// API, opened with dlopen("libcuda.so.1") on first use and never linked, so the runtime
// starts on machines without a GPU.
//
// The device table (vm/device.h) knows the kind "cuda" from the start; the first
// GetDevice("cuda:N") opens the driver (cuInit), takes device N's primary context and
// creates one stream for it. Without a driver, or with no such GPU, that is one line:
//     no CUDA driver found (libcuda.so.1): libcuda.so.1: cannot open shared object file ...
//     CUDA device 1 not found: this machine has 1 CUDA device(s)
// Memory comes from cuMemAlloc (256-byte aligned); copies are cuMemcpyHtoDAsync /
// DtoHAsync on the device's stream followed by a stream synchronization (so the host
// buffer may be reused at once); kernels of an executable's device code (vm/device_code.h)
// are loaded with cuModuleLoadData (the cubin of the GPU's architecture, else the newest PTX
// not above it, JIT-compiled by the driver) and run with cuLaunchKernel on the stream.
// CreateTimer gives a pair of CUDA events on the stream (cuEventRecord, cuEventElapsedTime):
// `kiln run --profile` times kernels and library calls (cuBLAS) with them.
#pragma once

#include "absl/status/statusor.h"
#include "vm/device.h"

namespace kiln::vm {

// The factory RegisterDeviceKind holds for kDLCUDA: device `index`, created on first use
// and kept for the life of the process.
absl::StatusOr<Device*> CreateCudaDevice(int index);

// Whether the driver opens and initializes here (no device is created); the error is the
// one-line reason.
absl::Status CudaDriverAvailable();

// Makes device `index`'s primary context current on the calling thread, for a library
// (cuBLAS) that a library kernel calls on the device's stream; an error when the device
// cannot be opened.
absl::Status MakeCudaContextCurrent(int index);

}  // namespace kiln::vm
