// EmitSpirvModule: lowered TIR device kernels -> one SPIR-V 1.3 module for Vulkan 1.1.
//
// Input: the device kernels of tir::transform::LowerPrimFunc for a vulkan target (after
// split_host_device: calling_conv "device_kernel", parameters the buffers' data handles and
// scalars, buffers flattened to one index, thread_binding loops for the GPU indices). Each
// becomes a GLCompute entry point named after its symbol, laid out as the Vulkan kernel
// contract says (docs/codegen.md, "Vulkan"):
//  - handle parameter h (h-th among the handles): a storage buffer at set 0, binding h, a
//    Block struct of one runtime array of the element's storage type;
//  - every other parameter: an 8-byte slot of one push-constant block, in parameter order
//    (integers and bools as int64, floats as float64; the kernel narrows them);
//  - LocalSize: the constant extents of the threadIdx.x/y/z loops (1 where unbound).
// thread_binding loops read WorkgroupId / LocalInvocationId under a guard (the launch
// dimension is the largest extent bound to that index); serial loops are structured
// (OpLoopMerge) over a Function variable; local allocations are Function arrays, shared
// ones Workgroup arrays.
//
// Storage and values: bool elements are one byte (0 or 1, as on the CPU) in buffers;
// float16 elements are stored as float16 and computed in float32, rounded to float16 after
// every operation, load and cast (as the CUDA emitter does); integers keep their width.
// Semantics kept from TIR (tir/expr.h) like the other emitters: floordiv / floormod round
// toward negative infinity, float min / max propagate NaN, shifts by an amount outside
// [0, bits) shift every bit out, `round` rounds half to even. Math intrinsics: see
// codegen/spirv_math.h (most written out: drivers' GLSL.std.450 is loose, and 32-bit only).
// A failing assert (an integer division by zero) ends that invocation: no message can leave
// a Vulkan kernel.
//
// Not supported yet, an InvalidArgument error naming the kernel and saying "not supported by
// the SPIR-V code generator yet": vector lanes, bfloat16, packed sub-byte integers,
// allocations of symbolic size, more than 16 scalar parameters (128 bytes of push
// constants).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::codegen {

struct SpirvKernelInfo {
  std::string name;
  // The TIR dtype of each parameter ("handle", "int64", "float32", ...), in order.
  std::vector<std::string> param_types;
};

struct SpirvModule {
  std::string bytes;  // the module's words, little-endian
  std::vector<SpirvKernelInfo> kernels;
};

// `kernels` are (entry point name, device kernel) pairs.
absl::StatusOr<SpirvModule> EmitSpirvModule(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels);

}  // namespace kiln::codegen
