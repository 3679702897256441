// ScheduleForGpu: the default GPU schedule rules (cuda, vulkan targets), and the verifier
// that every GPU function passes before code generation.
//
// What it promises:
//  - Like ScheduleForCpu, the rules (tir/schedule_rules/gpu_*.cc, one per kind of block)
//    rewrite only through the primitives of tir/schedule/, so the trace replays on the
//    unscheduled function to a structurally equal result, and the result computes the same
//    values as the input for every value of the symbolic shape variables.
//  - Fused functions first get their elementwise intermediates inlined (as on the CPU).
//  - Each block alone in a chain of plain loops is bound to GPU threads:
//      injective (no reduction): every loop fused into one, split by the threads per block
//        (`threads_per_block`, or the extent rounded up to a warp when it is a smaller
//        constant); the outer part is blockIdx.x, the inner threadIdx.x. A symbolic extent
//        gives a grid of ceil(extent / threads) blocks, the tail guarded by the split's
//        predicate;
//      reductions (row sums, max, min, mean's and norms' sums, softmax's max and sum,
//        dot products): when the update is an associative combine whose init absorbs itself
//        (transform::CrossThreadCombinerOf), or argmax / argmin's pair of position and
//        value (transform::CrossThreadArgCombinerOf), and the row is not a constant shorter than a
//        warp, one block per output element (the spatial loops fused onto blockIdx.x), its
//        threads (a power of two, at most the threads per block, within the shared memory
//        per block) striding the fused reduction loops, combined in shared memory by
//        lower_cross_thread_reduction; a reduction to a scalar is one such block. Otherwise
//        (another combine, short rows) the spatial loops are fused and bound
//        like an elementwise nest, one thread per output element running its reduction
//        serially; a scalar then runs in one thread of one block;
//      matmuls (cpu_rules::IsMatmulLike): a thread block per 64 x 64 output tile, 16 x 16
//        threads (threadIdx.y, threadIdx.x) of 4 x 4 register tiles, the operand tiles of
//        each step of 16 along k staged in shared memory (CacheReadShared; loaded by all
//        the block's threads between barriers, lower_cooperative_copies), sizes shrunk to
//        the target's threads and shared memory (gpu_matmul_shared.cc); fewer than 32 rows
//        (a constant, or at run time: BranchOn on a symbolic row count, in a function of
//        the matmul alone) split k across the threads of a block instead, several outputs
//        per block (gpu_few_rows.cc); a constant column count of at most 4, or tiles that
//        do not fit, get a 4 x 4 register tile per thread read from device memory
//        (gpu_matmul.cc); the reduction rule above when none applies;
//      other sums of activations times a weight (quantized_matmul in q4_0, q4_1, q8_0,
//        whose legalization sums over blocks and positions: no plain matmul; the other
//        formats' single sum over k is one and follows the matmul rules): k split across
//        threads as for few rows (gpu_few_rows.cc), at any row count.
//  - VerifyGpuFunction (run last by ScheduleForGpu, and by the CUDA code generator) rejects
//    before code generation, with an error naming the block, loop or buffer: a store that
//    no thread-bound loop encloses (a block no rule could bind would run on the host and
//    write device memory), a threadIdx extent that is not a constant, threads per block or
//    shared memory per block above the target's limits, shared or local memory allocated
//    outside the thread nests (global memory there is an intermediate between kernels,
//    which split_host_device makes device workspace), and a buffer read outside the thread
//    nests (host code cannot read device memory: a data-dependent check before the
//    kernels, say). It checks the function as lower_cross_thread_reduction leaves it, so
//    the shared buffers of cross-thread reductions count, and a thread-bound reduction loop
//    that cannot be combined across threads is an error.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tir/stmt.h"
#include "tir/target.h"

namespace kiln::tir {

struct GpuScheduleOptions {
  int threads_per_block = 256;  // at most the target's max_threads_per_block
  int warp_size = 32;
  int shared_memory_per_block = 16 * 1024;  // bytes; the target's max_shared_memory_per_block
};

// The options for a GPU target (its limits cap the threads per block).
GpuScheduleOptions GpuScheduleOptionsFor(const Target& target);

// `trace`, when given, receives the schedule's trace as text (Trace::Parse + Replay on the
// unscheduled function gives the result). The result passes VerifyGpuFunction for
// `target`, or the error says what stays unbound or too large.
absl::StatusOr<PrimFunc> ScheduleForGpu(const PrimFunc& func, const Target& target, std::string* trace = nullptr);

// The checks above, on a scheduled (not yet lowered) PrimFunc, for a cuda or vulkan target.
absl::Status VerifyGpuFunction(const PrimFunc& func, const Target& target);

}  // namespace kiln::tir
