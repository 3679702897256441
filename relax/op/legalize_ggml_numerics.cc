// Kernels of the numerics = "ggml" operator variants (relax/op/ggml_numerics.h): each step
// the operation builtins/ggml_layer_ops.cc performs, in its order, with its fused
// multiply-adds spelled as fma (no emitter contracts them differently: there is no a * b + c
// left to contract).
#include <cmath>
#include <variant>

#include "relax/op/ggml_numerics.h"
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/rotary_params.h"
#include "support/status_macros.h"

namespace kiln::relax::op {

namespace {

using Index = std::vector<PrimExpr>;

const DataType kF32 = DataType::Float32();
const DataType kF64 = DataType::Float(64);

PrimExpr F32(double v) { return tir::FloatImm(kF32, v); }
PrimExpr Fma(PrimExpr a, PrimExpr b, PrimExpr c) { return tir::Call("fma", {std::move(a), std::move(b), std::move(c)}); }
// -v exactly, zeros' signs included (0 - v would turn -0 into +0).
PrimExpr Negate(PrimExpr v) { return F32(-1) * std::move(v); }

// 2^e as a float32 built from its bits, for e (int32) in [-126, 127].
PrimExpr PowerOfTwo(const PrimExpr& e) {
  const DataType i32 = DataType::Int32();
  return tir::Reinterpret(kF32, tir::Shl(e + tir::IntImm(i32, 127), tir::IntImm(i32, 23)));
}

absl::Status ExpectFloat32(const CallNode& call, const Buffer& b, const char* what) {
  if (b->dtype != kF32) return OpError(call, "numerics=\"ggml\" needs float32 ", what, ", got ", b->dtype.ToString());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GgmlNumerics> GgmlNumericsAttr(const CallNode& call) {
  auto it = call.attrs.find("numerics");
  if (it == call.attrs.end()) return GgmlNumerics::kDefault;
  const auto* name = std::get_if<std::string>(&it->second);
  if (name != nullptr && *name == "default") return GgmlNumerics::kDefault;
  if (name != nullptr && *name == "ggml") return GgmlNumerics::kAvx512Build;
  if (name != nullptr && *name == "ggml_avx2") return GgmlNumerics::kAvx2Build;
  return OpError(call, "attribute numerics must be \"default\", \"ggml\" or \"ggml_avx2\"");
}

// ggml_v_expf (builtins/ggml_expf.inc): n = round(x / ln 2) by the 1.5 * 2^23 trick,
// b = x - n ln 2 in two parts, a degree-5 polynomial in b, times 2^n with one rounding
// (vscalefps), |n| > 192 saturating to inf or 0.
namespace {

// Both builds' first steps: n = round(x / ln 2) (adding and subtracting 1.5 * 2^23), b = x -
// n ln 2 in two parts, and the degree-5 polynomial's terms above the linear one (exp(b) =
// 1 + c1 b + upper * b^2).
struct ExpReduction {
  PrimExpr n, b, upper, u;  // upper: the polynomial's terms above the linear one, over b^2 = u
};

ExpReduction ReduceForExp(const PrimExpr& x) {
  const PrimExpr r = F32(0x1.8p23);
  const PrimExpr n = Fma(x, F32(0x1.715476p+0), r) - r;
  const PrimExpr minus_n = Negate(n);
  const PrimExpr b = Fma(minus_n, F32(0x1.7f7d1cp-20), Fma(minus_n, F32(0x1.62e4p-1), x));
  const PrimExpr upper = Fma(Fma(F32(0x1.0e4020p-7), b, F32(0x1.573e2ep-5)), b * b, Fma(F32(0x1.555e66p-3), b, F32(0x1.fffdb6p-2)));
  return {n, b, upper, b * b};
}

}  // namespace

PrimExpr GgmlExp(const PrimExpr& x) {
  const auto [n, b, upper, u] = ReduceForExp(x);
  const PrimExpr j = Fma(upper, u, Fma(F32(0x1.ffffecp-1), b, F32(1)));
  // j * 2^e in two exact-then-rounding steps, so that e beyond a float's normal exponents
  // (up to +-192) still rounds once: 2^127 * 2^(e - 127) above, 2^(e + 100) * 2^-100 below.
  const DataType i32 = DataType::Int32();
  const PrimExpr e = tir::Cast(i32, n);
  auto c = [&](int64_t v) { return tir::IntImm(i32, v); };
  const PrimExpr high = tir::GT(e, c(127));
  const PrimExpr low = tir::LT(e, c(-126));
  const PrimExpr first = PowerOfTwo(tir::Select(high, c(127), tir::Select(low, e + c(100), e)));
  const PrimExpr second = PowerOfTwo(tir::Select(high, e - c(127), tir::Select(low, c(-100), c(0))));
  const PrimExpr scaled = (j * first) * second;
  return tir::Select(tir::GT(tir::Call("fabs", {n}), F32(192)),
                     tir::Select(tir::GT(n, F32(0)), F32(INFINITY), F32(0)), scaled);
}

// ggml_v_expf of the AVX2 build: the same n and b, the polynomial without its constant term
// (j = exp(b) - 1), then 2^n + 2^n * j in one rounding; beyond |n| = 126, 2^n split into s1 *
// s2 (s1 = 2^127 or 2^-125) as s1 * (s2 + s2 * j); beyond 192, s1 * s1 (inf or 0).
PrimExpr GgmlExpAvx2Build(const PrimExpr& x) {
  const auto [n, b, upper, u] = ReduceForExp(x);
  const PrimExpr j = Fma(upper, u, F32(0x1.ffffecp-1) * b);
  const DataType i32 = DataType::Int32();
  const PrimExpr e = tir::Cast(i32, n);
  auto c = [&](int64_t v) { return tir::IntImm(i32, v); };
  const PrimExpr positive = tir::GT(n, F32(0));
  const PrimExpr magnitude = tir::Call("fabs", {n});
  // Each power of two below is a normal float wherever its branch is taken.
  const PrimExpr k = PowerOfTwo(tir::Select(tir::GT(magnitude, F32(126)), c(0), e));
  const PrimExpr s1 = tir::Select(positive, F32(0x1p127), F32(0x1p-125));
  const PrimExpr s2 = PowerOfTwo(tir::Select(tir::GT(magnitude, F32(192)), c(0),
                                             tir::Select(positive, e - c(127), e + c(125))));
  return tir::Select(tir::GT(magnitude, F32(192)), s1 * s1,
                     tir::Select(tir::GT(magnitude, F32(126)), Fma(s2, j, s2) * s1, Fma(j, k, k)));
}

absl::StatusOr<tir::PrimFunc> LegalizeGgmlRmsNorm(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& x = p.inputs[0];
  const Buffer& weight = p.inputs[1];
  const Buffer& out = p.outputs[0];
  KILN_RETURN_IF_ERROR(ExpectFloat32(call, x, "data"));
  KILN_RETURN_IF_ERROR(ExpectFloat32(call, weight, "weight"));
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, IntsAttr(call, "axes"));
  const int64_t last = static_cast<int64_t>(x->shape.size()) - 1;
  if (axes && !(axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == last))) {
    return OpError(call, "numerics=\"ggml\" normalizes the last axis only");
  }
  KILN_ASSIGN_OR_RETURN(std::optional<double> eps_attr, FloatAttr(call, "epsilon"));
  const float eps = static_cast<float>(eps_attr.value_or(1e-5));
  const Index rows(x->shape.begin(), x->shape.end() - 1);
  const PrimExpr h = x->shape.back();
  const Buffer sum = ScratchBuffer("ggml_rms_sum_sq", kF64, rows);
  Stmt squares = ReduceBlock("ggml_rms_sum_sq", sum, {h}, tir::FloatImm(kF64, 0), tir::Add, [&](const Index& s, const Index& r) {
    Index i = s;
    i.push_back(r[0]);
    const PrimExpr v = x.Load(i);
    return tir::Cast(kF64, v * v);
  });
  Stmt scale = ComputeBlock("ggml_rms_norm", out, [&](const Index& i) {
    const Index row(i.begin(), i.end() - 1);
    const PrimExpr mean = tir::Cast(kF32, tir::Div(sum.Load(row), tir::Cast(kF64, h)));
    const PrimExpr factor = tir::Div(F32(1), tir::Call("sqrt", {mean + F32(eps)}));
    return (factor * x.Load(i)) * weight.Load({i.back()});
  });
  return MakePrimFunc(p, tir::Allocate(sum, tir::SeqStmt({squares, scale})), "opaque");
}

absl::StatusOr<tir::PrimFunc> LegalizeGgmlRope(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& x = p.inputs[0];
  const Buffer& positions = p.inputs[1];
  const Buffer& out = p.outputs[0];
  KILN_RETURN_IF_ERROR(ExpectFloat32(call, x, "x"));
  KILN_ASSIGN_OR_RETURN(RotaryParams params, RotaryParamsOf(call, x));
  const bool neox = params.neox;
  const int64_t dims = params.dims;
  const int64_t half = dims / 2;
  // The angle's factor per pair, as the builtin computes it (float base, float exponent).
  const float base = static_cast<float>(params.theta);
  const float step = ::powf(base, -2.0f / static_cast<float>(dims));
  const PrimExpr n = x->shape[0];
  const Buffer angle = ScratchBuffer("ggml_rope_angle", kF32, {n, Int(half)});
  const Buffer cosines = ScratchBuffer("ggml_rope_cos", kF32, {n, Int(half)});
  const Buffer sines = ScratchBuffer("ggml_rope_sin", kF32, {n, Int(half)});
  // angle[t, m] = float(position) * step * step ... (m times), one rounding per product:
  // a serial chain over r < m (the update is no combine a reduction may reorder).
  Stmt angles = ReduceBlock(
      "ggml_rope_angle", angle, {Int(half)}, F32(0), [](PrimExpr, PrimExpr v) { return v; },
      [&](const Index& s, const Index& r) {
        const PrimExpr start = tir::Cast(kF32, tir::Cast(DataType::Int32(), positions.Load({s[0]})));
        const PrimExpr acc = tir::Select(tir::EQ(r[0], Int(0)), start, angle.Load(s));
        return tir::Select(tir::LT(r[0], s[1]), acc * F32(step), acc);
      });
  Stmt cos = ComputeBlock("ggml_rope_cos", cosines, [&](const Index& s) {
    return tir::Cast(kF32, tir::Call("cos", {tir::Cast(kF64, angle.Load(s))}));
  });
  Stmt sin = ComputeBlock("ggml_rope_sin", sines, [&](const Index& s) {
    return tir::Cast(kF32, tir::Call("sin", {tir::Cast(kF64, angle.Load(s))}));
  });
  Stmt rotate = ComputeBlock("ggml_rope", out, [&](const Index& index) {
    const PrimExpr& t = index[0];
    const PrimExpr& head = index[1];
    const PrimExpr& j = index[2];
    const PrimExpr inside = tir::LT(j, Int(dims));
    const PrimExpr m = tir::Select(inside, neox ? tir::FloorMod(j, Int(half)) : tir::FloorDiv(j, Int(2)), Int(0));
    const PrimExpr first = neox ? tir::LT(j, Int(half)) : tir::EQ(tir::FloorMod(j, Int(2)), Int(0));
    const PrimExpr a = neox ? m : m * Int(2);
    const PrimExpr b = neox ? m + Int(half) : m * Int(2) + Int(1);
    const PrimExpr x0 = x.Load({t, head, a});
    const PrimExpr x1 = x.Load({t, head, b});
    const PrimExpr c = cosines.Load({t, m});
    const PrimExpr s = sines.Load({t, m});
    const PrimExpr rotated = tir::Select(first, Fma(x0, c, Negate(x1 * s)), Fma(x0, s, x1 * c));
    return tir::Select(inside, rotated, x.Load(index));
  });
  Stmt body = tir::SeqStmt({angles, cos, sin, rotate});
  return MakePrimFunc(p, tir::Allocate(angle, tir::Allocate(cosines, tir::Allocate(sines, body))), "opaque");
}

absl::StatusOr<tir::PrimFunc> LegalizeGgmlSilu(const CallNode& call, GgmlNumerics numerics) {
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  const Buffer& x = p.inputs[0];
  KILN_RETURN_IF_ERROR(ExpectFloat32(call, x, "x"));
  if (x->shape.empty()) return OpError(call, "numerics=\"ggml\" needs at least one dim");
  const bool avx2_build = numerics == GgmlNumerics::kAvx2Build;
  const PrimExpr f = x->shape.back();
  const PrimExpr vectorized = f - tir::FloorMod(f, Int(avx2_build ? 8 : 16));
  Stmt body = ComputeBlock("ggml_silu", p.outputs[0], [&](const Index& i) {
    const PrimExpr v = x.Load(i);
    const PrimExpr minus = Negate(v);
    const PrimExpr ggml = avx2_build ? GgmlExpAvx2Build(minus) : GgmlExp(minus);
    const PrimExpr e = tir::Select(tir::LT(i.back(), vectorized), ggml, tir::Call("exp", {minus}));
    return tir::Div(v, F32(1) + e);
  });
  return MakePrimFunc(p, body, "elementwise");
}

}  // namespace kiln::relax::op
