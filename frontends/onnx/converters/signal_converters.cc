// DFT (17; axis an input from 20) and STFT (17; framed DFTs, below): the discrete Fourier
// transform along one axis of a signal whose last dim holds (real) or (real, imaginary), as
// matmuls with cosine / sine matrices built at import time (the transformed length must be
// static, other dims may be symbolic), computed in float64 and cast back:
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

// The DFT of float64 x (lead..., length, 1 | 2) along its second-to-last axis, K = k_len
// (cropped or zero-padded to K): (lead..., cols, 2), or (lead..., K, 1) for the onesided
// inverse, in float64. The lead dims may be symbolic.
absl::StatusOr<Expr> DftOfSecondToLast(NodeContext& c, Expr x, const std::vector<PrimExpr>& lead, int64_t length,
                                       bool complex_input, int64_t k_len, bool inverse, bool onesided) {
  const int64_t rank = static_cast<int64_t>(lead.size()) + 2;
  // Input rows used (cropped to K) and output columns.
  const int64_t rows = inverse && onesided ? std::min(length, k_len / 2 + 1) : std::min(length, k_len);
  const int64_t cols = !inverse && onesided ? k_len / 2 + 1 : k_len;
  // The matrices are host data: refuse what would not fit comfortably (64 Mi values).
  if (k_len > (int64_t{1} << 26) || rows * cols > (int64_t{1} << 26)) {
    return c.Unsupported("a transform of length ", k_len, " over ", rows, " inputs (matrices of at most 2^26 values)");
  }
  const double two_pi_over_k = 2.0 * M_PI / static_cast<double>(k_len);
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
  // Stack the parts as the last dim.
  std::vector<PrimExpr> part_shape = lead;
  part_shape.push_back(PrimExpr(cols));
  part_shape.push_back(PrimExpr(1));
  std::vector<Expr> expanded;
  for (const Expr& p : parts) {
    KILN_ASSIGN_OR_RETURN(Expr e, Reshape(c, p, part_shape));
    expanded.push_back(e);
  }
  if (expanded.size() == 1) return expanded[0];
  return c.Call("concat", {relax::Tuple(expanded)}, {{"axis", rank - 1}});
}

absl::StatusOr<std::vector<Value>> ConvertDft(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2 || (StaticDim(shape.back()) != 1 && StaticDim(shape.back()) != 2)) {
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
  const int64_t length = StaticDim(shape[axis]);
  if (length < 0) return c.Unsupported("needs a static length along axis ", axis, " (the other dims may be symbolic)");
  int64_t k_len = inverse && onesided ? 2 * (length - 1) : length;
  if (c.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dft_length, c.InputInts(1));
    if (dft_length.size() != 1 || dft_length[0] < 1) return c.Error("dft_length must be one positive value");
    k_len = dft_length[0];
  }
  if (k_len < 1) return c.Error("the transform length must be positive");
  const bool complex_input = StaticDim(shape.back()) == 2;

  // x as float64 with the axis moved second to last.
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(x, c.Call("astype", {x}, {{"dtype", DataType::Float(64)}}));
  std::vector<int64_t> to_last;
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (d != axis) to_last.push_back(d);
  }
  to_last.push_back(axis);
  to_last.push_back(rank - 1);
  KILN_ASSIGN_OR_RETURN(x, c.Call("permute_dims", {x}, {{"axes", to_last}}));
  std::vector<PrimExpr> lead;
  for (int64_t d = 0; d < rank - 2; ++d) lead.push_back(shape[to_last[d]]);
  KILN_ASSIGN_OR_RETURN(Expr y, DftOfSecondToLast(c, x, lead, length, complex_input, k_len, inverse, onesided));
  // Move the transformed axis back, cast to x's type.
  std::vector<int64_t> back(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) back[to_last[d]] = d;
  KILN_ASSIGN_OR_RETURN(y, c.Call("permute_dims", {y}, {{"axes", back}}));
  KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", dtype}}));
  return Outputs(y);
}

// STFT (17): signal (batch, length, 1 | 2) cut into frames of frame_length samples every
// frame_step, each multiplied by the window (default: ones) and transformed as DFT does:
// (batch, frames, bins, 2) with frames = 1 + (length - frame_length) / frame_step and bins
// frame_length / 2 + 1 when onesided (the default), else frame_length. frame_step and
// frame_length must be known at import time, and the length static; the batch may be
// symbolic. The window multiplies in the signal's type, the transform is float64 (as ONNX's
// reference: numpy's float32 product, then its FFT).
absl::StatusOr<std::vector<Value>> ConvertStft(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (shape.size() != 3 || (StaticDim(shape[2]) != 1 && StaticDim(shape[2]) != 2)) {
    return c.Error("signal must be (batch, length, 1) or (batch, length, 2), got rank ", shape.size());
  }
  if (!dtype.is_floating()) return c.Error("needs a float signal, got ", dtype.ToString());
  const int64_t length = StaticDim(shape[1]);
  if (length < 0) return c.Unsupported("needs a signal of static length (the batch may be symbolic)");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> step, c.InputInts(1));
  if (step.size() != 1 || step[0] < 1) return c.Error("frame_step must be one positive value");
  int64_t window_length = -1;
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> window_shape, c.InputShape(2));
    if (window_shape.size() != 1 || StaticDim(window_shape[0]) < 1) {
      return c.Error("window must be 1-D of static, positive length");
    }
    window_length = StaticDim(window_shape[0]);
  }
  int64_t frame_length = window_length > 0 ? window_length : length;
  if (c.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> given, c.InputInts(3));
    if (given.size() != 1 || given[0] < 1) return c.Error("frame_length must be one positive value");
    if (window_length > 0 && given[0] != window_length) {
      return c.Error("frame_length ", given[0], " differs from the window's length ", window_length);
    }
    frame_length = given[0];
  }
  if (frame_length < 1) return c.Error("the signal is empty");
  if (frame_length > length) {
    return c.Error("frame_length ", frame_length, " is longer than the signal (", length, " samples)");
  }
  const int64_t frames = 1 + (length - frame_length) / step[0];
  const bool onesided = c.AttrInt("onesided", 1) != 0;
  if (frames * frame_length > (int64_t{1} << 26)) {
    return c.Unsupported(frames, " frames of ", frame_length, " samples (an index table of at most 2^26 values)");
  }

  // Frames: x[:, f * step + k] for f < frames, k < frame_length, gathered by one index table.
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(frames * frame_length));
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t k = 0; k < frame_length; ++k) index.push_back(f * step[0] + k);
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  const Expr frame_index = relax::Constant(IntData(index, DataType::Int64(), {frames, frame_length}));
  KILN_ASSIGN_OR_RETURN(Expr framed, c.Call("take", {x, frame_index}, {{"axis", int64_t{1}}}));
  if (c.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Expr window, c.Input(2));
    KILN_ASSIGN_OR_RETURN(DataType window_dtype, c.InputDType(2));
    if (window_dtype != dtype) {
      KILN_ASSIGN_OR_RETURN(window, c.Call("astype", {window}, {{"dtype", dtype}}));
    }
    KILN_ASSIGN_OR_RETURN(window, Reshape(c, window, {PrimExpr(1), PrimExpr(1), PrimExpr(frame_length), PrimExpr(1)}));
    KILN_ASSIGN_OR_RETURN(framed, c.Call("multiply", {framed, window}));
  }
  KILN_ASSIGN_OR_RETURN(framed, c.Call("astype", {framed}, {{"dtype", DataType::Float(64)}}));
  KILN_ASSIGN_OR_RETURN(Expr y, DftOfSecondToLast(c, framed, {shape[0], PrimExpr(frames)}, frame_length,
                                                  StaticDim(shape[2]) == 2, frame_length, /*inverse=*/false, onesided));
  KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", dtype}}));
  return Outputs(y);
}

}  // namespace

void RegisterSignalConverters(ConverterRegistry& r) {
  r.Register("DFT", ConvertDft, 17);
  r.Register("STFT", ConvertStft, 17);
}

}  // namespace kiln::frontends::onnx
