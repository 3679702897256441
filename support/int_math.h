// Integer division rounding toward negative infinity, as TIR's floordiv/floormod define it
// (floormod has the divisor's sign). Shared by the analyzer, shape inference and the VM's
// integer instructions so that compile-time folding and run-time evaluation agree.
#pragma once

#include <cstdint>

namespace kiln::support {

// b != 0, and not (a == INT64_MIN && b == -1): callers rule those out.
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

inline int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace kiln::support
