#include "vm/tensor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"

namespace kiln::vm {

absl::StatusOr<int64_t> ShapeNumel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("negative dimension in shape ", ShapeToString(shape)));
    if (d != 0 && n > INT64_MAX / d) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(shape), " is too large"));
    }
    n *= d;
  }
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

Tensor Tensor::Make(std::shared_ptr<void> owner, void* data, uint64_t byte_offset,
                    std::vector<int64_t> shape, std::vector<int64_t> strides, DLDataType dtype,
                    DLDevice device) {
  Tensor t;
  t.node_ = std::make_shared<Node>();
  Node& n = *t.node_;
  n.owner = std::move(owner);
  n.shape = std::move(shape);
  n.strides = std::move(strides);
  n.dl.data = data;
  n.dl.device = device;
  n.dl.ndim = static_cast<int32_t>(n.shape.size());
  n.dl.dtype = dtype;
  n.dl.shape = n.shape.data();
  n.dl.strides = n.strides.empty() ? nullptr : n.strides.data();
  n.dl.byte_offset = byte_offset;
  return t;
}

absl::StatusOr<Tensor> Tensor::Empty(const std::vector<int64_t>& shape, DLDataType dtype, Device* device) {
  if (device == nullptr) return absl::InvalidArgumentError("Tensor::Empty: null device (CpuDevice() is the default)");
  // A zero-sized element would make a tensor of no bytes whose data() a caller then writes.
  if (dtype.bits == 0 || dtype.lanes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("Tensor::Empty: dtype with ", dtype.bits, " bits and ", dtype.lanes,
                                                   " lanes (both must be positive)"));
  }
  absl::StatusOr<int64_t> numel = ShapeNumel(shape);
  if (!numel.ok()) return numel.status();
  int64_t elem = DTypeBytes(dtype);
  if (elem > 0 && *numel > INT64_MAX / elem) {
    return absl::InvalidArgumentError(absl::StrCat("tensor of shape ", ShapeToString(shape), " is too large"));
  }
  size_t bytes = static_cast<size_t>(DTypeStorageBytes(dtype, *numel));
  absl::StatusOr<void*> data = device->Allocate(bytes, 64);
  if (!data.ok()) return data.status();
  std::shared_ptr<void> owner(*data, [device, bytes](void* p) { device->Free(p, bytes); });
  return Make(std::move(owner), *data, 0, shape, {}, dtype, device->dl_device());
}

Tensor Tensor::View(std::shared_ptr<void> owner, void* data, uint64_t byte_offset,
                    std::vector<int64_t> shape, DLDataType dtype, DLDevice device) {
  return Make(std::move(owner), data, byte_offset, std::move(shape), {}, dtype, device);
}

absl::StatusOr<Tensor> Tensor::FromDLPack(DLManagedTensor* managed) {
  if (managed == nullptr) return absl::InvalidArgumentError("FromDLPack: null tensor");
  const DLTensor& dl = managed->dl_tensor;
  if (dl.ndim < 0 || (dl.ndim > 0 && dl.shape == nullptr)) {
    return absl::InvalidArgumentError("FromDLPack: malformed DLTensor shape");
  }
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  // What another framework hands over is checked before it is adopted (a refused tensor
  // stays the caller's: its deleter is not run), so that no kernel reads through it wrongly.
  absl::StatusOr<int64_t> numel = ShapeNumel(shape);
  if (!numel.ok()) return absl::InvalidArgumentError(absl::StrCat("FromDLPack: ", numel.status().message()));
  if (dl.dtype.bits == 0 || dl.dtype.lanes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("FromDLPack: dtype with ", dl.dtype.bits, " bits and ", dl.dtype.lanes,
                                                   " lanes (both must be positive)"));
  }
  if (*numel > 0 && dl.data == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("FromDLPack: null data for ", *numel, " elements"));
  }
  // Kernels load whole elements: the first must sit on its size's alignment (capped at 8
  // bytes: what a 128-bit string handle, two pointers, needs).
  const uint64_t lane_bytes = dl.dtype.bits / 8;
  const uint64_t alignment = std::min<uint64_t>(lane_bytes & (~lane_bytes + 1), 8);  // lowest set bit
  if (dl.dtype.bits % 8 == 0 && dl.data != nullptr &&
      (reinterpret_cast<uintptr_t>(dl.data) + dl.byte_offset) % alignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat("FromDLPack: the data (", absl::Hex(reinterpret_cast<uintptr_t>(dl.data)),
                                                   " + byte offset ", dl.byte_offset, ") is not aligned to ",
                                                   alignment, " bytes, as its ", DTypeToString(dl.dtype), " elements need"));
  }
  std::vector<int64_t> strides;
  if (dl.strides != nullptr) strides.assign(dl.strides, dl.strides + dl.ndim);
  std::shared_ptr<void> owner(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter != nullptr) m->deleter(m);
  });
  Tensor t = Make(std::move(owner), dl.data, dl.byte_offset, std::move(shape), std::move(strides),
                  dl.dtype, dl.device);
  // Compact tensors keep no strides, so every later is_contiguous() check is free.
  if (t.is_contiguous()) {
    t.node_->strides.clear();
    t.node_->dl.strides = nullptr;
  }
  return t;
}

void Tensor::Undefined(const char* accessor) {
  std::fprintf(stderr,
               "kiln: fatal: Tensor::%s: the tensor is undefined (a default-constructed Tensor, or one "
               "moved from); check defined() first\n",
               accessor);
  std::abort();
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : Expect("numel").shape) n *= d;
  return n;
}

bool Tensor::is_contiguous() const {
  if (Expect("is_contiguous").strides.empty()) return true;
  int64_t expected = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (node_->shape[i] != 1 && node_->strides[i] != expected) return false;
    expected *= node_->shape[i];
  }
  return true;
}

absl::StatusOr<Tensor> Tensor::Reshape(const std::vector<int64_t>& shape) const {
  if (!defined()) return absl::FailedPreconditionError("Tensor::Reshape of an undefined tensor");
  absl::StatusOr<int64_t> numel = ShapeNumel(shape);
  if (!numel.ok()) return numel.status();
  if (*numel != this->numel()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", Describe(), " to ",
                                                   ShapeToString(shape), ": element counts differ"));
  }
  if (!is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape non-contiguous ", Describe()));
  }
  return Make(node_->owner, node_->dl.data, node_->dl.byte_offset, shape, {}, dtype(), device());
}

absl::StatusOr<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  if (!defined()) return absl::FailedPreconditionError("Tensor::Slice of an undefined tensor");
  if (ndim() == 0) return absl::InvalidArgumentError("cannot slice a 0-d tensor");
  if (begin < 0 || end < begin || end > node_->shape[0]) {
    return absl::OutOfRangeError(absl::StrCat("slice [", begin, ", ", end, ") out of range for ", Describe()));
  }
  if (!is_contiguous()) return absl::InvalidArgumentError(absl::StrCat("cannot slice non-contiguous ", Describe()));
  int64_t row_elements = 1;
  for (int i = 1; i < ndim(); ++i) row_elements *= node_->shape[i];
  // A packed sub-byte row may end inside a byte: the view must start on a byte.
  const int64_t begin_bits = begin * row_elements * dtype().bits * dtype().lanes;
  if (begin_bits % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot slice ", Describe(), " at row ", begin,
                                                   ": the row does not start on a byte"));
  }
  std::vector<int64_t> shape = node_->shape;
  shape[0] = end - begin;
  return Make(node_->owner, node_->dl.data, node_->dl.byte_offset + static_cast<uint64_t>(begin_bits / 8),
              std::move(shape), {}, dtype(), device());
}

absl::StatusOr<Tensor> Tensor::CopyTo(Device* device) const {
  if (!defined()) return absl::FailedPreconditionError("Tensor::CopyTo of an undefined tensor");
  if (device == nullptr) return absl::InvalidArgumentError("Tensor::CopyTo: null device");
  if (!is_contiguous()) return absl::UnimplementedError("copying a strided tensor is not supported");
  absl::StatusOr<Tensor> out = Empty(shape(), dtype(), device);
  if (!out.ok()) return out.status();
  absl::StatusOr<Device*> source = GetDevice(this->device());
  if (!source.ok()) return source.status();
  size_t bytes = static_cast<size_t>(nbytes());
  absl::Status status;
  if (this->device().device_type == kDLCPU) {
    status = device->CopyFromHost(out->data(), data(), bytes);
  } else if (device->dl_device().device_type == kDLCPU) {
    status = (*source)->CopyToHost(out->data(), data(), bytes);
  } else {
    // Two devices that know nothing of each other: through host memory.
    std::unique_ptr<char[]> staging(new char[bytes == 0 ? 1 : bytes]);
    status = (*source)->CopyToHost(staging.get(), data(), bytes);
    if (status.ok()) status = device->CopyFromHost(out->data(), staging.get(), bytes);
  }
  if (!status.ok()) return status;
  return out;
}

DLManagedTensor* Tensor::ToDLPack() const {
  struct Holder {
    DLManagedTensor managed;
    Tensor tensor;  // keeps the node (and its shape/strides arrays) alive
  };
  Expect("ToDLPack");
  auto* holder = new Holder{{}, *this};
  holder->managed.dl_tensor = node_->dl;
  holder->managed.manager_ctx = holder;
  holder->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Holder*>(self->manager_ctx); };
  return &holder->managed;
}

std::string Tensor::Describe() const {
  if (!defined()) return "<undefined tensor>";
  std::string text = absl::StrCat(DTypeToString(dtype()), ShapeToString(shape()));
  if (device().device_type != kDLCPU) absl::StrAppend(&text, " on ", DeviceName(device()));
  return text;
}

}  // namespace kiln::vm
