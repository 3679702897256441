#include "frontends/onnx/converters/common.h"

#include <cmath>
#include <cstring>

#include "support/float16.h"
#include "tir/analyzer.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {

using relax::Expr;

absl::StatusOr<int64_t> NormalizeAxis(const NodeContext& context, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim) {
    return context.Error("axis ", axis, " is out of range for a tensor of ", ndim, " dims");
  }
  return axis < 0 ? axis + ndim : axis;
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const NodeContext& context, std::vector<int64_t> axes,
                                                   int64_t ndim) {
  for (int64_t& axis : axes) {
    absl::StatusOr<int64_t> a = NormalizeAxis(context, axis, ndim);
    if (!a.ok()) return a.status();
    axis = *a;
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t j = i + 1; j < axes.size(); ++j) {
      if (axes[i] == axes[j]) return context.Error("axis ", axes[i], " is listed twice");
    }
  }
  return axes;
}

relax::ConstantData DataFromDoubles(const std::vector<double>& values, tir::DataType dtype,
                                    std::vector<int64_t> shape) {
  const int bytes_per = dtype.bytes();
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * bytes_per);
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = bytes->data() + i * bytes_per;
    const double v = values[i];
    auto store = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
    if (dtype.is_bool()) {
      store(static_cast<uint8_t>(v != 0));
    } else if (dtype.is_float() && dtype.bits() == 32) {
      store(static_cast<float>(v));
    } else if (dtype.is_float() && dtype.bits() == 64) {
      store(v);
    } else if (dtype.is_float() && dtype.bits() == 16) {
      store(support::DoubleToHalf(v));
    } else if (dtype.is_bfloat()) {
      store(support::FloatToBFloat16(static_cast<float>(v)));
    } else if (dtype.is_int() || dtype.is_uint()) {
      // Through int64 (or uint64 above its range): the low bytes are the narrower value.
      if (dtype.is_uint() && v >= 9.2e18) {
        uint64_t u = static_cast<uint64_t>(v);
        std::memcpy(p, &u, bytes_per);
      } else {
        int64_t x = std::isfinite(v) ? static_cast<int64_t>(v) : 0;
        std::memcpy(p, &x, bytes_per);
      }
    }
  }
  return relax::ConstantData{dtype, std::move(shape), std::move(bytes), ""};
}

Expr ScalarConstant(double value, tir::DataType dtype) { return relax::Constant(DataFromDoubles({value}, dtype, {})); }

absl::StatusOr<Expr> Reshape(NodeContext& context, Expr x, std::vector<PrimExpr> shape) {
  return context.Call("reshape", {std::move(x), relax::ShapeExpr(std::move(shape))});
}

int64_t StaticDim(const PrimExpr& dim) {
  std::vector<int64_t> v;
  return AllConstant({dim}, &v) ? v[0] : -1;
}

PrimExpr Product(const std::vector<PrimExpr>& dims, size_t begin, size_t end) {
  PrimExpr p(1);
  for (size_t i = begin; i < end && i < dims.size(); ++i) p = p * dims[i];
  return Simplify(p);
}

PrimExpr Simplify(const PrimExpr& e) {
  tir::Analyzer analyzer;
  return analyzer.Simplify(e);
}

absl::StatusOr<relax::Expr> TakeIndex(NodeContext& c, const relax::Expr& x, const std::vector<PrimExpr>& shape,
                                      int64_t axis, int64_t index) {
  KILN_ASSIGN_OR_RETURN(relax::Expr slice, c.Call("strided_slice", {x},
                                                  {{"begin", std::vector<int64_t>{index}},
                                                   {"end", std::vector<int64_t>{index + 1}},
                                                   {"axes", std::vector<int64_t>{axis}},
                                                   {"strides", std::vector<int64_t>{1}}}));
  std::vector<PrimExpr> rest = shape;
  rest.erase(rest.begin() + axis);
  return Reshape(c, slice, rest);
}

}  // namespace kiln::frontends::onnx
