// The intrinsics of lowered TIR: Call ops besides the math intrinsics (tir::IsMathIntrinsic),
// which the passes of tir/transform/ introduce and the emitters implement.
//
// Each has a fixed signature (FindIntrinsic): its argument types and its result type. All
// are pure reads or pure math except launch_kernel, which runs device work and is used only
// as `evaluate launch_kernel(...)`. Integer index arguments are int64 so that plain literals
// work in the text format (`tensor_shape(A_tensor, 0)`).
//
// Kernel ABI (vm/kernel_abi.h), on a kernel's `args` (const KilnArg*) and a tensor argument's
// DLTensor pointer (a handle):
//   arg_type_code(args, i) -> int32      the KilnArgTypeCode of argument i
//   arg_int(args, i) -> int64            argument i's int64 payload
//   arg_float(args, i) -> float64        argument i's double payload
//   arg_handle(args, i) -> handle        argument i's pointer payload (a DLTensor* for a tensor)
//   is_null(h) -> bool
//   tensor_data(t) -> handle             data + byte_offset
//   tensor_ndim(t), tensor_device_type(t) -> int32
//   tensor_dtype_code(t), tensor_dtype_bits(t), tensor_dtype_lanes(t) -> int32
//   tensor_shape(t, d) -> int64
//   tensor_stride(t, d, compact) -> int64  strides[d], or `compact` when strides is NULL (a
//                                          compact row-major tensor); strides is read only
//                                          when it is not NULL
// Device work (tir/transform/split_host_device.h):
//   launch_kernel(k, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, args...)
//       -> int32: runs device kernel k (an index into the host function's "device_kernels"
//       attribute) through ctx->launch with those launch dimensions (int64) and arguments
//       (int, float or handle scalars); nonzero when the launch failed (its error is set).
//   address_of(B[i]) -> handle: the address of element i of buffer B (flattened: one
//       index), where the host function passes a device workspace it allocated (an
//       `allocate` around the launches) to a kernel as a buffer argument. Its argument must
//       be a buffer access; nothing is read.
// Inside a GPU kernel (tir/transform/lower_cross_thread_reduction.h):
//   storage_sync() -> int32, used only as `evaluate storage_sync()`: a barrier of the
//       threads of one block (workgroup) that also orders their shared-memory accesses:
//       every shared store before it is visible to every thread of the block after it.
//       Every thread of the block must reach it (never inside a branch that only some
//       threads take). CUDA __syncthreads(); SPIR-V OpControlBarrier at workgroup scope.
// Memory hints:
//   prefetch(B[i...]) -> int32, used only as `evaluate prefetch(B[...])`: asks the CPU to
//       bring the cache line holding that element of B into its caches below L1 (LLVM's
//       prefetch, read, locality 2: L2 on x86), for a copy that will read it soon. Reads
//       and changes nothing, never faults: GPU code generators and the interpreter skip
//       it. The element must lie inside B (tir/schedule/schedule.h, PrefetchNext).
// Math lowered for a target (tir/transform/lower_intrinsics.h), the argument's type in, the
// same type out:
//   fast_exp, fast_log, fast_erf, fast_tanh, fast_sigmoid, fast_expm1, fast_log1p,
//   fast_sin, fast_cos, fast_tan, fast_asin, fast_acos, fast_atan, fast_sinh, fast_cosh,
//   fast_asinh, fast_acosh, fast_atanh                      float32 (any lanes): inline
//       code (codegen/fast_math.h), the same for scalars and vectors
//   libm_tanh, libm_erf, libm_tan, libm_asin, ..., libm_log1p, libm_expm1
//                                                           a C library call per lane
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tir/expr.h"

namespace kiln::tir {

// Values of the kernel ABI that lowered TIR compares against (vm/kernel_abi.h and DLPack;
// codegen static_asserts they agree, since tir/ may not include the runtime's headers).
inline constexpr int kArgTypeTensor = 0;
inline constexpr int kArgTypeInt = 1;
inline constexpr int kArgTypeFloat = 2;
inline constexpr int kArgTypeHandle = 3;
inline constexpr int kDeviceTypeCpu = 1;      // kDLCPU
inline constexpr int kDeviceTypeCuda = 2;     // kDLCUDA
inline constexpr int kDeviceTypeCudaHost = 3; // kDLCUDAHost: pinned host memory, CPU-addressable
inline constexpr int kDeviceTypeVulkan = 7;   // kDLVulkan

struct IntrinsicInfo {
  // How an argument or the result is typed.
  enum class Type : uint8_t {
    kHandle,
    kInt32,
    kInt64,
    kFloat64,
    kBool,
    kFloat32Any,  // float32 of any lanes (argument); the result is then the argument's type
    kFloatAny,    // any float type, any lanes (argument)
    kSameAsArg0,  // result only
    kScalar,      // a scalar int, float or handle (launch_kernel's trailing arguments)
    kBufferElement,  // a buffer access B[i] naming an element, not a read (address_of, prefetch)
  };
  std::string_view name;
  Type result;
  std::vector<Type> args;
  bool variadic = false;  // more kScalar arguments may follow
};

// The intrinsic named `name`, or null.
const IntrinsicInfo* FindIntrinsic(std::string_view name);
// OK when `args` fit the intrinsic's signature; else an error naming the intrinsic and the
// argument (for the parser; the Call constructor KILN_CHECKs it).
absl::Status CheckIntrinsicCall(std::string_view name, const std::vector<PrimExpr>& args);
// The result type of a call that CheckIntrinsicCall accepted.
DataType IntrinsicResultType(const IntrinsicInfo& info, const std::vector<PrimExpr>& args);

}  // namespace kiln::tir
