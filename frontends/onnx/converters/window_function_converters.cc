// HannWindow, HammingWindow, BlackmanWindow (opset 17): the window of `size` points, for
// n = 0 .. size - 1 and N = size (periodic, the default) or size - 1 (symmetric):
//   Hann      sin^2(pi n / N)
//   Hamming   25/46 - (21/46) cos(2 pi n / N)
//   Blackman  0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
// The output's length is `size`, so size must be known at import time (a constant, or a
// bound graph input as Range's bounds): the window is then computed here, in double, and is
// a constant of output_datatype. A symmetric window of one point (N = 0) is [1], as
// PyTorch's windows; ONNX's reference divides by zero there.
#include <cmath>
#include <functional>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

// Windows longer than this are refused (a constant of that many elements).
constexpr int64_t kMaxWindow = int64_t{1} << 24;

using WindowFormula = std::function<double(double n, double period)>;

absl::StatusOr<std::vector<Value>> ConvertWindow(NodeContext& c, const WindowFormula& formula) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, c.InputInts(0));
  if (sizes.size() != 1) return c.Error("size must be a scalar");
  const int64_t size = sizes[0];
  if (size < 0) return c.Error("size must not be negative, got ", size);
  if (size > kMaxWindow) return c.Unsupported("a window of ", size, " points is too long (at most ", kMaxWindow, ")");
  const int32_t onnx_type = static_cast<int32_t>(c.AttrInt("output_datatype", ::onnx::TensorProto::FLOAT));
  KILN_ASSIGN_OR_RETURN(tir::DataType dtype, DataTypeFromOnnx(onnx_type));
  const NarrowType* narrow = FindNarrowType(onnx_type);
  if (narrow != nullptr && onnx_type != ::onnx::TensorProto::BFLOAT16) {
    return c.Unsupported("output_datatype ", OnnxDataTypeName(onnx_type), " is not supported");
  }
  const bool periodic = c.AttrInt("periodic", 1) != 0;
  const double period = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> values(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) values[n] = period == 0 ? 1.0 : formula(static_cast<double>(n), period);
  // bfloat16 (held in float32) is rounded by the importer: output_datatype names the type.
  return std::vector<Value>{Value::OfData(DataFromDoubles(values, dtype, {size}))};
}

constexpr double kPi = 3.14159265358979323846;

absl::StatusOr<std::vector<Value>> ConvertHannWindow(NodeContext& c) {
  return ConvertWindow(c, [](double n, double period) {
    const double s = std::sin(kPi * n / period);
    return s * s;
  });
}

absl::StatusOr<std::vector<Value>> ConvertHammingWindow(NodeContext& c) {
  return ConvertWindow(c, [](double n, double period) {
    const double alpha = 25.0 / 46.0;
    return alpha - (1 - alpha) * std::cos(2 * kPi * n / period);
  });
}

absl::StatusOr<std::vector<Value>> ConvertBlackmanWindow(NodeContext& c) {
  return ConvertWindow(c, [](double n, double period) {
    return 0.42 - 0.5 * std::cos(2 * kPi * n / period) + 0.08 * std::cos(4 * kPi * n / period);
  });
}

}  // namespace

void RegisterWindowFunctionConverters(ConverterRegistry& r) {
  r.Register("HannWindow", ConvertHannWindow, 17);
  r.Register("HammingWindow", ConvertHammingWindow, 17);
  r.Register("BlackmanWindow", ConvertBlackmanWindow, 17);
}

}  // namespace kiln::frontends::onnx
