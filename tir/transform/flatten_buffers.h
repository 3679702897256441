// FlattenBuffers: every buffer becomes one-dimensional, every access a single element offset.
//
// Runs after make_kernel_abi (which keeps the parameters' shapes in its checks and declares
// the parameter buffers with decl_buffer). Every buffer of the function - declared,
// allocated, or a block's - is replaced by a 1-D buffer of the same name, dtype and scope
// whose one extent is the number of elements it spans: the product of the shape (a constant
// when every dimension is), or with explicit strides 1 + sum((dim - 1) * stride); a
// 0-dimensional buffer spans 1 element. Each access's indices become one int64 offset:
//  - compact buffers: row-major, ((i0 * d1 + i1) * d2 + i2) ...;
//  - strided buffers: i0 * s0 + i1 * s1 + ...;
// indices of other integer types are cast to int64 first (the offset arithmetic is int64, so
// an int32 index times a large extent does not overflow). A vector access whose last index is
// ramp(b, 1, L) (or broadcast(x) + ramp(b, 1, L)) and whose other indices are scalars touches
// consecutive elements and gets the offset ramp(offset(..., b), 1, L), which the emitter turns
// into one vector load or store; other vector accesses get a vector of offsets (gathered or
// scattered lane by lane). A 1-D compact access with an int64 index is left as it is.
#pragma once

#include "tir/stmt.h"

namespace kiln::tir::transform {

PrimFunc FlattenBuffers(const PrimFunc& func);

}  // namespace kiln::tir::transform
