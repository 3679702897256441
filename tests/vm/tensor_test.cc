#include "vm/tensor.h"

#include "gtest/gtest.h"
#include "vm/pooled_allocator.h"
#include "vm/storage.h"

namespace kiln::vm {
namespace {

TEST(Tensor, ViewsShareMemory) {
  Tensor t = *Tensor::Empty({4, 6}, DTypeFloat32());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  for (int i = 0; i < 24; ++i) t.data_as<float>()[i] = static_cast<float>(i);
  Tensor r = *t.Reshape({2, 12});
  EXPECT_EQ(r.data(), t.data());
  Tensor s = *t.Slice(1, 3);
  EXPECT_EQ(s.shape(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(s.data_as<float>()[0], 6.0f);
  EXPECT_FALSE(t.Reshape({5, 5}).ok());
  EXPECT_FALSE(t.Slice(3, 5).ok());
}

TEST(Tensor, DLPackExchangeCopiesNothingAndReleasesOnce) {
  Tensor t = *Tensor::Empty({3, 5}, DTypeFloat32());
  DLManagedTensor* managed = t.ToDLPack();
  EXPECT_EQ(static_cast<char*>(managed->dl_tensor.data) + managed->dl_tensor.byte_offset, t.data());
  EXPECT_EQ(managed->dl_tensor.shape[1], 5);
  Tensor back = *Tensor::FromDLPack(managed);
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back.shape(), t.shape());

  // A foreign tensor: its deleter runs exactly once, when the last view goes.
  static int deleted = 0;
  static float storage[8];
  static int64_t shape[1] = {8};
  auto* foreign = new DLManagedTensor{};
  foreign->dl_tensor = DLTensor{storage, {kDLCPU, 0}, 1, DTypeFloat32(), shape, nullptr, 0};
  foreign->deleter = [](DLManagedTensor* self) {
    ++deleted;
    delete self;
  };
  {
    Tensor adopted = *Tensor::FromDLPack(foreign);
    EXPECT_EQ(adopted.data(), storage);
    Tensor view = *adopted.Reshape({2, 4});
    adopted = Tensor();
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

// int4 elements are packed two to a byte (low nibble first): sizes, DLPack exchange,
// slices (which must start on a byte) and views of storage all count packed bytes.
TEST(Tensor, SubByteTensorsArePacked) {
  const DLDataType int4{kDLInt, 4, 1};
  EXPECT_EQ(DTypeStorageBytes(int4, 15), 8);
  EXPECT_EQ(DTypeStorageBytes(int4, 16), 8);
  EXPECT_EQ(DTypeStorageBytes(DLDataType{kDLUInt, 2, 1}, 5), 2);
  EXPECT_EQ(DTypeStorageBytes(DTypeFloat32(), 5), 20);
  Tensor t = *Tensor::Empty({3, 5}, int4);
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 8);
  DLManagedTensor* managed = t.ToDLPack();
  EXPECT_EQ(managed->dl_tensor.dtype.bits, 4);
  Tensor back = *Tensor::FromDLPack(managed);
  EXPECT_EQ(back.nbytes(), 8);
  EXPECT_EQ(back.data(), t.data());
  // Row 1 starts at element 5, bit 20: inside a byte. Row 2 starts at element 10, byte 5.
  EXPECT_FALSE(t.Slice(1, 3).ok());
  Tensor last = *t.Slice(2, 3);
  EXPECT_EQ(static_cast<char*>(last.data()), static_cast<char*>(t.data()) + 5);
  EXPECT_EQ(last.nbytes(), 3);

  std::shared_ptr<Storage> storage = *Storage::Allocate(CpuDevice(), 3);
  EXPECT_TRUE(storage->MakeTensor(0, {5}, int4).ok());
  EXPECT_TRUE(storage->MakeTensor(1, {4}, int4).ok());
  EXPECT_FALSE(storage->MakeTensor(1, {5}, int4).ok());
  EXPECT_FALSE(storage->MakeTensor(0, {7}, int4).ok());
}

TEST(Tensor, EmptyRefusesElementsOfNoSize) {
  // hunt23: a dtype of 0 bits or 0 lanes made a tensor of 0 bytes with a shape of 12
  // elements, which a caller then filled through data_as<float>() past its end.
  for (DLDataType dtype : {DLDataType{kDLFloat, 0, 1}, DLDataType{kDLFloat, 32, 0}}) {
    absl::StatusOr<Tensor> t = Tensor::Empty({3, 4}, dtype);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("both must be positive"), std::string::npos) << t.status();
  }
  EXPECT_EQ(Tensor::Empty({3, 4}, DLDataType{kDLFloat, 32, 4})->nbytes(), 3 * 4 * 16);
}

TEST(PooledAllocator, ReusesFreedBlocksAndTracksPeak) {
  PooledAllocator pool;
  void* a = pool.Allocate(1000);
  pool.Free(a, 1000);
  void* b = pool.Allocate(900);  // same size class
  EXPECT_EQ(a, b);
  EXPECT_EQ(pool.stats().system_allocations, 1);
  void* c = pool.Allocate(5000);
  EXPECT_EQ(pool.stats().peak_bytes_in_use, 1024 + 8192);
  pool.Free(b, 900);
  pool.Free(c, 5000);
  EXPECT_EQ(pool.stats().bytes_in_use, 0);
}

TEST(PooledAllocator, LargeBlocksStartOnHugePageBoundaries) {
  // 4 MiB and more: 2 MiB aligned (so the huge-page advice covers the whole block), still
  // reused by size class and counted at the class's size.
  PooledAllocator pool;
  constexpr size_t kMiB = size_t{1} << 20;
  const size_t bytes = 5 * kMiB + 3;
  auto* a = static_cast<unsigned char*>(pool.Allocate(bytes));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (2 * kMiB), 0u);
  a[0] = 1;
  a[bytes - 1] = 2;  // the whole requested size is usable
  EXPECT_EQ(pool.stats().bytes_in_use, static_cast<int64_t>(6 * kMiB));
  pool.Free(a, bytes);
  EXPECT_EQ(pool.Allocate(6 * kMiB), a);
  pool.Free(a, 6 * kMiB);
  void* small = pool.Allocate(3 * kMiB);  // below the threshold: the ordinary alignment
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % PooledAllocator::kAlignment, 0u);
  pool.Free(small, 3 * kMiB);
}

TEST(Device, UnavailableDevicesSaySo) {
  // cuda:0 exists only on a GPU machine; elsewhere the error says why.
  absl::StatusOr<Device*> cuda = GetDevice("cuda:0");
  if (!cuda.ok()) {
    EXPECT_NE(std::string(cuda.status().message()).find("not available"), std::string::npos);
  }
  EXPECT_FALSE(GetDevice("cuda:99").ok());
  EXPECT_FALSE(GetDevice("tpu").ok());
  EXPECT_TRUE(GetDevice("cpu").ok());
}

}  // namespace
}  // namespace kiln::vm
