#include "vm/pooled_allocator.h"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kiln::vm {

PooledAllocator::~PooledAllocator() { Trim(); }

size_t PooledAllocator::SizeClass(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes <= kAlignment) return kAlignment;
  if (bytes <= kMiB) {
    size_t size = kAlignment;
    while (size < bytes) size <<= 1;
    return size;
  }
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

namespace {

// Blocks of at least this size start on a 2 MiB boundary and are offered to the kernel as
// transparent huge pages (madvise; Linux's default THP mode "madvise" uses them only when
// asked). A kernel that reads a large operand in short runs many rows apart (a matmul's
// packing copy takes 64 bytes from each 16 KiB row of a 4096 x 4096 weight) touches a
// new 4 KiB page at every row and misses the TLB; in 2 MiB pages it does not. Measured
// (matmul_bench, M = 64 against 4096 x 4096, AVX2 code, one thread, load 12, two runs
// each): Kiln / best OpenBLAS 0.54-0.62 on 4 KiB pages, 0.70-0.71 on huge pages.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugePageMinimum = 2 * kHugePage;

void* SystemAllocate(size_t size) {
  if (size < kHugePageMinimum) return std::aligned_alloc(PooledAllocator::kAlignment, size);
  const size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
  void* ptr = std::aligned_alloc(kHugePage, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Only advice: without THP (or with it disabled) the block is plain pages.
  if (ptr != nullptr) (void)madvise(ptr, rounded, MADV_HUGEPAGE);
#endif
  return ptr;
}

}  // namespace

void* PooledAllocator::Allocate(size_t bytes) {
  size_t size = SizeClass(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_lists_.find(size);
    if (it != free_lists_.end() && !it->second.empty()) {
      void* ptr = it->second.back();
      it->second.pop_back();
      stats_.bytes_pooled -= static_cast<int64_t>(size);
      stats_.bytes_in_use += static_cast<int64_t>(size);
      if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
      return ptr;
    }
  }
  void* ptr = SystemAllocate(size);
  if (ptr == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.system_allocations++;
  stats_.bytes_in_use += static_cast<int64_t>(size);
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return ptr;
}

void PooledAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  size_t size = SizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_lists_[size].push_back(ptr);
  stats_.bytes_in_use -= static_cast<int64_t>(size);
  stats_.bytes_pooled += static_cast<int64_t>(size);
}

void PooledAllocator::Trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_lists_) {
    for (void* block : blocks) std::free(block);
    stats_.bytes_pooled -= static_cast<int64_t>(size * blocks.size());
  }
  free_lists_.clear();
}

PooledAllocator::Stats PooledAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void PooledAllocator::ResetPeak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

}  // namespace kiln::vm
