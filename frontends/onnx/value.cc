#include "frontends/onnx/value.h"

#include <cmath>
#include <cstring>

#include "support/check.h"
#include "support/float16.h"

namespace kiln::frontends::onnx {
namespace {

uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

}  // namespace

double ElementAsDouble(const relax::ConstantData& data, int64_t i) {
  const uint8_t* p = data.bytes->data() + i * data.dtype.bytes();
  const tir::DataType t = data.dtype;
  auto load = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof(v));
    return static_cast<double>(v);
  };
  if (t.is_bool()) return *p != 0;
  if (t.is_float()) {
    if (t.bits() == 32) return load(float{});
    if (t.bits() == 64) return load(double{});
    if (t.bits() == 16) return support::HalfToFloat(Load16(p));
  }
  if (t.is_bfloat()) {
    return support::BFloat16ToFloat(Load16(p));
  }
  if (t.is_int()) {
    switch (t.bits()) {
      case 8: return load(int8_t{});
      case 16: return load(int16_t{});
      case 32: return load(int32_t{});
      case 64: return load(int64_t{});
    }
  }
  if (t.is_uint()) {
    switch (t.bits()) {
      case 8: return load(uint8_t{});
      case 16: return load(uint16_t{});
      case 32: return load(uint32_t{});
      case 64: return load(uint64_t{});
    }
  }
  KILN_CHECK(false) << "ElementAsDouble: unsupported dtype";
  return 0;
}

int64_t ElementAsInt(const relax::ConstantData& data, int64_t i) {
  const tir::DataType t = data.dtype;
  if ((t.is_int() || t.is_uint()) && t.bits() == 64) {
    int64_t v;
    std::memcpy(&v, data.bytes->data() + i * 8, 8);
    return v;
  }
  double d = ElementAsDouble(data, i);
  if (std::isnan(d)) return 0;
  if (d >= 9.2e18) return INT64_MAX;
  if (d <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(d);
}

std::optional<std::vector<PrimExpr>> ElementsOfData(const relax::ConstantData& data) {
  if (data.is_external() || data.shape.size() > 1) return std::nullopt;
  if (!data.dtype.is_integer() && !data.dtype.is_bool()) return std::nullopt;
  const int64_t n = data.numel();
  if (n > kMaxShapeValueElements) return std::nullopt;
  std::vector<PrimExpr> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(PrimExpr(ElementAsInt(data, i)));
  return out;
}

bool AllConstant(const std::vector<PrimExpr>& elements, std::vector<int64_t>* out) {
  std::vector<int64_t> values;
  for (const PrimExpr& e : elements) {
    const auto* imm = dynamic_cast<const tir::IntImmNode*>(e.get());
    if (imm == nullptr) return false;
    values.push_back(imm->value);
  }
  if (out != nullptr) *out = std::move(values);
  return true;
}

relax::ConstantData IntData(const std::vector<int64_t>& values, tir::DataType dtype, std::vector<int64_t> shape) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * dtype.bytes());
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = bytes->data() + i * dtype.bytes();
    const int64_t v = dtype.is_bool() ? (values[i] != 0) : values[i];
    // Little-endian: the low bytes of the int64 are the narrower integer's two's complement.
    std::memcpy(p, &v, dtype.bytes());
  }
  return relax::ConstantData{dtype, std::move(shape), std::move(bytes), ""};
}

}  // namespace kiln::frontends::onnx
