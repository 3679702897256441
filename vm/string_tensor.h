// String tensors: tensors of dtype `string` (DTypeString(): an opaque 128-bit handle, DLPack's
// code 3; the compiler's tir::StringType() agrees), ONNX's STRING element type.
//
// Layout. Each element is a StringElement, a (pointer, byte length) pair of 16 bytes; the
// bytes it points to live in one arena that the tensor's memory owner holds together with the
// element table, so views of the tensor (reshape, slices of the first dimension) stay valid
// as long as any of them lives. Strings are bytes (UTF-8 by ONNX's convention), not
// NUL-terminated; an element may be empty.
//
// Who touches them. Only host builtins (builtins/string_builtins.cc) and the runtime's
// readers and writers create or read string tensors; generated kernels never do: copying the
// 16-byte elements into a fresh tensor would leave pointers into an arena that tensor does
// not own, so the compiler refuses to legalize any operator over a string tensor
// (relax/transform/legalize_ops.cc). Operators that only view the tensor (reshape as
// `kiln.reshape`) keep the owner and are safe.
//
// Host form. Outside a running VM (relax::ConstantData read from an ONNX TensorProto or a
// `.npy` file) a string tensor's bytes are packed (support/packed_strings.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/tensor.h"

namespace kiln::vm {

inline constexpr DLDataType DTypeString() { return {kDLOpaqueHandle, 128, 1}; }

struct StringElement {
  const char* data;
  uint64_t size;
};
static_assert(sizeof(StringElement) == 16, "a string element is the 128 bits DTypeString() says");

bool IsStringTensor(const Tensor& t);

// A fresh CPU string tensor of `shape` holding `strings` (row-major; as many as the shape's
// element count, else an InvalidArgument error).
absl::StatusOr<Tensor> MakeStringTensor(const std::vector<int64_t>& shape, const std::vector<std::string>& strings);

// Element i of a compact string tensor (the caller checked IsStringTensor and the index).
inline std::string_view StringAt(const Tensor& t, int64_t i) {
  const StringElement& e = t.data_as<const StringElement>()[i];
  return std::string_view(e.data, e.size);
}

// Every element, row-major (requires a compact string tensor).
std::vector<std::string> StringsOf(const Tensor& t);

}  // namespace kiln::vm
