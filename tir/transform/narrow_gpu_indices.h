// NarrowGpuIndices: 32-bit index arithmetic in device kernels where it is proven safe.
//
// Kiln's TIR computes indices in int64 (shapes are int64). On GPUs 64-bit integer
// arithmetic is emulated with several 32-bit instructions, and 64-bit division / remainder
// (every floordiv / floormod of a fused loop) is a long software routine: an elementwise
// kernel spent most of its time there. TVM's GPU users expect int32 indexing; this pass
// gives it wherever the value range allows.
//
// What it promises, per device kernel (calling_conv device_kernel, after split_host_device):
//  - an int64 scalar expression is rewritten to int32 only when it and every int64
//    subexpression it is computed from lie in [-2^31, 2^31) by const_int_bound (tir/
//    const_int_bound.h), with loop variables bounded by their loops and scalar parameters by
//    their declared bounds (`where b <= 4096`) or by the caps below; so the 32-bit result
//    equals the 64-bit one, and what the kernel computes is unchanged;
//  - narrowed: loop variables (serial and thread-bound), `let` variables, buffer indices,
//    comparisons, and the arithmetic between them; an int64 value the kernel stores or
//    passes on (an int64 output, a cast to float) is widened back where it is used;
//  - scalar int64 parameters keep their type (the kernel ABI pushes 64-bit integers); a
//    narrowed use reads a 32-bit copy made once at the top of the kernel;
//  - loads of int64 buffers (gather indices) stay int64: their values are not bounded.
//
// Symbolic shapes without an upper bound small enough: NarrowSplitIndices adds a second,
// int32 variant of the kernel that assumes every such shape parameter (lower bound >= 0)
// lies in [0, cap], for the largest cap in {2^31 - 1, 2^24, 2^20, 2^16} that makes every
// loop variable 32-bit, and the host function checks that before the launch: it launches
// the int32 variant when the parameters fit and the int64 kernel otherwise.
#pragma once

#include <cstdint>
#include <map>

#include "tir/stmt.h"
#include "tir/transform/split_host_device.h"

namespace kiln::tir::transform {

struct NarrowedKernel {
  PrimFunc kernel;
  // Every int64 loop variable of the kernel became int32 (otherwise some index arithmetic
  // stays 64-bit: a bound the pass could not prove).
  bool all_loops_narrowed = false;
};

// `caps`: parameter index -> the largest value the kernel may assume for that int64
// scalar parameter (its lower bound stays the declared one, 0 for shape variables).
NarrowedKernel NarrowGpuIndices(const PrimFunc& kernel, const std::map<size_t, int64_t>& caps = {});

// Every device kernel of `split` narrowed; kernels that need a host-side check get their
// int32 variant appended to split->device_kernels and the host launch wrapped in the check.
void NarrowSplitIndices(SplitResult* split);

}  // namespace kiln::tir::transform
