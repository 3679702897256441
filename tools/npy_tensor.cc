#include "tools/npy_tensor.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/npy.h"
#include "support/utf8.h"
#include "vm/string_tensor.h"

namespace kiln::tools {
namespace {

DLDataType ToDLDataType(formats::NpyType t) {
  uint8_t code = kDLInt;
  if (t.kind == 'f') code = kDLFloat;
  if (t.kind == 'u') code = kDLUInt;
  if (t.kind == 'b') code = vm::kDTypeBool;
  return DLDataType{code, static_cast<uint8_t>(t.bytes * 8), 1};
}

// A '<U<n>' array (n UTF-32 code units per element, NUL-padded; NumPy drops trailing NULs)
// as a string tensor of UTF-8 text.
absl::StatusOr<vm::Tensor> ReadNpyStrings(const std::string& path, const formats::NpyArray& array) {
  const int64_t width = array.type.bytes / 4;
  const int64_t numel = width == 0 ? 0 : static_cast<int64_t>(array.nbytes) / array.type.bytes;
  std::vector<std::string> strings(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    const char* element = array.data + i * array.type.bytes;
    int64_t length = width;
    auto unit = [&](int64_t k) {
      uint32_t cp;
      std::memcpy(&cp, element + 4 * k, 4);
      return cp;
    };
    while (length > 0 && unit(length - 1) == 0) --length;
    for (int64_t k = 0; k < length; ++k) {
      const uint32_t cp = unit(k);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": element ", i, " holds ", cp, ", not a Unicode code point"));
      }
      AppendUtf8(cp, &strings[i]);
    }
  }
  return vm::MakeStringTensor(array.shape, strings);
}

// A string tensor as '<U<n>' data, n the longest element in code points (at least 1).
absl::Status WriteNpyStrings(const std::string& path, const vm::Tensor& tensor) {
  std::vector<std::vector<uint32_t>> text(static_cast<size_t>(tensor.numel()));
  size_t width = 1;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    const std::string_view s = vm::StringAt(tensor, i);
    for (size_t k = 0; k < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[k]);
      const int len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
      if (len == 0 || k + len > s.size()) {
        return absl::InvalidArgumentError(absl::StrCat("output element ", i, " is not UTF-8 text: .npy cannot hold it"));
      }
      uint32_t cp = len == 1 ? c : c & (0x7f >> len);
      for (int j = 1; j < len; ++j) cp = (cp << 6) | (static_cast<unsigned char>(s[k + j]) & 0x3f);
      text[i].push_back(cp);
      k += len;
    }
    width = std::max(width, text[i].size());
  }
  std::vector<uint32_t> data(text.size() * width, 0);
  for (size_t i = 0; i < text.size(); ++i) std::copy(text[i].begin(), text[i].end(), data.begin() + i * width);
  return formats::WriteNpy(path, formats::NpyType{'U', static_cast<int>(width * 4)}, tensor.shape(), data.data(),
                           static_cast<uint64_t>(data.size() * 4));
}

}  // namespace

absl::StatusOr<vm::Tensor> ReadNpyTensor(const std::string& path) {
  absl::StatusOr<formats::NpyArray> array = formats::ReadNpy(path);
  if (!array.ok()) return array.status();
  if (array->type.kind == 'U') return ReadNpyStrings(path, *array);
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
  if (vm::IsStringTensor(tensor)) return WriteNpyStrings(path, tensor);
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
