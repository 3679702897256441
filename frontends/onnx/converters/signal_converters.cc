// DFT (17; axis an input from 20): the discrete Fourier transform along one axis of a signal
// whose last dim holds (real) or (real, imaginary), as matmuls with cosine / sine matrices
// built at import time (the length must be static), computed in float64 and cast back:
//   forward   X[k] = sum_n x[n] e^(-2 pi i k n / K)     (onesided: k <= K / 2 only)
//   inverse   x[n] = 1/K sum_k X[k] e^(+2 pi i k n / K)
//   onesided inverse (irfft): X of K / 2 + 1 frequencies, the rest their conjugates; a real
//             result of length K.
// K is dft_length (default: the axis' length, 2 (length - 1) for irfft); the signal is
// cropped or zero-padded to K as numpy.fft does.
#include <cmath>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// A (rows, cols) float64 matrix constant, element (r, c) = f(r, c).
template <typename F>
Expr Matrix(int64_t rows, int64_t cols, F f) {
  std::vector<double> values;
  values.reserve(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) values.push_back(f(r, c));
  }
  return relax::Constant(DataFromDoubles(values, DataType::Float(64), {rows, cols}));
}

absl::StatusOr<std::vector<Value>> ConvertDft(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  if (!AllConstant(shape, &dims)) return c.Unsupported("needs an input of static shape");
  if (rank < 2 || (dims.back() != 1 && dims.back() != 2)) {
    return c.Error("the last dim must be 1 (real) or 2 (real, imaginary), input of rank ", rank);
  }
  if (!dtype.is_floating()) return c.Error("needs a float input, got ", dtype.ToString());
  int64_t axis = c.opset() >= 20 ? -2 : c.AttrInt("axis", 1);
  if (c.opset() >= 20 && c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axis_value, c.InputInts(2));
    if (axis_value.size() != 1) return c.Error("axis must hold one value");
    axis = axis_value[0];
  }
  KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(c, axis, rank));
  if (axis == rank - 1) return c.Error("axis cannot be the last (real, imaginary) dim");
  const bool inverse = c.AttrInt("inverse", 0) != 0, onesided = c.AttrInt("onesided", 0) != 0;
  const int64_t length = dims[axis];
  int64_t k_len = inverse && onesided ? 2 * (length - 1) : length;
  if (c.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dft_length, c.InputInts(1));
    if (dft_length.size() != 1 || dft_length[0] < 1) return c.Error("dft_length must be one positive value");
    k_len = dft_length[0];
  }
  if (k_len < 1) return c.Error("the transform length must be positive");
  const bool complex_input = dims.back() == 2;
  // Input rows used (cropped to K) and output columns.
  const int64_t rows = inverse && onesided ? std::min(length, k_len / 2 + 1) : std::min(length, k_len);
  const int64_t cols = !inverse && onesided ? k_len / 2 + 1 : k_len;
  // The matrices are host data: refuse what would not fit comfortably (64 Mi values).
  if (k_len > (int64_t{1} << 26) || rows * cols > (int64_t{1} << 26)) {
    return c.Unsupported("a transform of length ", k_len, " over ", rows, " inputs (matrices of at most 2^26 values)");
  }
  const double two_pi_over_k = 2.0 * M_PI / static_cast<double>(k_len);

  // x as float64 with the axis moved last: real and imaginary parts of shape (..., rows).
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(x, c.Call("astype", {x}, {{"dtype", DataType::Float(64)}}));
  std::vector<int64_t> to_last;
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (d != axis) to_last.push_back(d);
  }
  to_last.push_back(axis);
  to_last.push_back(rank - 1);
  KILN_ASSIGN_OR_RETURN(x, c.Call("permute_dims", {x}, {{"axes", to_last}}));
  if (rows != length) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("strided_slice", {x},
                                    {{"begin", std::vector<int64_t>{0}},
                                     {"end", std::vector<int64_t>{rows}},
                                     {"axes", std::vector<int64_t>{rank - 2}},
                                     {"strides", std::vector<int64_t>{1}}}));
  }
  auto part = [&](int64_t index) {
    return c.Call("take", {x, ScalarConstant(static_cast<double>(index), DataType::Int64())}, {{"axis", rank - 1}});
  };
  KILN_ASSIGN_OR_RETURN(Expr re, part(0));
  Expr im;
  if (complex_input) {
    KILN_ASSIGN_OR_RETURN(im, part(1));
  }

  // out = re @ A + im @ B for each output part, A and B from the angle 2 pi r c / K.
  auto angle = [&](int64_t r, int64_t col) { return two_pi_over_k * static_cast<double>((r * col) % k_len); };
  const double scale = inverse ? 1.0 / static_cast<double>(k_len) : 1.0;
  const double sign = inverse ? 1.0 : -1.0;  // e^(sign i angle)
  auto apply = [&](Expr a_matrix, Expr b_matrix) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr out, c.Call("matmul", {re, a_matrix}));
    if (!im.defined()) return out;
    KILN_ASSIGN_OR_RETURN(Expr from_im, c.Call("matmul", {im, b_matrix}));
    return c.Call("add", {out, from_im});
  };
  std::vector<Expr> parts;
  if (inverse && onesided) {
    // Hermitian: frequency r counts twice except 0 and K / 2.
    auto weight = [&](int64_t r) { return r == 0 || 2 * r == k_len ? 1.0 : 2.0; };
    KILN_ASSIGN_OR_RETURN(Expr real, apply(Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                             return weight(r) * scale * std::cos(angle(r, col));
                                           }),
                                           Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                             return -weight(r) * scale * std::sin(angle(r, col));
                                           })));
    parts.push_back(real);
  } else {
    // (re + i im)(cos + i sign sin): real = re cos - sign im sin, imag = im cos + sign re sin.
    KILN_ASSIGN_OR_RETURN(Expr real, apply(Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                             return scale * std::cos(angle(r, col));
                                           }),
                                           Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                             return -sign * scale * std::sin(angle(r, col));
                                           })));
    std::swap(re, im);  // imag = im cos + sign re sin: the same form with the parts swapped
    Expr imag;
    if (re.defined()) {
      KILN_ASSIGN_OR_RETURN(imag, apply(Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                          return scale * std::cos(angle(r, col));
                                        }),
                                        Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                          return sign * scale * std::sin(angle(r, col));
                                        })));
    } else {
      // A real signal: imag = sign re sin, re now in `im`.
      KILN_ASSIGN_OR_RETURN(imag, c.Call("matmul", {im, Matrix(rows, cols, [&](int64_t r, int64_t col) {
                                                      return sign * scale * std::sin(angle(r, col));
                                                    })}));
    }
    parts = {real, imag};
  }
  // Stack the parts as the last dim, move the transformed axis back, cast to x's type.
  std::vector<PrimExpr> part_shape;
  for (int64_t d = 0; d < rank - 2; ++d) part_shape.push_back(PrimExpr(dims[to_last[d]]));
  part_shape.push_back(PrimExpr(cols));
  part_shape.push_back(PrimExpr(1));
  std::vector<Expr> expanded;
  for (const Expr& p : parts) {
    KILN_ASSIGN_OR_RETURN(Expr e, Reshape(c, p, part_shape));
    expanded.push_back(e);
  }
  Expr y = expanded[0];
  if (expanded.size() == 2) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("concat", {relax::Tuple(expanded)}, {{"axis", rank - 1}}));
  }
  std::vector<int64_t> back(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) back[to_last[d]] = d;
  KILN_ASSIGN_OR_RETURN(y, c.Call("permute_dims", {y}, {{"axes", back}}));
  KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", dtype}}));
  return Outputs(y);
}

}  // namespace

void RegisterSignalConverters(ConverterRegistry& r) { r.Register("DFT", ConvertDft, 17); }

}  // namespace kiln::frontends::onnx
