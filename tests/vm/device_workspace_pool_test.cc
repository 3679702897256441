// DeviceWorkspacePool against a device that counts its allocations and frees: freed blocks
// are reused by size class without going back to the device, the idle blocks are bounded,
// an out-of-memory device gets its idle blocks back before the retry, and everything is
// returned when the pool goes.
#include "vm/device_workspace_pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

namespace kiln::vm {
namespace {

class CountingDevice final : public Device {
 public:
  DLDevice dl_device() const override { return {kDLExtDev, 7}; }
  std::string name() const override { return "counting:7"; }
  absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) override {
    if (in_use + bytes > capacity) return absl::ResourceExhaustedError("counting:7 is full");
    void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    sizes[p] = bytes;
    in_use += bytes;
    ++allocations;
    return p;
  }
  void Free(void* ptr, size_t bytes) override {
    EXPECT_EQ(sizes.at(ptr), bytes);
    in_use -= bytes;
    sizes.erase(ptr);
    ++frees;
    std::free(ptr);
  }
  absl::Status CopyToHost(void*, const void*, size_t) override { return absl::OkStatus(); }
  absl::Status CopyFromHost(void*, const void*, size_t) override { return absl::OkStatus(); }
  absl::Status Synchronize() override { return absl::OkStatus(); }

  uint64_t capacity = uint64_t{1} << 30;
  uint64_t in_use = 0;
  int allocations = 0, frees = 0;
  std::map<void*, size_t> sizes;
};

TEST(DeviceWorkspacePoolTest, ReusesFreedBlocksOfTheSameSizeClass) {
  CountingDevice device;
  {
    DeviceWorkspacePool pool;
    void* a = pool.Allocate(&device, 1000);  // class 1024
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    EXPECT_EQ(device.sizes.at(a), 1024u);
    pool.Free(a);
    EXPECT_EQ(device.frees, 0);  // kept: no wait for the device
    // 600 and 1000 bytes share the class: the same block, no new allocation.
    EXPECT_EQ(pool.Allocate(&device, 600), a);
    EXPECT_EQ(device.allocations, 1);
    // Another class while the first is live: a new block.
    void* b = pool.Allocate(&device, 5000);
    EXPECT_NE(b, a);
    EXPECT_EQ(device.allocations, 2);
    pool.Free(a);
    pool.Free(b);
    pool.Free(b);        // twice: ignored
    pool.Free(&device);  // not the pool's: ignored
    EXPECT_EQ(pool.stats().idle_blocks, 2);
    EXPECT_EQ(pool.stats().reuses, 1);
    EXPECT_EQ(device.frees, 0);
    // A block never freed (a kernel's bug) goes back too when the pool goes.
    ASSERT_NE(pool.Allocate(&device, 64), nullptr);
  }
  EXPECT_EQ(device.frees, 3);
  EXPECT_EQ(device.in_use, 0u);
}

TEST(DeviceWorkspacePoolTest, BoundsItsIdleBytesLargestFirst) {
  CountingDevice device;
  DeviceWorkspacePool pool(/*max_idle_bytes=*/4096);
  void* small = pool.Allocate(&device, 1024);
  void* large = pool.Allocate(&device, 4096);
  pool.Free(small);
  pool.Free(large);  // 5120 idle bytes > 4096: the largest goes back
  EXPECT_EQ(device.frees, 1);
  EXPECT_EQ(device.sizes.count(large), 0u);
  EXPECT_EQ(pool.stats().idle_bytes, 1024);
}

TEST(DeviceWorkspacePoolTest, AFullDeviceGetsTheIdleBlocksBackBeforeTheRetry) {
  CountingDevice device;
  device.capacity = 8192;
  DeviceWorkspacePool pool;
  pool.Free(pool.Allocate(&device, 4096));
  pool.Free(pool.Allocate(&device, 2048));
  // 6144 bytes idle; 4000 more (class 4096) fit only once they are back.
  void* big = pool.Allocate(&device, 3000);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(device.sizes.at(big), 4096u);
  EXPECT_EQ(pool.stats().reuses, 1);  // the 4096 block was idle: reused, nothing freed
  void* more = pool.Allocate(&device, 4000);
  ASSERT_NE(more, nullptr);  // the 2048 block went back first
  EXPECT_EQ(pool.stats().idle_blocks, 0);
  // Nothing left to give back: out of memory is nullptr.
  EXPECT_EQ(pool.Allocate(&device, 4096), nullptr);
}

}  // namespace
}  // namespace kiln::vm
