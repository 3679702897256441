// VerifyIndexBounds: an out-of-bounds buffer access of a hand-written PrimFunc, found at
// compile time.
//
// Nothing checks a computed index when a kernel runs (only data-dependent ones, see
// tir/transform/insert_index_checks.h), so `for i in serial(0, n) { B[i] = A[i + 1] }` with A
// of extent n reads past A's end without a word. This check bounds every index of every
// BufferLoad and BufferStore over the loops around it (their symbolic extents included), the
// block iteration variables' bindings, and the conditions that guard it: `if` statements,
// a block's `where` predicate, an `assert` earlier in the same sequence, and a `select`
// whose true value is the load (docs/ir.md: its lanes where the condition is false are not
// read).
//
// What it promises:
//  - An error only when the analyzer (tir/analyzer.h) proves that the access, whenever it
//    runs at all, reaches an index >= the dimension's extent or < 0 for some iteration: it
//    finds one iteration (each loop at its first or last value, narrowed by the guards), proves
//    that iteration satisfies every guard, and proves the index outside [0, extent) there.
//    Loops whose extents depend only on the function's symbolic variables are assumed to run
//    (an access none of whose iterations runs reads nothing), so `for i in serial(0, n)
//    { A[i + 1] }` is an error for an A of extent n, and `for i in serial(0, n - 1)` is not.
//  - Also an error when the access runs and goes out for every value of its sizes from some
//    threshold on: the variables it depends on are all sizes (declared >= 0), and the proof
//    above holds with each of them at least T (at most 1024, or its declared upper bound, so
//    the signature allows those sizes). `A[2 * i]` over serial(0, n), A of extent n, is in
//    range only for n <= 1; the error ends "for n >= 2". With a scalar parameter that is not a
//    size (an offset, which may be negative) taking part, only the proof for every value counts.
//  - Silent wherever it cannot prove that: data-dependent indices, non-linear ones, guards it
//    cannot decide. It never refuses a function whose accesses all stay in bounds for every
//    size its signature allows, and every PrimFunc the compiler generates passes it.
//  - The error is InvalidArgument and names the function, the buffer, the dimension, the index
//    as written, the range of values it takes where that is known, the iteration that goes
//    out, and the extent:
//      k.kir:6:16: error: prim_func 'shift': index 0 of buffer 'A' is i + 1, which takes
//      values in [1, n]: n (at i = n - 1) is outside [0, n)
//    With `locations` from the parser (which records each access), it starts with the
//    access's file:line:col, else with the function's when known.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "tir/stmt.h"
#include "tir/text_parser.h"  // SourceMap

namespace kiln::tir {

absl::Status VerifyIndexBounds(const PrimFunc& func, const std::string& name,
                               const SourceMap* locations = nullptr);

}  // namespace kiln::tir
