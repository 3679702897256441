// Checks the library kernels (kernel ABI, vm/kernel_abi.h) make on the DLTensors they are
// given before handing them to a vendor library that assumes a layout.
#pragma once

#include <cstdint>

#include <dlpack/dlpack.h>

namespace kiln::builtins {

// Row-major without gaps: strides absent, or each the product of the extents after it
// (an axis of extent 1 may have any stride; it is never stepped over).
inline bool IsCompactRowMajor(const DLTensor* t) {
  if (t->strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return false;
    expected *= t->shape[i];
  }
  return true;
}

}  // namespace kiln::builtins
