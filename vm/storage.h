// Storage: one allocation that memory planning carves tensors out of (AllocStorage /
// AllocTensor). Tensors placed in it keep it alive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "vm/device.h"
#include "vm/value.h"

namespace kiln::vm {

class Storage final : public TypedObject<Storage> {
 public:
  static constexpr char kTypeName[] = "storage";
  static absl::StatusOr<std::shared_ptr<Storage>> Allocate(Device* device, int64_t bytes);

  // A tensor of `shape` and `dtype` at `byte_offset`; an error if it does not fit.
  absl::StatusOr<Tensor> MakeTensor(int64_t byte_offset, const std::vector<int64_t>& shape,
                                    DLDataType dtype) const;
  int64_t size() const { return size_; }
  DLDevice device() const { return device_; }

 private:
  Storage(std::shared_ptr<void> memory, int64_t size, DLDevice device)
      : memory_(std::move(memory)), size_(size), device_(device) {}
  std::shared_ptr<void> memory_;
  int64_t size_;
  DLDevice device_;
};

}  // namespace kiln::vm
