// A TIR interpreter: runs a PrimFunc on host buffers, with no code generation.
//
// What it promises:
//  - It runs every statement and expression of tir/stmt.h and tir/expr.h with the meaning
//    those headers give them; every For kind (parallel, vectorized, unrolled, thread-bound)
//    runs serially in order, which is one of the orders those kinds allow. Blocks bind their
//    iteration variables to their values, skip when the predicate is false, and run `init`
//    when every reduction variable is 0. Allocate and a block's alloc_buffers get fresh,
//    zero-filled storage for their lifetime.
//  - Element types: bool, int8..int64, uint8..uint64, the packed sub-byte int1/2/4 and
//    uint1/2/4 (tir/data_type.h), float16, bfloat16, float32, float64, and vectors of them (Ramp, Broadcast, vector loads and stores). Integer arithmetic
//    wraps to the dtype's width; float arithmetic rounds to the dtype after every operation
//    (float32 math is float32 math, as in generated code); Div truncates for integers;
//    FloorDiv/FloorMod round toward negative infinity; float min/max are select(a < b, a, b)
//    / select(a > b, a, b); math intrinsics (tir::IsMathIntrinsic) use the C library in the
//    argument's precision (float16 through float), `round` rounds half to even. Bit
//    operations and out-of-range shifts follow tir/expr.h (tir::EvalBitwise); Reinterpret
//    goes through the little-endian bytes of the value (a float16/bfloat16 NaN comes out as
//    the canonical quiet NaN: its payload is not kept).
//  - Parameters bind as a generated kernel's prologue does: a buffer's constant dims must
//    match its argument, a symbolic dim is bound at its first occurrence and checked at the
//    others, compound dims are checked once everything is bound, and explicit strides bind
//    or check against the argument's compact row-major strides.
//  - It never aborts on anything a PrimFunc or its arguments can contain. Errors:
//      InvalidArgument    the program did something undefined or the arguments do not fit:
//                         an integer division by zero, an index outside its buffer, a
//                         float-to-int cast of NaN or of a value out of range, a block
//                         iteration value outside [0, extent), a store into a read-only
//                         buffer, an undefined variable, argument count/dtype/shape mismatch,
//                         a failed assert (its formatted message).
//      Unimplemented      a construct or dtype it does not run (handles, an unknown
//                         intrinsic, vector buffers).
//      ResourceExhausted  more than InterpreterOptions::max_steps steps, or an allocation
//                         above max_allocation_bytes.
//    After an error the output buffers hold whatever was written before it.
#pragma once

#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "tir/stmt.h"

namespace kiln::tir {

// A dense, compact row-major array in host memory that the caller owns; `data` holds
// dtype.StorageBytes(numel) bytes, little-endian (bool: one byte, 0 or 1; sub-byte types
// packed, low bits first).
struct HostBuffer {
  DataType dtype;
  std::vector<int64_t> shape;
  uint8_t* data = nullptr;
  bool read_only = false;  // a store into it is an error

  static HostBuffer Writable(DataType dtype, std::vector<int64_t> shape, uint8_t* data) {
    return HostBuffer{dtype, std::move(shape), data, false};
  }
  // The interpreter never writes through `data` (stores are refused before they happen).
  static HostBuffer ReadOnly(DataType dtype, std::vector<int64_t> shape, const uint8_t* data) {
    return HostBuffer{dtype, std::move(shape), const_cast<uint8_t*>(data), true};
  }
  int64_t numel() const;
};

// One argument per PrimFunc parameter: a buffer for a buffer parameter, a number for a
// scalar one (an integer for int/uint/bool variables, either for float variables).
using InterpreterArg = std::variant<HostBuffer*, int64_t, double>;

struct InterpreterOptions {
  // Loop iterations, block executions and stores, all counted as steps; a budget so that
  // a caller (constant folding) can give up on a computation that would take too long.
  int64_t max_steps = int64_t{1} << 30;
  // Total bytes that Allocate / alloc_buffers may hold at once.
  int64_t max_allocation_bytes = int64_t{1} << 30;
};

absl::Status RunPrimFunc(const PrimFunc& func, const std::vector<InterpreterArg>& args,
                         const InterpreterOptions& options = {});

}  // namespace kiln::tir
