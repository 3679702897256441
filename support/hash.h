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

// A 64-bit checksum of a byte range fast enough for gigabytes (executable sections, weights
// included, are checked at every load): four independent lanes over 64-bit words, each step
// xor, multiply by FNV's prime and rotate (about 10x the speed of the byte-wise Fnv1a64),
// then the lanes, the size and the tail folded together and avalanched. The rotation
// matters: a multiply carries a difference only upwards, so without it differences in the
// high bytes of several words stay confined to the top bits and cancel (random 3-byte
// corruptions of the same byte position collided about once in 256). Every step is a
// bijection of the lane state, so a change confined to one 8-byte word or to the tail always
// changes the result. Not a cryptographic hash.
inline uint64_t Checksum64(const char* data, size_t size) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  uint64_t lane[4] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x9ce484222325cbf2ULL, 0x2325cbf29ce48422ULL};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t word = 0;
      for (int b = 0; b < 8; ++b) word |= static_cast<uint64_t>(static_cast<uint8_t>(data[i + 8 * l + b])) << (8 * b);
      lane[l] = rotl((lane[l] ^ word) * kPrime, 29);
    }
  }
  uint64_t hash = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(size);
  for (uint64_t l : lane) hash = rotl((hash ^ l) * kPrime, 29);
  for (; i < size; ++i) hash = (hash ^ static_cast<uint8_t>(data[i])) * kPrime;
  // Avalanche (MurmurHash3's 64-bit finalizer constants): every input bit reaches every
  // output bit. A bijection, so it loses nothing.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdULL;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ULL;
  hash ^= hash >> 33;
  return hash;
}

// Mixes `value` into `seed` (64-bit variant of the classic golden-ratio combine).
inline uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

}  // namespace kiln::support
