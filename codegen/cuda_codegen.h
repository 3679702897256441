// EmitCudaSource: lowered TIR device kernels -> one CUDA C translation unit.
//
// Input: the device kernels of tir::transform::LowerPrimFunc for a cuda target (after
// split_host_device: calling_conv "device_kernel", parameters the buffers' data handles and
// scalars, buffers flattened to one index, thread_binding loops for the GPU indices). Each
// becomes
//     extern "C" __global__ void __launch_bounds__(threads) NAME(params...)
// with thread_binding loops read from blockIdx / threadIdx (guarded by their extent, since
// a launch dimension is the largest extent bound to that index), serial loops as `for`,
// local and shared allocations of constant size as arrays, DeclBuffer as typed pointers.
//
// Semantics kept from TIR (tir/expr.h), like the CPU emitter: floordiv / floormod round
// toward negative infinity, float min / max propagate NaN, shifts by an amount outside
// [0, bits) shift every bit out, `round` rounds half to even. float16 values are computed
// in float32 and rounded to float16 after every operation, load and cast (cvt.rn.f16.f32
// through inline PTX: no header is needed, so NVRTC compiles the unit without the CUDA
// include folder). An assert that fails in device code traps (the launch then fails with
// the driver's error; device code cannot return a message).
//
// Not supported yet, an InvalidArgument error naming the kernel: vector lanes (Ramp,
// Broadcast; the GPU rules make none), bfloat16, packed sub-byte integers (int4/uint4),
// allocations of symbolic size, ABI intrinsics in device code.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::codegen {

struct CudaKernelSource {
  std::string name;
  // The TIR dtype of each parameter ("handle", "int64", "float32", ...), in order: what
  // the runtime packs each launch argument as.
  std::vector<std::string> param_types;
};

struct CudaSource {
  std::string code;  // the translation unit
  std::vector<CudaKernelSource> kernels;
};

// `kernels` are (symbol, device kernel) pairs; symbols must be C identifiers.
absl::StatusOr<CudaSource> EmitCudaSource(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels);

}  // namespace kiln::codegen
