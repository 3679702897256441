// InsertIndexChecks: a buffer access whose index comes from the data (a gather such as
// take's data[indices[i]], or a scatter) is checked before it runs, so that an
// out-of-range index is an error naming the buffer and the index rather than an
// out-of-bounds read or write.
//
// Runs after lower_blocks, before vectorize_loops (the accesses are still scalar) and
// make_kernel_abi. For every BufferLoad and BufferStore index that depends on the data - it
// contains a buffer load, a scalar parameter that is not a buffer dimension, or a let
// variable bound to such a value (data_check_inserter.h) - the statement
// holding the access is preceded by
//     assert 0 <= i && i < extent, "index {} is out of range for dim 0 of 'data' (extent {})"
// An index the indexing operators wrap, select(r < 0, r + extent, r) (a negative index
// counts from the end), is checked as -extent <= r < extent and reported by r, the value
// given: "index -5 is out of range for dim 0 of 'data' (extent 4; a negative index counts
// from the end)". Indices made of loop variables, shape variables and constants are in range by
// construction and are not checked (hot loops stay free of checks). An access inside a
// select's branch is checked only when that branch is taken (the condition becomes
// `!(guard) || ok`), and its index becomes select(ok, i, 0), because the emitter evaluates
// both branches.
#pragma once

#include "tir/stmt.h"

namespace kiln::tir::transform {

PrimFunc InsertIndexChecks(const PrimFunc& func);

}  // namespace kiln::tir::transform
