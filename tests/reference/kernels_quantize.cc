// Quantization kernels: dequantize (block layouts in relax/op/quantize.cc), written from
// the layout: per block, the float16 scale decoded by HostTensor, then each weight.
#include <string>
#include <variant>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<RefValue> Dequantize(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* data, call.Tensor(0, "data"));
  auto it = call.call.attrs.find("format");
  const std::string* format = it == call.call.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (format == nullptr || (*format != "q4_0" && *format != "q8_0")) {
    return call.Error("attribute format must be \"q4_0\" or \"q8_0\"");
  }
  const bool q4 = *format == "q4_0";
  const int64_t block_bytes = q4 ? 18 : 34;
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  const DataType out_dtype = dtype.value_or(DataType::Float32());
  if (data->dtype() != DataType::UInt(8) || data->ndim() == 0 || data->shape().back() % block_bytes != 0) {
    return call.Error("data must be uint8 with whole blocks along its last dim");
  }
  std::vector<int64_t> shape = data->shape();
  const int64_t row_bytes = shape.back();
  const int64_t blocks_per_row = row_bytes / block_bytes;
  shape.back() = blocks_per_row * 32;
  HostTensor out(out_dtype, shape);
  const int64_t rows = row_bytes == 0 ? 0 : data->numel() / row_bytes;
  const std::vector<uint8_t>& bytes = data->bytes();
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t b = 0; b < blocks_per_row; ++b) {
      const int64_t at = row * row_bytes + b * block_bytes;
      const double d = HostTensor::FromBytes(DataType::Float(16), {}, {bytes[at], bytes[at + 1]}).GetDouble(0);
      // float32, as the operator states: (q - 8) and d are exact in float32, the product
      // is rounded to float32, then to the output dtype.
      for (int j = 0; j < 32; ++j) {
        int q;
        if (q4) {
          const uint8_t packed = bytes[at + 2 + j % 16];
          q = (j < 16 ? packed & 0x0f : packed >> 4) - 8;
        } else {
          q = static_cast<int8_t>(bytes[at + 2 + j]);
        }
        const float w = static_cast<float>(q) * static_cast<float>(d);
        out.SetDouble(row * blocks_per_row * 32 + b * 32 + j, w);
      }
    }
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddQuantizeKernels(KernelTable& table) { table["dequantize"] = Dequantize; }

}  // namespace kiln::reference
