// Legalization of resize (semantics in relax/op/resize.cc).
//  - nearest: one block reading the input at the rounded, clamped coordinate of every
//    resized axis (the others copied through).
//  - linear / cubic: a reduction over the taps of the resized axes (2 or 4 per axis) into a
//    float64 scratch buffer: the product of the per-axis weights times the tap's element
//    (skipped when the weight is 0), then the cast to the output (or extrapolation_value).
// Coordinates and weights are float64, as ONNX's reference implementation computes them; a
// coordinate is clamped into [-4, in + 3] first, which changes no result (every tap beyond
// reads the edge, or is outside for exclude_outside) but keeps its int64 conversion defined.
#include <algorithm>

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/resize_attrs.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

const DataType kF64 = DataType::Float(64);

PrimExpr F64(double v) { return Const(kF64, v); }
PrimExpr I64(int64_t v) { return PrimExpr(v); }
PrimExpr ToF64(const PrimExpr& e) { return tir::Cast(kF64, e); }

// The input coordinate x' of output index x along resized axis k (input extent in, output
// extent out), per coordinate_transformation_mode.
PrimExpr InputCoordinate(const ResizeAttrs& a, size_t k, const PrimExpr& x, const PrimExpr& in, const PrimExpr& out) {
  const PrimExpr xf = ToF64(x);
  const PrimExpr in_f = ToF64(in);
  const PrimExpr out_f = ToF64(out);
  const PrimExpr scale = a.scales ? F64((*a.scales)[k]) : tir::Div(out_f, in_f);
  // The resized length the formulas use: in * scale, not rounded (ONNX's reference), which is
  // the output extent exactly when no scales are given.
  const PrimExpr length = a.scales ? tir::Mul(in_f, scale) : out_f;
  const PrimExpr shifted = tir::Div(tir::Add(xf, F64(0.5)), scale);
  const PrimExpr half_pixel = tir::Sub(shifted, F64(0.5));
  const PrimExpr many = tir::GT(length, F64(1));
  switch (a.coordinate_mode) {
    case CoordinateMode::kHalfPixel:
      return half_pixel;
    case CoordinateMode::kHalfPixelSymmetric: {
      PrimExpr adjustment = tir::Div(out_f, length);
      PrimExpr offset = tir::Mul(tir::Div(in_f, F64(2)), tir::Sub(F64(1), adjustment));
      return tir::Sub(tir::Add(offset, shifted), F64(0.5));  // ONNX's order of operations
    }
    case CoordinateMode::kPytorchHalfPixel:
      return tir::Select(many, half_pixel, F64(0));
    case CoordinateMode::kAlignCorners:
      return tir::Select(many,
                         tir::Div(tir::Mul(xf, tir::Sub(in_f, F64(1))), tir::Sub(length, F64(1))), F64(0));
    case CoordinateMode::kAsymmetric:
      return tir::Div(xf, scale);
    case CoordinateMode::kTfHalfPixelForNn:
      return shifted;
    case CoordinateMode::kTfCropAndResize: {
      const double start = a.roi_start[k], end = a.roi_end[k];
      PrimExpr span = tir::Sub(in_f, F64(1));
      PrimExpr stepped = tir::Add(tir::Mul(F64(start), span),
                                  tir::Div(tir::Mul(tir::Mul(xf, F64(end - start)), span), tir::Sub(length, F64(1))));
      return tir::Select(many, stepped, tir::Mul(F64(0.5 * (start + end)), span));
    }
  }
  return half_pixel;
}

PrimExpr ClampIndex(const PrimExpr& i, const PrimExpr& extent) {
  return tir::Min(tir::Max(i, I64(0)), tir::Sub(extent, I64(1)));
}

// The cubic convolution weight of a tap at distance |t| (< 2) from x'.
PrimExpr CubicWeight(double a, const PrimExpr& t) {
  // |t| <= 1: (a + 2)|t|^3 - (a + 3)|t|^2 + 1;  1 < |t| < 2: a|t|^3 - 5a|t|^2 + 8a|t| - 4a.
  PrimExpr near = tir::Add(tir::Mul(tir::Mul(tir::Sub(tir::Mul(F64(a + 2), t), F64(a + 3)), t), t), F64(1));
  PrimExpr far = tir::Sub(tir::Mul(tir::Add(tir::Mul(tir::Sub(tir::Mul(F64(a), t), F64(5 * a)), t), F64(8 * a)), t),
                          F64(4 * a));
  return tir::Select(tir::LE(t, F64(1)), near, far);
}

absl::StatusOr<tir::PrimFunc> LegalizeResize(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& in = p.inputs[0];
  const Buffer& out = p.outputs[0];
  const DataType t = out->dtype;
  if (in.ndim() != out.ndim() || in.ndim() == 0) return OpError(call, "cannot legalize: data and size ranks differ");
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, ReadResizeAttrs(call, in.ndim()));
  if (a.method != ResizeMethod::kNearest && !t.is_float()) {
    return absl::UnimplementedError(absl::StrCat("resize: no CPU lowering of linear/cubic for ", t.ToString()));
  }
  const bool crop = a.coordinate_mode == CoordinateMode::kTfCropAndResize;
  const PrimExpr extrapolation = Const(t, a.extrapolation_value);

  // Per output index: each resized axis' coordinate, and whether any lies outside the input
  // (tf_crop_and_resize).
  struct Coordinates {
    std::vector<PrimExpr> x;  // per resized axis, clamped into [-4, in + 3]
    PrimExpr outside;         // undefined unless tf_crop_and_resize
  };
  auto coordinates = [&](const std::vector<PrimExpr>& s) {
    Coordinates c;
    for (size_t k = 0; k < a.axes.size(); ++k) {
      const size_t d = static_cast<size_t>(a.axes[k]);
      PrimExpr x = InputCoordinate(a, k, s[d], in->shape[d], out->shape[d]);
      const PrimExpr last = ToF64(tir::Sub(in->shape[d], I64(1)));
      if (crop) {
        PrimExpr o = tir::Or(tir::LT(x, F64(0)), tir::GT(x, last));
        c.outside = c.outside.defined() ? tir::Or(c.outside, o) : o;
      }
      c.x.push_back(tir::Min(tir::Max(x, F64(-4)), tir::Add(last, F64(4))));
    }
    return c;
  };

  if (a.method == ResizeMethod::kNearest) {
    Stmt body = ComputeBlock("resize", out, [&](const std::vector<PrimExpr>& s) {
      Coordinates c = coordinates(s);
      std::vector<PrimExpr> index = s;
      for (size_t k = 0; k < a.axes.size(); ++k) {
        const size_t d = static_cast<size_t>(a.axes[k]);
        PrimExpr r;
        switch (a.nearest_mode) {
          case NearestMode::kRoundPreferFloor: r = tir::Call("ceil", {tir::Sub(c.x[k], F64(0.5))}); break;
          case NearestMode::kRoundPreferCeil: r = tir::Call("floor", {tir::Add(c.x[k], F64(0.5))}); break;
          case NearestMode::kFloor: r = tir::Call("floor", {c.x[k]}); break;
          case NearestMode::kCeil: r = tir::Call("ceil", {c.x[k]}); break;
        }
        index[d] = ClampIndex(tir::Cast(DataType::Int64(), r), in->shape[d]);
      }
      PrimExpr v = in.Load(index);
      return c.outside.defined() ? tir::Select(c.outside, extrapolation, v) : v;
    });
    return MakePrimFunc(p, body, "injective");
  }

  const bool cubic = a.method == ResizeMethod::kCubic;
  const int64_t taps = cubic ? 4 : 2;
  const Buffer acc = ScratchBuffer("resize_acc", kF64, out->shape);
  std::vector<PrimExpr> extents(a.axes.size(), I64(taps));
  Stmt sum = ReduceBlock("resize_taps", acc, extents, F64(0), tir::Add,
                         [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                           Coordinates c = coordinates(s);
                           std::vector<PrimExpr> index = s;
                           PrimExpr weight;
                           for (size_t k = 0; k < a.axes.size(); ++k) {
                             const size_t d = static_cast<size_t>(a.axes[k]);
                             const PrimExpr extent = in->shape[d];
                             PrimExpr base = tir::Call("floor", {c.x[k]});
                             PrimExpr ratio = tir::Sub(c.x[k], base);
                             PrimExpr first = tir::Cast(DataType::Int64(), base);
                             if (cubic) first = tir::Sub(first, I64(1));
                             PrimExpr w;
                             if (!cubic) {
                               w = tir::Select(tir::EQ(r[k], I64(0)), tir::Sub(F64(1), ratio), ratio);
                             } else {
                               // Tap j (0..3) sits at first + j, at distance |j - 1 - ratio|.
                               auto tap_weight = [&](const PrimExpr& j) {
                                 PrimExpr dist = tir::Call("fabs", {tir::Sub(tir::Sub(ToF64(j), F64(1)), ratio)});
                                 PrimExpr cw = CubicWeight(a.cubic_coeff_a, dist);
                                 if (!a.exclude_outside) return cw;
                                 PrimExpr pos = tir::Add(first, j);
                                 return tir::Select(tir::And(tir::GE(pos, I64(0)), tir::LT(pos, extent)), cw, F64(0));
                               };
                               w = tap_weight(r[k]);
                               if (a.exclude_outside) {
                                 PrimExpr total = tap_weight(I64(0));
                                 for (int64_t j = 1; j < 4; ++j) total = tir::Add(total, tap_weight(I64(j)));
                                 w = tir::Div(w, total);
                               }
                             }
                             index[d] = ClampIndex(tir::Add(first, r[k]), extent);
                             weight = weight.defined() ? tir::Mul(weight, w) : w;
                           }
                           return tir::Select(tir::NE(weight, F64(0)), tir::Mul(weight, ToF64(in.Load(index))), F64(0));
                         });
  Stmt store = ComputeBlock("resize", out, [&](const std::vector<PrimExpr>& s) {
    PrimExpr v = CastTo(t, acc.Load(s));
    Coordinates c = coordinates(s);
    return c.outside.defined() ? tir::Select(c.outside, extrapolation, v) : v;
  });
  return MakePrimFunc(p, tir::Allocate(acc, tir::SeqStmt({sum, store})), "opaque");
}

}  // namespace

void RegisterResizeLegalize(OpRegistry& registry) { registry.SetLegalize("resize", LegalizeResize); }

}  // namespace kiln::relax::op
