// MelWeightMatrix (17): the (dft_length / 2 + 1, num_mel_bins) matrix that maps a onesided
// spectrum's bins to mel bands, as ONNX's reference (onnx.reference.ops) computes it:
//   mel(f)   = 2595 log10(1 + f / 700)                       (in the edges' type, then float64)
//   edge[i]  = 700 (10^((mel(lower) + i * step) / 2595) - 1),  i = 0 .. num_mel_bins + 1,
//              step = (mel(upper) - mel(lower)) / (num_mel_bins + 2)
//   bin[i]   = floor((dft_length + 1) edge[i] / sample_rate)
//   band m rises from bin[m] to bin[m + 1] ((j - bin[m]) / (bin[m + 1] - bin[m]), 1 at the
//   center, or only the center 1 when the two coincide) and falls to bin[m + 2]
//   ((bin[m + 2] - j) / (bin[m + 2] - bin[m + 1]) for j < bin[m + 2]).
// The step divides by num_mel_bins + 2 as the reference does (the last band stops short of
// upper_edge_hertz). num_mel_bins and dft_length shape the output, so they must be known at
// import time. When all five inputs are, the matrix is computed here, in double as numpy
// does, and is a constant of output_datatype; a band reaching outside the spectrum (an edge
// below 0 or above the Nyquist frequency) is then an error (the reference raises, or wraps a
// negative row index around). Otherwise sample_rate and the edges are run-time values and the
// same formulas are Relax operators; rows outside the spectrum are then simply absent, and
// log1p / expm1 are computed as log(1 + x) / exp(x) - 1 in float64 (a bin can differ from the
// reference only where an edge falls within rounding of a bin boundary).
#include <cmath>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/float16.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Matrices larger than this are refused (a constant, or a run-time grid, of that many values).
constexpr int64_t kMaxElements = int64_t{1} << 26;
constexpr double kLn10 = 2.302585092994045684;  // numpy's np.log(10)

// x rounded to the edges' type, as numpy computes each step of mel(f) in it.
double RoundTo(DataType dtype, double x) {
  if (dtype == DataType::Float32()) return static_cast<float>(x);
  if (dtype == DataType::Float(16)) return support::HalfToFloat(support::DoubleToHalf(x));
  return x;
}

// 2595 log1p(f / 700) with each step in the edges' type, then / ln(10) in float64.
double Mel(DataType dtype, double hertz) {
  const double ratio = RoundTo(dtype, hertz / 700.0);
  // numpy casts the Python int 2595 to the edges' type too (2596 in float16).
  return RoundTo(dtype, RoundTo(dtype, 2595.0) * RoundTo(dtype, std::log1p(ratio))) / kLn10;
}

// numpy's float floor_divide (npy_divmod): the floor of the exact quotient.
double FloorDivide(double a, double b) {
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  const double floor_div = std::floor(div);
  return div - floor_div > 0.5 ? floor_div + 1 : floor_div;
}

absl::StatusOr<std::vector<Value>> MatrixAtImportTime(NodeContext& c, int64_t mel_bins, int64_t dft_length,
                                                      int64_t rows, DataType edge_dtype, DataType out_dtype) {
  KILN_ASSIGN_OR_RETURN(relax::ConstantData sample_rate, c.InputData(2));
  KILN_ASSIGN_OR_RETURN(relax::ConstantData lower, c.InputData(3));
  KILN_ASSIGN_OR_RETURN(relax::ConstantData upper, c.InputData(4));
  if (sample_rate.numel() != 1 || lower.numel() != 1 || upper.numel() != 1) {
    return c.Error("sample_rate, lower_edge_hertz and upper_edge_hertz must be scalars");
  }
  const double rate = static_cast<double>(ElementAsInt(sample_rate, 0));
  if (rate <= 0) return c.Error("sample_rate must be positive, got ", rate);
  const double low_mel = Mel(edge_dtype, ElementAsDouble(lower, 0));
  const double high_mel = Mel(edge_dtype, ElementAsDouble(upper, 0));
  const double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> bins;
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hertz = 700.0 * std::expm1((static_cast<double>(i) * step + low_mel) / 2595.0 * kLn10);
    const double bin = FloorDivide(static_cast<double>(dft_length + 1) * hertz, rate);
    if (!std::isfinite(bin)) return c.Error("mel edge ", i, " is not finite (", hertz, " Hz)");
    bins.push_back(static_cast<int64_t>(bin));
  }
  std::vector<double> values(static_cast<size_t>(rows * mel_bins), 0.0);
  auto set = [&](int64_t row, int64_t band, double value) -> absl::Status {
    if (row < 0 || row >= rows) {
      return c.Error("mel band ", band, " reaches frequency bin ", row, ", outside the spectrum's 0..", rows - 1,
                     " (lower_edge_hertz / upper_edge_hertz beyond 0..sample_rate / 2?)");
    }
    values[static_cast<size_t>(row * mel_bins + band)] = value;
    return absl::OkStatus();
  };
  for (int64_t m = 0; m < mel_bins; ++m) {
    const int64_t low = bins[m], center = bins[m + 1], high = bins[m + 2];
    if (center == low) {
      KILN_RETURN_IF_ERROR(set(center, m, 1.0));
    } else {
      for (int64_t j = low; j <= center; ++j) {
        KILN_RETURN_IF_ERROR(set(j, m, static_cast<double>(j - low) / static_cast<double>(center - low)));
      }
    }
    for (int64_t j = center; j < high; ++j) {
      KILN_RETURN_IF_ERROR(set(j, m, static_cast<double>(high - j) / static_cast<double>(high - center)));
    }
  }
  // bfloat16 (held in float32) is rounded by the importer: output_datatype names the type.
  return std::vector<Value>{Value::OfData(DataFromDoubles(values, out_dtype, {rows, mel_bins}))};
}

// The same formulas on run-time sample_rate / edges.
absl::StatusOr<std::vector<Value>> MatrixAtRunTime(NodeContext& c, int64_t mel_bins, int64_t dft_length,
                                                   int64_t rows, DataType edge_dtype, DataType out_dtype) {
  const DataType f64 = DataType::Float(64);
  for (int i = 2; i < 5; ++i) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(i));
    std::vector<int64_t> dims;
    if (!AllConstant(shape, &dims) || (!dims.empty() && !(dims.size() == 1 && dims[0] == 1))) {
      return c.Error("input '", c.input_name(i), "' must be a scalar");
    }
  }
  auto scalar = [&](int i) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr v, c.Input(i));
    return Reshape(c, v, {});
  };
  auto f64_const = [&](double v) { return ScalarConstant(v, f64); };
  // float64 to `dtype`; to float16 through float32, as the Cast converter (Kiln's direct
  // float64 -> float16 astype is wrong: docs/onnx.md).
  auto from_f64 = [&](Expr v, DataType dtype) -> absl::StatusOr<Expr> {
    if (dtype == DataType::Float(16)) {
      KILN_ASSIGN_OR_RETURN(v, c.Call("astype", {v}, {{"dtype", DataType::Float32()}}));
    }
    return c.Call("astype", {v}, {{"dtype", dtype}});
  };
  // mel(f) with its steps in the edges' type: log1p as log(1 + x) in float64, rounded.
  auto mel = [&](int i) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr hertz, scalar(i));
    KILN_ASSIGN_OR_RETURN(Expr ratio, c.Call("divide", {hertz, ScalarConstant(700, edge_dtype)}));
    KILN_ASSIGN_OR_RETURN(ratio, c.Call("astype", {ratio}, {{"dtype", f64}}));
    KILN_ASSIGN_OR_RETURN(Expr log1p, c.Call("add", {ratio, f64_const(1)}));
    KILN_ASSIGN_OR_RETURN(log1p, c.Call("log", {log1p}));
    KILN_ASSIGN_OR_RETURN(log1p, from_f64(log1p, edge_dtype));
    KILN_ASSIGN_OR_RETURN(Expr scaled, c.Call("multiply", {log1p, ScalarConstant(2595, edge_dtype)}));
    KILN_ASSIGN_OR_RETURN(scaled, c.Call("astype", {scaled}, {{"dtype", f64}}));
    return c.Call("divide", {scaled, f64_const(kLn10)});
  };
  KILN_ASSIGN_OR_RETURN(Expr low_mel, mel(3));
  KILN_ASSIGN_OR_RETURN(Expr high_mel, mel(4));
  KILN_ASSIGN_OR_RETURN(Expr step, c.Call("subtract", {high_mel, low_mel}));
  KILN_ASSIGN_OR_RETURN(step, c.Call("divide", {step, f64_const(static_cast<double>(mel_bins + 2))}));
  std::vector<double> index(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) index[i] = static_cast<double>(i);
  const Expr index_constant = relax::Constant(DataFromDoubles(index, f64, {mel_bins + 2}));
  KILN_ASSIGN_OR_RETURN(Expr edges, c.Call("multiply", {index_constant, step}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("add", {edges, low_mel}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("divide", {edges, f64_const(2595)}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("multiply", {edges, f64_const(kLn10)}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("exp", {edges}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("subtract", {edges, f64_const(1)}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("multiply", {edges, f64_const(700)}));
  KILN_ASSIGN_OR_RETURN(edges, c.Call("multiply", {edges, f64_const(static_cast<double>(dft_length + 1))}));
  KILN_ASSIGN_OR_RETURN(Expr rate, scalar(2));
  KILN_ASSIGN_OR_RETURN(rate, c.Call("astype", {rate}, {{"dtype", f64}}));
  KILN_ASSIGN_OR_RETURN(Expr bins, c.Call("floor_divide", {edges, rate}));
  // Band m's low / center / high bins as (1, mel_bins) rows; j, the spectrum's bin, a column.
  auto band_bins = [&](int64_t first) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr slice, c.Call("strided_slice", {bins},
                                             {{"begin", std::vector<int64_t>{first}},
                                              {"end", std::vector<int64_t>{first + mel_bins}},
                                              {"axes", std::vector<int64_t>{0}},
                                              {"strides", std::vector<int64_t>{1}}}));
    return Reshape(c, slice, {PrimExpr(1), PrimExpr(mel_bins)});
  };
  KILN_ASSIGN_OR_RETURN(Expr low, band_bins(0));
  KILN_ASSIGN_OR_RETURN(Expr center, band_bins(1));
  KILN_ASSIGN_OR_RETURN(Expr high, band_bins(2));
  std::vector<double> row_index(static_cast<size_t>(rows));
  for (int64_t j = 0; j < rows; ++j) row_index[j] = static_cast<double>(j);
  const Expr j = relax::Constant(DataFromDoubles(row_index, f64, {rows, 1}));
  // rising: low <= j <= center, center > low: (j - low) / (center - low)
  // peak:   center == low == j: 1
  // falling (written last, as the reference): center <= j < high: (high - j) / (high - center)
  KILN_ASSIGN_OR_RETURN(Expr j_from_low, c.Call("subtract", {j, low}));
  KILN_ASSIGN_OR_RETURN(Expr rise_width, c.Call("subtract", {center, low}));
  KILN_ASSIGN_OR_RETURN(Expr rise, c.Call("divide", {j_from_low, rise_width}));
  KILN_ASSIGN_OR_RETURN(Expr j_to_high, c.Call("subtract", {high, j}));
  KILN_ASSIGN_OR_RETURN(Expr fall_width, c.Call("subtract", {high, center}));
  KILN_ASSIGN_OR_RETURN(Expr fall, c.Call("divide", {j_to_high, fall_width}));
  auto both = [&](Expr a, Expr b) { return c.Call("logical_and", {a, b}); };
  KILN_ASSIGN_OR_RETURN(Expr above_low, c.Call("greater_equal", {j, low}));
  KILN_ASSIGN_OR_RETURN(Expr to_center, c.Call("less_equal", {j, center}));
  KILN_ASSIGN_OR_RETURN(Expr wide, c.Call("greater", {center, low}));
  KILN_ASSIGN_OR_RETURN(Expr in_rise, both(above_low, to_center));
  KILN_ASSIGN_OR_RETURN(in_rise, both(in_rise, wide));
  KILN_ASSIGN_OR_RETURN(Expr from_center, c.Call("greater_equal", {j, center}));
  KILN_ASSIGN_OR_RETURN(Expr below_high, c.Call("less", {j, high}));
  KILN_ASSIGN_OR_RETURN(Expr in_fall, both(from_center, below_high));
  KILN_ASSIGN_OR_RETURN(Expr narrow, c.Call("equal", {center, low}));
  KILN_ASSIGN_OR_RETURN(Expr at_center, c.Call("equal", {j, center}));
  KILN_ASSIGN_OR_RETURN(Expr peak, both(narrow, at_center));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Call("where", {peak, f64_const(1), f64_const(0)}));
  KILN_ASSIGN_OR_RETURN(y, c.Call("where", {in_rise, rise, y}));
  KILN_ASSIGN_OR_RETURN(y, c.Call("where", {in_fall, fall, y}));
  KILN_ASSIGN_OR_RETURN(y, from_f64(y, out_dtype));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertMelWeightMatrix(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> mel_bins, c.InputInts(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dft_length, c.InputInts(1));
  if (mel_bins.size() != 1 || mel_bins[0] < 1) return c.Error("num_mel_bins must be one positive value");
  if (dft_length.size() != 1 || dft_length[0] < 1) return c.Error("dft_length must be one positive value");
  const int64_t rows = dft_length[0] / 2 + 1;
  if (rows * mel_bins[0] > kMaxElements || mel_bins[0] > kMaxElements) {
    return c.Unsupported("a matrix of ", rows, " x ", mel_bins[0], " values (at most 2^26)");
  }
  KILN_ASSIGN_OR_RETURN(DataType rate_dtype, c.InputDType(2));
  if (!rate_dtype.is_integer()) return c.Error("sample_rate must be an integer, got ", rate_dtype.ToString());
  KILN_ASSIGN_OR_RETURN(DataType edge_dtype, c.InputDType(3));
  KILN_ASSIGN_OR_RETURN(DataType upper_dtype, c.InputDType(4));
  if (edge_dtype != upper_dtype || !(edge_dtype == DataType::Float32() || edge_dtype == DataType::Float(64) ||
                                     edge_dtype == DataType::Float(16))) {
    return c.Unsupported("edges of types ", edge_dtype.ToString(), " and ", upper_dtype.ToString(),
                         " (float16 / float32 / float64, both the same)");
  }
  const int32_t onnx_type = static_cast<int32_t>(c.AttrInt("output_datatype", ::onnx::TensorProto::FLOAT));
  KILN_ASSIGN_OR_RETURN(DataType out_dtype, DataTypeFromOnnx(onnx_type));
  const NarrowType* narrow = FindNarrowType(onnx_type);
  if (narrow != nullptr && onnx_type != ::onnx::TensorProto::BFLOAT16) {
    return c.Unsupported("output_datatype ", OnnxDataTypeName(onnx_type), " is not supported");
  }
  // Known at import time (constants, or graph inputs that are bound): a constant matrix.
  for (int i = 2; i < 5; ++i) {
    if (!c.InputData(i).ok()) return MatrixAtRunTime(c, mel_bins[0], dft_length[0], rows, edge_dtype, out_dtype);
  }
  return MatrixAtImportTime(c, mel_bins[0], dft_length[0], rows, edge_dtype, out_dtype);
}

}  // namespace

void RegisterMelWeightMatrixConverters(ConverterRegistry& r) {
  r.Register("MelWeightMatrix", ConvertMelWeightMatrix, 17);
}

}  // namespace kiln::frontends::onnx
