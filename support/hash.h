// Hash combination for structural hashing of IR and for cache keys.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::support {

// 64-bit FNV-1a of a byte range: a stable checksum (e.g. of executable sections).
inline uint64_t Fnv1a64(const char* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<uint8_t>(data[i]);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// Mixes `value` into `seed` (64-bit variant of the classic golden-ratio combine).
inline uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

}  // namespace kiln::support
