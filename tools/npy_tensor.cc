#include "tools/npy_tensor.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "formats/npy.h"

namespace kiln::tools {
namespace {

DLDataType ToDLDataType(formats::NpyType t) {
  uint8_t code = kDLInt;
  if (t.kind == 'f') code = kDLFloat;
  if (t.kind == 'u') code = kDLUInt;
  if (t.kind == 'b') code = vm::kDTypeBool;
  return DLDataType{code, static_cast<uint8_t>(t.bytes * 8), 1};
}

}  // namespace

absl::StatusOr<vm::Tensor> ReadNpyTensor(const std::string& path) {
  absl::StatusOr<formats::NpyArray> array = formats::ReadNpy(path);
  if (!array.ok()) return array.status();
  DLDataType dtype = ToDLDataType(array->type);
  if (reinterpret_cast<uintptr_t>(array->data) % 64 == 0) {
    const char* base = array->file->data();
    std::shared_ptr<void> owner(array->file, const_cast<char*>(base));
    return vm::Tensor::View(std::move(owner), const_cast<char*>(base), static_cast<uint64_t>(array->data - base),
                            array->shape, dtype, vm::CpuDevice()->dl_device());
  }
  absl::StatusOr<vm::Tensor> tensor = vm::Tensor::Empty(array->shape, dtype);
  if (!tensor.ok()) return tensor.status();
  if (array->nbytes > 0) std::memcpy(tensor->data(), array->data, static_cast<size_t>(array->nbytes));
  return tensor;
}

absl::Status WriteNpyTensor(const std::string& path, const vm::Tensor& tensor) {
  DLDataType t = tensor.dtype();
  formats::NpyType type{'?', t.bits / 8};
  if (t.lanes == 1 && t.bits % 8 == 0) {
    if (t.code == kDLFloat) type.kind = 'f';
    if (t.code == kDLInt) type.kind = 'i';
    if (t.code == kDLUInt) type.kind = 'u';
    if (t.code == vm::kDTypeBool) type.kind = 'b';
  }
  if (type.kind == '?') {
    return absl::InvalidArgumentError(absl::StrCat(vm::DTypeToString(t), " cannot be saved as .npy (NumPy has no such type)"));
  }
  if (tensor.device().device_type != kDLCPU || !tensor.is_contiguous()) {
    return absl::InvalidArgumentError("only contiguous CPU tensors can be saved as .npy");
  }
  return formats::WriteNpy(path, type, tensor.shape(), tensor.data(), static_cast<uint64_t>(tensor.nbytes()));
}

}  // namespace kiln::tools
