#include "formats/gguf_tensor_view.h"

#include "formats/ggml_type.h"

namespace kiln::formats {

GgufTensorView ViewOf(const GgufTensor& tensor) {
  GgufTensorView view;
  view.shape = tensor.shape;
  switch (tensor.type) {
    case GgmlType::kF32: view.dtype = "float32"; return view;
    case GgmlType::kF16: view.dtype = "float16"; return view;
    case GgmlType::kBF16: view.dtype = "bfloat16"; return view;
    case GgmlType::kF64: view.dtype = "float64"; return view;
    case GgmlType::kI8: view.dtype = "int8"; return view;
    case GgmlType::kI16: view.dtype = "int16"; return view;
    case GgmlType::kI32: view.dtype = "int32"; return view;
    case GgmlType::kI64: view.dtype = "int64"; return view;
    default: break;
  }
  const GgmlTypeInfo info = GgmlTypeLayout(tensor.type);
  view.dtype = "uint8";
  view.quantized = true;
  if (view.shape.empty()) view.shape = {tensor.num_elements};
  view.shape.back() = view.shape.back() / info.block_size * info.block_bytes;
  return view;
}

}  // namespace kiln::formats
