// Hash combination for structural hashing of IR and for cache keys.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::support {

// Mixes `value` into `seed` (64-bit variant of the classic golden-ratio combine).
inline uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

}  // namespace kiln::support
