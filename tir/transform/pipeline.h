// LowerPrimFunc: THE list of TIR passes between a scheduled PrimFunc and an emitter, in
// order (docs/codegen.md says what each guarantees):
//
//   lower_cross_thread_reduction  thread-bound reductions -> partials   lower_cross_thread_reduction.h
//                           + a tree combine in shared memory (GPU)
//   lower_blocks            blocks -> loops, ifs and allocations        lower_blocks.h
//   insert_division_checks  asserts before data-dependent int division   insert_division_checks.h
//   insert_index_checks     asserts before data-dependent buffer indices insert_index_checks.h
//   vectorize_loops         constant-extent vectorized loops -> SIMD     vectorize_loops.h
//   make_kernel_abi         parameters -> (args, num_args) + checks      make_kernel_abi.h
//   flatten_buffers         every access one offset into a 1-D buffer    flatten_buffers.h
//   split_host_device       GPU thread nests -> device kernels launched  split_host_device.h
//   narrow_gpu_indices      int32 index arithmetic in device kernels     narrow_gpu_indices.h
//                           where proven (+ host-checked int32 variants)
//   lower_intrinsics        math intrinsics for the target               lower_intrinsics.h
//
// The function's target is its "target" attribute (tir/target.h), or `target` when it has
// none (the result then carries it). lower_intrinsics runs on the host function and on
// every device kernel. A failing pass's error is returned as it is (it names the argument,
// loop or buffer; the emitter adds the kernel's name).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"
#include "tir/target.h"

namespace kiln::tir::transform {

struct LoweredFunc {
  PrimFunc host;                         // calling_conv = "kernel_abi"
  std::vector<PrimFunc> device_kernels;  // launched by the host's launch_kernel(k, ...)
};

struct LowerOptions {
  // Called after each pass with its name and the (host) function, for --dump-tir style
  // debugging.
  std::function<void(const std::string& pass, const PrimFunc& func)> after_pass;
};

// The pass names, in order.
std::vector<std::string> TirPassNames();

absl::StatusOr<LoweredFunc> LowerPrimFunc(const PrimFunc& func, const Target& target, const LowerOptions& options = {});

}  // namespace kiln::tir::transform
