#include "vm/storage.h"

#include "absl/strings/str_cat.h"

namespace kiln::vm {

absl::StatusOr<std::shared_ptr<Storage>> Storage::Allocate(Device* device, int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("negative storage size ", bytes));
  absl::StatusOr<void*> memory = device->Allocate(static_cast<size_t>(bytes), 64);
  if (!memory.ok()) return memory.status();
  auto size = static_cast<size_t>(bytes);
  std::shared_ptr<void> owner(*memory, [device, size](void* p) { device->Free(p, size); });
  return std::shared_ptr<Storage>(new Storage(std::move(owner), bytes, device->dl_device()));
}

absl::StatusOr<Tensor> Storage::MakeTensor(int64_t byte_offset, const std::vector<int64_t>& shape,
                                           DLDataType dtype) const {
  absl::StatusOr<int64_t> numel = ShapeNumel(shape);
  if (!numel.ok()) return numel.status();
  int64_t elem = DTypeBytes(dtype);
  auto too_big = [&](int64_t available) {
    // Packed sub-byte elements take less than a byte each (and the product cannot overflow).
    if (int64_t{dtype.bits} * dtype.lanes < 8) return DTypeStorageBytes(dtype, *numel) > available;
    return elem > 0 && *numel > available / elem;
  };
  if (byte_offset < 0 || byte_offset > size_ || too_big(size_ - byte_offset)) {
    return absl::OutOfRangeError(absl::StrCat("tensor ", DTypeToString(dtype), ShapeToString(shape),
                                              " at byte offset ", byte_offset, " does not fit in storage of ",
                                              size_, " bytes"));
  }
  return Tensor::View(memory_, memory_.get(), static_cast<uint64_t>(byte_offset), shape, dtype, device_);
}

}  // namespace kiln::vm
