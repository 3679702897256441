// GridSample (16; N-D from 20): Y[n, c, o...] samples X[n, c] at the point grid[n, o...]
// (normalized to [-1, 1], the last spatial dim first), decomposed into elementwise index
// arithmetic and gathers, as ONNX's reference (onnx.reference.ops.op_grid_sample) computes:
//  1. denormalize per spatial dim of length L: align_corners ? (g + 1) / 2 * (L - 1)
//     : ((g + 1) * L - 1) / 2; nearest mode rounds it (half to even);
//  2. a coordinate outside the border ([0, L - 1] with align_corners, else [-0.5, L - 0.5])
//     is clamped to [0, L - 1] (padding "border") or reflected at the border ("reflection");
//  3. the taps: nearest 1 (the coordinate truncated), linear 2 (floor and floor + 1, weights
//     1 - t and t), cubic 4 (Keys' kernel, a = -0.75); a tap outside the input reads 0
//     ("zeros"), the clamped index ("border") or the reflected one ("reflection");
//  4. each combination of the per-dim taps is one gather_elements from X flattened to
//     (N, C, prod L), weighted by the product of the per-dim weights; the sum is Y.
// Computed in float32 (X's type for the result). X's spatial dims must be static.
// AffineGrid, which makes such grids, is here too.
#include <cmath>
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

Expr F32(double v) { return ScalarConstant(v, DataType::Float32()); }

// One tap along one spatial dim: the index to read (always inside [0, L)), whether the tap
// reads the input (undefined: always), and its weight (undefined: 1).
struct Tap {
  Expr index;
  Expr inside;
  Expr weight;
};

class GridSampler {
 public:
  GridSampler(NodeContext& c, std::string padding, bool align_corners)
      : c_(c), padding_(std::move(padding)), align_corners_(align_corners) {}

  absl::StatusOr<Expr> Call(const std::string& op, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c_.Call(op, std::move(args), std::move(attrs));
  }

  // The border a coordinate is reflected at, for a dim of length `length`.
  double BorderMin() const { return align_corners_ ? 0.0 : -0.5; }
  double BorderMax(int64_t length) const { return align_corners_ ? length - 1.0 : length - 0.5; }

  // Reflects x into [lo, hi] by the nearest border until inside (the reference's
  // _gs_reflect): n whole ranges are folded away, an odd n mirrors the remainder.
  absl::StatusOr<Expr> Reflect(Expr x, double lo, double hi) {
    const double range = hi - lo;
    if (range <= 0) return Call("multiply", {x, F32(0)});  // a dim of length 1: only 0
    auto fold = [&](Expr distance, double near, double far, double direction) -> absl::StatusOr<Expr> {
      // near + direction * r when n is even, far - direction * r when odd.
      KILN_ASSIGN_OR_RETURN(Expr ranges, Call("divide", {distance, F32(range)}));
      KILN_ASSIGN_OR_RETURN(Expr n, Call("floor", {ranges}));
      KILN_ASSIGN_OR_RETURN(Expr whole, Call("multiply", {n, F32(range)}));
      KILN_ASSIGN_OR_RETURN(Expr r, Call("subtract", {distance, whole}));
      KILN_ASSIGN_OR_RETURN(Expr half, Call("multiply", {n, F32(0.5)}));
      KILN_ASSIGN_OR_RETURN(Expr half_floor, Call("floor", {half}));
      KILN_ASSIGN_OR_RETURN(Expr even, Call("equal", {half, half_floor}));
      KILN_ASSIGN_OR_RETURN(Expr step, Call("multiply", {r, F32(direction)}));
      KILN_ASSIGN_OR_RETURN(Expr from_near, Call("add", {F32(near), step}));
      KILN_ASSIGN_OR_RETURN(Expr from_far, Call("subtract", {F32(far), step}));
      return Call("where", {even, from_near, from_far});
    };
    KILN_ASSIGN_OR_RETURN(Expr below_distance, Call("subtract", {F32(lo), x}));
    KILN_ASSIGN_OR_RETURN(Expr above_distance, Call("subtract", {x, F32(hi)}));
    KILN_ASSIGN_OR_RETURN(Expr from_below, fold(below_distance, lo, hi, 1.0));
    KILN_ASSIGN_OR_RETURN(Expr from_above, fold(above_distance, hi, lo, -1.0));
    KILN_ASSIGN_OR_RETURN(Expr below, Call("less", {x, F32(lo)}));
    KILN_ASSIGN_OR_RETURN(Expr above, Call("greater", {x, F32(hi)}));
    KILN_ASSIGN_OR_RETURN(Expr upper, Call("where", {above, from_above, x}));
    return Call("where", {below, from_below, upper});
  }

  // Step 2: a coordinate outside the border, clamped or reflected.
  absl::StatusOr<Expr> HandleBorder(Expr x, int64_t length) {
    if (padding_ == "border") {
      KILN_ASSIGN_OR_RETURN(Expr low, Call("maximum", {x, F32(0)}));
      return Call("minimum", {low, F32(static_cast<double>(length - 1))});
    }
    if (padding_ == "reflection") return Reflect(x, BorderMin(), BorderMax(length));
    return x;
  }

  // A tap at integer-valued float position `position` (weight `weight`), made readable by
  // the padding mode.
  absl::StatusOr<Tap> MakeTap(Expr position, Expr weight, int64_t length) {
    Tap tap;
    tap.weight = std::move(weight);
    if (padding_ == "zeros") {
      KILN_ASSIGN_OR_RETURN(Expr low, Call("greater_equal", {position, F32(0)}));
      KILN_ASSIGN_OR_RETURN(Expr high, Call("less", {position, F32(static_cast<double>(length))}));
      KILN_ASSIGN_OR_RETURN(tap.inside, Call("logical_and", {low, high}));
    } else if (padding_ == "reflection") {
      KILN_ASSIGN_OR_RETURN(position, Reflect(position, BorderMin(), BorderMax(length)));
    }
    // Truncated toward zero as the reference's int(), then clamped so the read stays inside.
    KILN_ASSIGN_OR_RETURN(Expr index, Call("astype", {position}, {{"dtype", DataType::Int64()}}));
    KILN_ASSIGN_OR_RETURN(index, Call("maximum", {index, ScalarConstant(0, DataType::Int64())}));
    KILN_ASSIGN_OR_RETURN(tap.index, Call("minimum", {index, ScalarConstant(length - 1, DataType::Int64())}));
    return tap;
  }

  // Keys' cubic convolution weights (a = -0.75) of the 4 taps around fraction t.
  absl::StatusOr<std::vector<Expr>> CubicWeights(const Expr& t) {
    constexpr double a = -0.75;
    // Far taps (distance d in [1, 2]): ((a d - 5a) d + 8a) d - 4a; near (d in [0, 1]):
    // ((a + 2) d - (a + 3)) d d + 1.
    auto far = [&](Expr d) -> absl::StatusOr<Expr> {
      KILN_ASSIGN_OR_RETURN(Expr v, Call("multiply", {d, F32(a)}));
      KILN_ASSIGN_OR_RETURN(v, Call("subtract", {v, F32(5 * a)}));
      KILN_ASSIGN_OR_RETURN(v, Call("multiply", {v, d}));
      KILN_ASSIGN_OR_RETURN(v, Call("add", {v, F32(8 * a)}));
      KILN_ASSIGN_OR_RETURN(v, Call("multiply", {v, d}));
      return Call("subtract", {v, F32(4 * a)});
    };
    auto near = [&](Expr d) -> absl::StatusOr<Expr> {
      KILN_ASSIGN_OR_RETURN(Expr v, Call("multiply", {d, F32(a + 2)}));
      KILN_ASSIGN_OR_RETURN(v, Call("subtract", {v, F32(a + 3)}));
      KILN_ASSIGN_OR_RETURN(v, Call("multiply", {v, d}));
      KILN_ASSIGN_OR_RETURN(v, Call("multiply", {v, d}));
      return Call("add", {v, F32(1)});
    };
    KILN_ASSIGN_OR_RETURN(Expr t_plus_1, Call("add", {t, F32(1)}));
    KILN_ASSIGN_OR_RETURN(Expr one_minus_t, Call("subtract", {F32(1), t}));
    KILN_ASSIGN_OR_RETURN(Expr two_minus_t, Call("subtract", {F32(2), t}));
    KILN_ASSIGN_OR_RETURN(Expr w0, far(t_plus_1));
    KILN_ASSIGN_OR_RETURN(Expr w1, near(t));
    KILN_ASSIGN_OR_RETURN(Expr w2, near(one_minus_t));
    KILN_ASSIGN_OR_RETURN(Expr w3, far(two_minus_t));
    return std::vector<Expr>{w0, w1, w2, w3};
  }

  // Steps 1-3 for one spatial dim: the taps of coordinate g (normalized) into length L.
  absl::StatusOr<std::vector<Tap>> Taps(Expr g, int64_t length, const std::string& mode) {
    const double L = static_cast<double>(length);
    KILN_ASSIGN_OR_RETURN(Expr g1, Call("add", {g, F32(1)}));
    Expr x;
    if (align_corners_) {
      KILN_ASSIGN_OR_RETURN(Expr half, Call("divide", {g1, F32(2)}));
      KILN_ASSIGN_OR_RETURN(x, Call("multiply", {half, F32(L - 1)}));
    } else {
      KILN_ASSIGN_OR_RETURN(Expr scaled, Call("multiply", {g1, F32(L)}));
      KILN_ASSIGN_OR_RETURN(Expr shifted, Call("subtract", {scaled, F32(1)}));
      KILN_ASSIGN_OR_RETURN(x, Call("divide", {shifted, F32(2)}));
    }
    if (mode == "nearest") {
      KILN_ASSIGN_OR_RETURN(x, Call("round", {x}));
    }
    KILN_ASSIGN_OR_RETURN(x, HandleBorder(x, length));
    std::vector<Tap> taps;
    if (mode == "nearest") {
      KILN_ASSIGN_OR_RETURN(Tap tap, MakeTap(x, Expr(), length));
      taps.push_back(std::move(tap));
      return taps;
    }
    KILN_ASSIGN_OR_RETURN(Expr x0, Call("floor", {x}));
    KILN_ASSIGN_OR_RETURN(Expr t, Call("subtract", {x, x0}));
    std::vector<Expr> weights;
    int first = 0;
    if (mode == "linear") {
      KILN_ASSIGN_OR_RETURN(Expr one_minus_t, Call("subtract", {F32(1), t}));
      weights = {one_minus_t, t};
    } else {
      KILN_ASSIGN_OR_RETURN(weights, CubicWeights(t));
      first = -1;
    }
    for (size_t k = 0; k < weights.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(Expr position, Call("add", {x0, F32(first + static_cast<double>(k))}));
      KILN_ASSIGN_OR_RETURN(Tap tap, MakeTap(position, weights[k], length));
      taps.push_back(std::move(tap));
    }
    return taps;
  }

 private:
  NodeContext& c_;
  std::string padding_;
  bool align_corners_;
};

absl::StatusOr<std::vector<Value>> ConvertGridSample(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> x_shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> grid_shape, c.InputShape(1));
  KILN_ASSIGN_OR_RETURN(DataType x_dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(DataType grid_dtype, c.InputDType(1));
  const int64_t rank = static_cast<int64_t>(x_shape.size()) - 2;
  if (rank < 1 || static_cast<int64_t>(grid_shape.size()) != rank + 2) {
    return c.Error("X of rank ", x_shape.size(), " needs a grid of rank ", x_shape.size(), ", got ", grid_shape.size());
  }
  std::vector<int64_t> lengths, grid_last;
  if (!AllConstant(std::vector<PrimExpr>(x_shape.begin() + 2, x_shape.end()), &lengths)) {
    return c.Unsupported("needs X's spatial dims at import time");
  }
  if (!AllConstant({grid_shape.back()}, &grid_last) || grid_last[0] != rank) {
    return c.Error("the grid's last dim must be ", rank, " (one coordinate per spatial dim)");
  }
  if (!x_dtype.is_floating() || !grid_dtype.is_floating()) return c.Error("X and grid must be float tensors");
  // The mode names of opset 16 (bilinear, bicubic) and of 20 (linear, cubic).
  std::string mode = c.AttrString("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return c.Error("unknown mode '", mode, "'");
  const std::string padding = c.AttrString("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return c.Error("unknown padding_mode '", padding, "'");
  }
  GridSampler sampler(c, padding, c.AttrInt("align_corners", 0) != 0);

  KILN_ASSIGN_OR_RETURN(Expr grid, c.Input(1));
  if (grid_dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(grid, c.Call("astype", {grid}, {{"dtype", DataType::Float32()}}));
  }
  // Per spatial dim d (X's order), the taps of grid[..., rank - 1 - d].
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t component = rank - 1 - d;
    KILN_ASSIGN_OR_RETURN(Expr g, c.Call("take", {grid, ScalarConstant(static_cast<double>(component), DataType::Int64())},
                                         {{"axis", rank + 1}}));
    KILN_ASSIGN_OR_RETURN(taps[d], sampler.Taps(g, lengths[d], mode));
  }

  // X as (N, C, P); every combination of taps gathers (N, C, Q), Q the output points.
  const PrimExpr n = x_shape[0], channels = x_shape[1];
  int64_t points = 1;
  for (int64_t l : lengths) points *= l;
  std::vector<PrimExpr> out_spatial(grid_shape.begin() + 1, grid_shape.end() - 1);
  const PrimExpr q = Product(out_spatial, 0, out_spatial.size());
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr flat, Reshape(c, x, {n, channels, PrimExpr(points)}));
  if (x_dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(flat, c.Call("astype", {flat}, {{"dtype", DataType::Float32()}}));
  }
  Expr sum;
  std::vector<size_t> pick(static_cast<size_t>(rank), 0);
  while (true) {
    Expr index, inside, weight;
    int64_t stride = points;
    for (int64_t d = 0; d < rank; ++d) {
      const Tap& tap = taps[d][pick[d]];
      stride /= lengths[d];
      Expr term = tap.index;
      if (stride != 1) {
        KILN_ASSIGN_OR_RETURN(term, c.Call("multiply", {term, ScalarConstant(static_cast<double>(stride), DataType::Int64())}));
      }
      if (index.defined()) {
        KILN_ASSIGN_OR_RETURN(index, c.Call("add", {index, term}));
      } else {
        index = term;
      }
      if (tap.inside.defined()) {
        if (inside.defined()) {
          KILN_ASSIGN_OR_RETURN(inside, c.Call("logical_and", {inside, tap.inside}));
        } else {
          inside = tap.inside;
        }
      }
      if (tap.weight.defined()) {
        if (weight.defined()) {
          KILN_ASSIGN_OR_RETURN(weight, c.Call("multiply", {weight, tap.weight}));
        } else {
          weight = tap.weight;
        }
      }
    }
    // (N, out...) -> (N, 1, Q) -> (N, C, Q).
    KILN_ASSIGN_OR_RETURN(Expr idx, Reshape(c, index, {n, PrimExpr(1), q}));
    KILN_ASSIGN_OR_RETURN(idx, c.Call("broadcast_to", {idx, relax::ShapeExpr({n, channels, q})}));
    KILN_ASSIGN_OR_RETURN(Expr value, c.Call("gather_elements", {flat, idx}, {{"axis", int64_t{2}}}));
    if (inside.defined()) {
      KILN_ASSIGN_OR_RETURN(Expr keep, Reshape(c, inside, {n, PrimExpr(1), q}));
      KILN_ASSIGN_OR_RETURN(value, c.Call("where", {keep, value, F32(0)}));
    }
    if (weight.defined()) {
      KILN_ASSIGN_OR_RETURN(Expr w, Reshape(c, weight, {n, PrimExpr(1), q}));
      KILN_ASSIGN_OR_RETURN(value, c.Call("multiply", {value, w}));
    }
    if (sum.defined()) {
      KILN_ASSIGN_OR_RETURN(sum, c.Call("add", {sum, value}));
    } else {
      sum = value;
    }
    int64_t d = rank - 1;
    while (d >= 0 && ++pick[d] == taps[d].size()) pick[d--] = 0;
    if (d < 0) break;
  }
  std::vector<PrimExpr> out_shape = {n, channels};
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  KILN_ASSIGN_OR_RETURN(Expr y, Reshape(c, sum, out_shape));
  if (x_dtype != DataType::Float32()) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {y}, {{"dtype", x_dtype}}));
  }
  return Outputs(y);
}

// AffineGrid (20): the sampling grid GridSample reads for the affine map theta (N, 2, 3) or
// (N, 3, 4): grid[n, p] = theta[n] @ (x_p, y_p[, z_p], 1), the base coordinates x (along
// W), y (H), z (D) spaced evenly in [-1, 1] (at pixel centers, or at the corners with
// align_corners). In float64 as the reference, cast to theta's type.
absl::StatusOr<std::vector<Value>> ConvertAffineGrid(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> size, c.InputInts(1));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (size.size() != 4 && size.size() != 5) return c.Error("size must be (N, C, H, W) or (N, C, D, H, W)");
  for (int64_t s : size) {
    if (s < 1) return c.Error("size values must be positive");
  }
  const int64_t rank = static_cast<int64_t>(size.size()) - 2;
  const bool align_corners = c.AttrInt("align_corners", 0) != 0;
  // Base coordinates of each spatial dim (size order: D, H, W).
  std::vector<std::vector<double>> axis_values;
  int64_t points = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t length = size[2 + d];
    // The base grid is host data: at most 2^24 points.
    if (length > (int64_t{1} << 24) / points) return c.Unsupported("a grid of more than 2^24 points");
    points *= length;
    std::vector<double> values;
    for (int64_t i = 0; i < length; ++i) {
      values.push_back(align_corners ? (length == 1 ? -1.0 : -1.0 + i * (2.0 / (length - 1)))
                                     : -1.0 + 1.0 / length + i * (2.0 / length));
    }
    axis_values.push_back(values);
  }
  // Rows: points in row-major (D, H, W) order; columns: W's, H's[, D's] coordinate, then 1.
  std::vector<double> base;
  for (int64_t p = 0; p < points; ++p) {
    std::vector<double> row(static_cast<size_t>(rank + 1), 1.0);
    int64_t rest = p;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t length = size[2 + d];
      row[rank - 1 - d] = axis_values[d][rest % length];
      rest /= length;
    }
    base.insert(base.end(), row.begin(), row.end());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> theta_shape, c.InputShape(0));
  std::vector<int64_t> theta_dims;
  if (!AllConstant(theta_shape, &theta_dims) || theta_dims.size() != 3 || theta_dims[1] != rank ||
      theta_dims[2] != rank + 1 || theta_dims[0] != size[0]) {
    return c.Error("theta must be (N, ", rank, ", ", rank + 1, ") for size ", size.size(), "-D with N = ", size[0]);
  }
  KILN_ASSIGN_OR_RETURN(Expr theta, c.Input(0));
  KILN_ASSIGN_OR_RETURN(theta, c.Call("astype", {theta}, {{"dtype", DataType::Float(64)}}));
  KILN_ASSIGN_OR_RETURN(Expr theta_t, c.Call("permute_dims", {theta}, {{"axes", std::vector<int64_t>{0, 2, 1}}}));
  Expr base_matrix = relax::Constant(DataFromDoubles(base, DataType::Float(64), {points, rank + 1}));
  KILN_ASSIGN_OR_RETURN(Expr grid, c.Call("matmul", {base_matrix, theta_t}));  // (N, points, rank)
  std::vector<PrimExpr> out_shape = {PrimExpr(size[0])};
  for (int64_t d = 0; d < rank; ++d) out_shape.push_back(PrimExpr(size[2 + d]));
  out_shape.push_back(PrimExpr(rank));
  KILN_ASSIGN_OR_RETURN(grid, Reshape(c, grid, out_shape));
  KILN_ASSIGN_OR_RETURN(grid, c.Call("astype", {grid}, {{"dtype", dtype}}));
  return Outputs(grid);
}

}  // namespace

void RegisterGridSampleConverters(ConverterRegistry& r) {
  r.Register("GridSample", ConvertGridSample, 16);
  r.Register("AffineGrid", ConvertAffineGrid, 20);
}

}  // namespace kiln::frontends::onnx
