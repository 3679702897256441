// SplitHostDevice: a GPU function -> a host function that launches device kernels.
//
// Runs after make_kernel_abi and flatten_buffers. For a cpu target nothing moves: a loop
// bound to a GPU thread index is an error naming the loop. For cuda and vulkan targets,
// each outermost loop nest that starts with a thread_binding loop becomes a device kernel:
//  - the device kernel is a PrimFunc whose parameters are one `handle` per buffer the nest
//    uses that was declared outside it (decl_buffer), then the nest's free scalar variables
//    (handles, ints, floats; those of the buffers' shapes included), each in order of first
//    appearance; its body re-declares those buffers on the
//    handles around the nest, which keeps its thread_binding loops (the device emitter maps
//    each to its thread index). It carries the function's target and
//    calling_conv = "device_kernel";
//  - in the host function the nest is replaced by
//        evaluate launch_kernel(k, grid_x, grid_y, grid_z, block_x, block_y, block_z, 0, args...)
//    where k is the kernel's index in SplitResult::device_kernels, each launch dimension is
//    the extent of the nest's loops bound to blockIdx.x/y/z and threadIdx.x/y/z (the maximum
//    when a tag is bound twice, 1 when it is not bound) and the arguments are the kernel's
//    parameters in order (a buffer's argument is its decl_buffer data);
//  - a buffer the nest uses that the host part allocates (an `allocate` outside every nest:
//    an intermediate that one kernel writes and a later one reads, softmax's row maximum)
//    is device workspace: the allocation stays in the host function, whose emitter takes it
//    from ctx->workspace_alloc on the function's device and frees it after the last launch
//    (every early return included), and each kernel using it gets it as an ordinary buffer
//    parameter, its argument `address_of(B[0])`.
// Errors: a thread_binding loop on a cpu target; an unknown thread tag; a launch extent that
// depends on a variable defined inside the nest; a host allocation a kernel uses that is not
// "global" memory (shared or local memory exists only inside one kernel).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir::transform {

inline constexpr char kDeviceKernel[] = "device_kernel";

struct SplitResult {
  PrimFunc host;
  std::vector<PrimFunc> device_kernels;  // launch_kernel(k, ...) runs device_kernels[k]
};

absl::StatusOr<SplitResult> SplitHostDevice(const PrimFunc& func);

}  // namespace kiln::tir::transform
