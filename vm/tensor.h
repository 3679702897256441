// Tensor: an n-dimensional array on a device, DLPack-compatible.
//
// A Tensor is a cheap, reference-counted handle. Several tensors may view one allocation
// (reshape, slices along the first dimension, tensors placed in planned storage); the
// memory is freed when the last of them goes away. Strides are in elements; an empty
// stride vector means compact row-major. Data pointers are 64-byte aligned; a view adds a
// byte offset.
//
// DLPack exchange copies nothing in either direction: ToDLPack hands out a
// DLManagedTensor that keeps this tensor's memory alive until its deleter runs;
// FromDLPack adopts a DLManagedTensor and calls its deleter when the last view is gone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/device.h"
#include "vm/dtype.h"
#include <dlpack/dlpack.h>

namespace kiln::vm {

class Tensor {
 public:
  Tensor() = default;

  // Fresh, uninitialized memory on `device`.
  static absl::StatusOr<Tensor> Empty(const std::vector<int64_t>& shape, DLDataType dtype,
                                      Device* device = CpuDevice());
  // A view into memory kept alive by `owner` (e.g. planned storage).
  static Tensor View(std::shared_ptr<void> owner, void* data, uint64_t byte_offset,
                     std::vector<int64_t> shape, DLDataType dtype, DLDevice device);
  // Adopts `managed` without copying; its deleter runs when the last view is released.
  static absl::StatusOr<Tensor> FromDLPack(DLManagedTensor* managed);

  // A default-constructed Tensor is undefined: Reshape, Slice and CopyTo return an error, the
  // VM refuses it as an argument, Describe() says so. The plain accessors below (shape() to
  // ToDLPack()) are for a defined tensor: on an undefined one they abort with a message that
  // names the accessor ("Tensor::shape: the tensor is undefined ..."), as Value's as_*()
  // do for the wrong kind — never a null dereference, and never a made-up shape (ndim 0
  // would read as a scalar).
  bool defined() const { return node_ != nullptr; }
  int ndim() const { return static_cast<int>(Expect("ndim").shape.size()); }
  const std::vector<int64_t>& shape() const { return Expect("shape").shape; }
  const std::vector<int64_t>& strides() const { return Expect("strides").strides; }  // empty: compact
  DLDataType dtype() const { return Expect("dtype").dl.dtype; }
  DLDevice device() const { return Expect("device").dl.device; }
  int64_t numel() const;
  // Packed for sub-byte types (DTypeStorageBytes).
  int64_t nbytes() const {
    const DLDataType type = Expect("nbytes").dl.dtype;
    return DTypeStorageBytes(type, numel());
  }
  bool is_contiguous() const;
  // The first element's address (data + byte_offset).
  void* data() const {
    const Node& node = Expect("data");
    return static_cast<char*>(node.dl.data) + node.dl.byte_offset;
  }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  // The DLTensor handed to kernels; valid while this tensor (or a copy) lives.
  DLTensor* dl_tensor() const { return &Expect("dl_tensor").dl; }
  bool same_as(const Tensor& other) const { return node_ == other.node_; }

  // A view with another shape of equal element count; requires a contiguous tensor.
  absl::StatusOr<Tensor> Reshape(const std::vector<int64_t>& shape) const;
  // Rows [begin, end) of the first dimension, as a view (contiguous tensors only).
  absl::StatusOr<Tensor> Slice(int64_t begin, int64_t end) const;
  // A deep copy onto `device`.
  absl::StatusOr<Tensor> CopyTo(Device* device) const;

  DLManagedTensor* ToDLPack() const;

  // "float32[7, 784]"; " on DEVICE" follows for a tensor that is not on the CPU.
  std::string Describe() const;

 private:
  struct Node {
    std::shared_ptr<void> owner;  // keeps the memory alive
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    DLTensor dl{};  // shape/strides point into the vectors above
  };
  // The node of a defined tensor; an undefined one aborts, naming `accessor`.
  Node& Expect(const char* accessor) const {
    if (node_ == nullptr) [[unlikely]] Undefined(accessor);
    return *node_;
  }
  [[noreturn]] static void Undefined(const char* accessor);
  static Tensor Make(std::shared_ptr<void> owner, void* data, uint64_t byte_offset,
                     std::vector<int64_t> shape, std::vector<int64_t> strides, DLDataType dtype,
                     DLDevice device);
  std::shared_ptr<Node> node_;
};

// Number of elements of a shape; an error if negative or overflowing int64.
absl::StatusOr<int64_t> ShapeNumel(const std::vector<int64_t>& shape);
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace kiln::vm
