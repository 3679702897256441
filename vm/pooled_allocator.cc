#include "vm/pooled_allocator.h"

#include <cstdlib>

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
  void* ptr = std::aligned_alloc(kAlignment, size);
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
