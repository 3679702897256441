// DispatchLibraries: rewrites operator calls that a vendor library does well into
// destination-passing library calls, before legalize turns the rest into generated kernels.
// One function may then mix library calls and generated kernels; both compute the same thing.
//
//   %h0 = R.matmul(x, w0)            // x: Tensor((b, 784), float32), w0: Tensor((784, 256), float32)
// becomes
//   %h0 = R.call_dps_library(R.extern("kiln.openblas.sgemm"), (x, w0), out_sinfo=Tensor((b, 256), float32))
//
// The rule (library openblas): an R.matmul is rewritten when both operands and the result
// are float32 tensors of rank 2, the result shape is known, the constant work per output
// row, k * n (the contracted and the column extents of the right operand), is at least
// `min_row_work` (default 64 * 64 = 4096: below it the library's call overhead dominates),
// and — by default (`openblas_by_evidence`) — OpenBLAS measured clearly faster than the
// generated kernel for the matmul's shape class on the target (its vector width and thread
// count, few constant rows or many, the weight's size; library_dispatch_evidence.h). With
// `openblas_by_evidence` false (`kiln compile --libs openblas`) every such matmul goes to
// OpenBLAS. Symbolic k or n never dispatch; the batch extent m may be symbolic (it counts
// as many rows). Everything else passes through unchanged.
//
// The library kernel (builtins/openblas_kernels.cc) is resolved by name when the
// executable is loaded; lower_call_tir allocates its output and VM codegen declares it as a
// library kernel.
//
// The rules are per target: those above and below for cpu, cuBLAS for cuda, none for vulkan.
//
// The rule (library cublas, target cuda): an R.matmul is rewritten to
// kiln.cublas.gemm_XY (builtins/cublas_kernels.cc) when both operands are float32, or both
// float16 with a float16 or float32 result (products summed in float32), every shape has a
// known rank of 2 or more, the work per output row k * n is at least `min_row_work` (a
// symbolic k or n counts as large: sequence lengths), and each operand has the result's
// leading (batch) extents or only extents of 1 (one strided batched GEMM). An operand bound
// in the function to R.permute_dims swapping its last two axes is read transposed in place
// (X or Y = 't', the permute_dims left to dead_code_elimination), so a linear layer's
// matmul(x, permute_dims(w)) runs no transpose kernel. The other operators of the function
// stay generated kernels: one CUDA function mixes both, on the same stream.
//
//   %y = R.matmul(x, %wt)   // %wt = R.permute_dims(w, axes=[1, 0]), w: Tensor((1024, 512), float16)
// becomes
//   %y = R.call_dps_library(R.extern("kiln.cublas.gemm_nt"), (x, w), out_sinfo=...)
//
// The rule (library quantized): every R.quantized_matmul with a known result shape becomes
// a call of kiln.cpu.quantized_matmul_<format> (builtins/quantized_matmul_kernels.h), which
// decodes the blocks inside a dot-product kernel; `--libs none` keeps the generated kernel.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/target.h"

namespace kiln::relax {

struct LibraryOptions {
  bool openblas = true;
  bool quantized = true;  // quantized_matmul -> kiln.cpu.quantized_matmul_<format>
  // The library kernels quantize the activations to 8 bits per block as llama.cpp does (its
  // numbers, token for token); false: float32 activations (kiln.cpu.quantized_matmul_f32x_<format>).
  bool quantize_activations = true;
  int64_t min_row_work = 64 * 64;
  // openblas: only matmuls whose shape class measured faster in OpenBLAS (the default);
  // false: every matmul the rule above takes.
  bool openblas_by_evidence = true;
  bool cublas = true;  // target cuda: matmul -> kiln.cublas.gemm_XY
};

// The name of the OpenBLAS matmul kernel that matching matmuls are rewritten to call.
inline constexpr const char* kOpenBlasSgemm = "kiln.openblas.sgemm";
// quantized_matmul calls are rewritten to this prefix + their format ("q4_1").
inline constexpr const char* kQuantizedMatmulPrefix = "kiln.cpu.quantized_matmul_";
inline constexpr const char* kQuantizedMatmulFloatActivationsPrefix = "kiln.cpu.quantized_matmul_f32x_";
// ... with the attribute summation = "blocks" (and 8-bit activations).
inline constexpr const char* kQuantizedMatmulByBlockPrefix = "kiln.cpu.quantized_matmul_by_block_";
// ... with summation = "tiles" (and 8-bit activations).
inline constexpr const char* kQuantizedMatmulTiledPrefix = "kiln.cpu.quantized_matmul_tiled_";
// cuBLAS matmul kernels: this prefix + 'n' or 't' for the left operand, then the right one.
inline constexpr const char* kCublasGemmPrefix = "kiln.cublas.gemm_";

// `target` is the module's (PipelineOptions::target): it picks the rules.
absl::StatusOr<IRModule> DispatchLibraries(const IRModule& module, const LibraryOptions& options,
                                           const tir::Target& target = tir::Target());

}  // namespace kiln::relax
