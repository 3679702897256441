// A thread-safe pooled allocator for host memory. Blocks are 64-byte aligned and rounded up
// to a size class (powers of two up to 1 MiB, then multiples of 1 MiB); freed blocks are
// kept per size class and reused, so a VM that runs the same shapes repeatedly stops
// calling malloc. Blocks of 4 MiB and more are aligned to 2 MiB and advised as transparent
// huge pages (pooled_allocator.cc). Statistics let `kiln run --stats` report peak memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln::vm {

class PooledAllocator {
 public:
  static constexpr size_t kAlignment = 64;

  PooledAllocator() = default;
  ~PooledAllocator();
  PooledAllocator(const PooledAllocator&) = delete;
  PooledAllocator& operator=(const PooledAllocator&) = delete;

  // nullptr only if the system is out of memory.
  void* Allocate(size_t bytes);
  void Free(void* ptr, size_t bytes);
  // Returns every pooled block to the system.
  void Trim();

  struct Stats {
    int64_t bytes_in_use = 0;       // handed out and not yet freed (rounded sizes)
    int64_t peak_bytes_in_use = 0;
    int64_t bytes_pooled = 0;       // freed and kept for reuse
    int64_t system_allocations = 0;
  };
  Stats stats() const;
  void ResetPeak();

  static size_t SizeClass(size_t bytes);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;
  Stats stats_;
};

}  // namespace kiln::vm
