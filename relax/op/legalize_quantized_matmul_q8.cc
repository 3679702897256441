// quantized_matmul with the activations quantized to 8 bits per block of 32, as llama.cpp's
// CPU backend computes it (builtins/q8_block_dot.h states the arithmetic; its portable code
// is the specification this kernel reproduces bit for bit where the target's float16
// conversion rounds to nearest even and its fma is fused):
//
//   quantize (per row of x, per block b of 32):
//     amax = max |x|, d = amax / 127, id = amax != 0 ? 127 / amax : 0,
//     q[j] = round-half-even(x[j] * id) as int8, xd = float16(d) (widened), and for Q4_1
//     weights xs = float16(d * float(sum q)) (llama.cpp's Q8_1);
//   dot (per row, per output column c, per lane l of 8):
//     lane[l] = fma(wd * xd, float(sum of the 4 integer products 4l..4l+3), lane[l]) over
//     the blocks in order; Q4_1: mins = fma(wm, xs, mins) over the blocks;
//   out = ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) (+ mins).
//
// A block holding an inf or NaN would quantize to garbage (its scale is inf); llama.cpp's
// fallback in Kiln's CPU kernel computes such a row with float32 activations, whose every
// output is then inf or NaN, decided by the non-finite elements alone (a NaN, inf * 0 and
// inf - inf give NaN, inf * w an inf of w's sign). Here those blocks add their float products
// x * w to the lanes instead of the integer path (and nothing to mins), which gives the same
// inf or NaN; the finite blocks' contributions cannot change it (unless they overflow).
//
// Kernels (one PrimFunc, blocks run one after another, scratch in device memory): four
// per-block passes over x (amax, non-finite flag, quants, scales; Q4_1 adds the quant sums),
// then the lanes — one thread per (row, column, lane): its reduction over the blocks is serial
// (an fma update is no combine a cross-thread reduction may reorder) — then the lane sum.
#include "relax/op/legalize_quantized_matmul_q8.h"

#include <string>
#include <variant>
#include <vector>

#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/op/quant_block_access.h"
#include "support/status_macros.h"

namespace kiln::relax::op {

namespace {

using Index = std::vector<PrimExpr>;

constexpr int64_t kLanes = 8;
constexpr int64_t kLaneWeights = kQuantBlockWeights / kLanes;  // 4

Index Append(Index index, std::initializer_list<PrimExpr> more) {
  index.insert(index.end(), more.begin(), more.end());
  return index;
}

PrimExpr F32(double v) { return tir::FloatImm(DataType::Float32(), v); }
PrimExpr I32(int64_t v) { return tir::IntImm(DataType::Int32(), v); }

// Whether float32 `v` is an inf or NaN, from its exponent bits (drivers may assume
// comparisons never see a NaN; integer tests they cannot fold away).
PrimExpr IsNonFinite(const PrimExpr& v) {
  const DataType u32 = DataType::UInt(32);
  const PrimExpr exponent = tir::IntImm(u32, 0x7f800000);
  return tir::EQ(tir::BitAnd(tir::Reinterpret(u32, v), exponent), exponent);
}

// float32 -> float16 -> float32: the value the CPU stores in a block's scale.
PrimExpr RoundToHalf(const PrimExpr& v) { return tir::Cast(DataType::Float32(), tir::Cast(DataType::Float(16), v)); }

}  // namespace

absl::StatusOr<bool> QuantizedMatmulQ8Activations(const CallNode& call) {
  auto it = call.attrs.find("activations");
  if (it == call.attrs.end()) return false;
  const auto* name = std::get_if<std::string>(&it->second);
  if (name != nullptr && *name == "float32") return false;
  if (name != nullptr && *name == "q8") return true;
  return OpError(call, "attribute activations must be \"float32\" or \"q8\"");
}

bool QuantizedMatmulQ8Generated(const std::string& format) {
  return format == "q4_0" || format == "q4_1" || format == "q8_0";
}

absl::StatusOr<Expr> LegalizeQuantizedMatmulQ8(LegalizeContext& context, const CallNode& call,
                                               const QuantFormat& format) {
  if (!QuantizedMatmulQ8Generated(format.name)) {
    return OpError(call, "activations=\"q8\" has no generated kernel for ", format.name,
                   " weights (q4_0, q4_1 and q8_0; on the CPU the library kernels take every format)");
  }
  KILN_ASSIGN_OR_RETURN(KernelParams p, MakeParams(call));
  if (p.inputs.size() != 2) return OpError(call, "cannot legalize: expects two tensor operands");
  const Buffer& x = p.inputs[0];
  const Buffer& w = p.inputs[1];
  const Buffer& out = p.outputs[0];
  const bool q4_1 = format.name == "q4_1";
  const Index lead(x->shape.begin(), x->shape.end() - 1);
  const PrimExpr k = x->shape.back();
  const PrimExpr blocks = tir::FloorDiv(k, Int(kQuantBlockWeights));
  const PrimExpr n = out->shape.back();

  const Buffer amax = ScratchBuffer("q8_amax", DataType::Float32(), Append(lead, {blocks}));
  const Buffer bad = ScratchBuffer("q8_nonfinite", DataType::Int32(), Append(lead, {blocks}));
  const Buffer quants = ScratchBuffer("q8_quants", DataType::Int(8), Append(lead, {k}));
  const Buffer scales = ScratchBuffer("q8_scales", DataType::Float32(), Append(lead, {blocks}));
  const Buffer quant_sums = ScratchBuffer("q8_quant_sums", DataType::Int32(), Append(lead, {blocks}));
  const Buffer sums = ScratchBuffer("q8_sums", DataType::Float32(), Append(lead, {blocks}));
  const Buffer lanes = ScratchBuffer("q8_lanes", DataType::Float32(), Append(lead, {n, Int(kLanes)}));
  const Buffer mins = ScratchBuffer("q8_mins", DataType::Float32(), Append(lead, {n}));

  // x at (row `s` without its last index, block s.back(), position r within the block).
  auto x_at = [&](const Index& s, const PrimExpr& block, const PrimExpr& position) {
    Index i(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(lead.size()));
    i.push_back(block * Int(kQuantBlockWeights) + position);
    return x.Load(std::move(i));
  };
  auto row_of = [&](const Index& s) { return Index(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(lead.size())); };
  auto take = [](PrimExpr acc, PrimExpr v) { return v; };  // the value already updates acc

  std::vector<Stmt> steps;
  steps.push_back(ReduceBlock("q8_amax", amax, {Int(kQuantBlockWeights)}, F32(0), tir::Max,
                              [&](const Index& s, const Index& r) { return tir::Call("fabs", {x_at(s, s.back(), r[0])}); }));
  steps.push_back(ReduceBlock("q8_nonfinite", bad, {Int(kQuantBlockWeights)}, I32(0), tir::Max,
                              [&](const Index& s, const Index& r) {
                                return tir::Select(IsNonFinite(x_at(s, s.back(), r[0])), I32(1), I32(0));
                              }));
  steps.push_back(ComputeBlock("q8_quants", quants, [&](const Index& s) {
    Index block_index = row_of(s);
    const PrimExpr block = tir::FloorDiv(s.back(), Int(kQuantBlockWeights));
    block_index.push_back(block);
    const PrimExpr a = amax.Load(block_index);
    const PrimExpr id = tir::Select(tir::NE(a, F32(0)), tir::Div(F32(127), a), F32(0));
    const PrimExpr q = tir::Call("round", {tir::Mul(x.Load(s), id)});
    return tir::Cast(DataType::Int(8), tir::Cast(DataType::Int32(), q));
  }));
  steps.push_back(ComputeBlock("q8_scales", scales, [&](const Index& s) {
    return RoundToHalf(tir::Div(amax.Load(s), F32(127)));
  }));
  if (q4_1) {
    steps.push_back(ReduceBlock("q8_quant_sums", quant_sums, {Int(kQuantBlockWeights)}, I32(0), tir::Add,
                                [&](const Index& s, const Index& r) {
                                  Index i = row_of(s);
                                  i.push_back(s.back() * Int(kQuantBlockWeights) + r[0]);
                                  return tir::Cast(DataType::Int32(), quants.Load(i));
                                }));
    steps.push_back(ComputeBlock("q8_sums", sums, [&](const Index& s) {
      // llama.cpp scales the sum by d before its float16 rounding, not by the rounded d.
      return RoundToHalf(tir::Mul(tir::Div(amax.Load(s), F32(127)), tir::Cast(DataType::Float32(), quant_sums.Load(s))));
    }));
  }
  // lanes[row, c, l] over the blocks b (s = row..., c, l; r = b).
  steps.push_back(ReduceBlock("q8_lanes", lanes, {blocks}, F32(0), take, [&](const Index& s, const Index& r) {
    const Index row = row_of(s);
    const PrimExpr& column = s[lead.size()];
    const PrimExpr& lane = s[lead.size() + 1];
    const PrimExpr& b = r[0];
    const PrimExpr h = tir::FloorDiv(lane, Int(kLanes / 2));
    PrimExpr isum;
    PrimExpr float_sum;
    for (int64_t t = 0; t < kLaneWeights; ++t) {
      const PrimExpr j = tir::FloorMod(lane, Int(kLanes / 2)) * Int(kLaneWeights) + Int(t);
      const PrimExpr position = lane * Int(kLaneWeights) + Int(t);
      const PrimExpr q = tir::Cast(DataType::Int32(), quants.Load(Append(row, {b * Int(kQuantBlockWeights) + position})));
      const PrimExpr product = tir::Mul(QuantBlockInt(w, column, b, format, h, j), q);
      isum = isum.defined() ? tir::Add(isum, product) : product;
      const PrimExpr float_product = tir::Mul(x.Load(Append(row, {b * Int(kQuantBlockWeights) + position})),
                                              QuantBlockWeight(w, column, b, format, h, j));
      float_sum = float_sum.defined() ? tir::Add(float_sum, float_product) : float_product;
    }
    const PrimExpr acc = lanes.Load(s);
    const PrimExpr scale = tir::Mul(QuantBlockHalf(w, column, b, format, 0), scales.Load(Append(row, {b})));
    const PrimExpr integer_path = tir::Call("fma", {scale, tir::Cast(DataType::Float32(), isum), acc});
    return tir::Select(tir::NE(bad.Load(Append(row, {b})), I32(0)), tir::Add(acc, float_sum), integer_path);
  }));
  if (q4_1) {
    steps.push_back(ReduceBlock("q8_mins", mins, {blocks}, F32(0), take, [&](const Index& s, const Index& r) {
      const Index row = row_of(s);
      const PrimExpr acc = mins.Load(s);
      const PrimExpr m = QuantBlockHalf(w, s.back(), r[0], format, 2);
      return tir::Select(tir::NE(bad.Load(Append(row, {r[0]})), I32(0)), acc,
                         tir::Call("fma", {m, sums.Load(Append(row, {r[0]})), acc}));
    }));
  }
  steps.push_back(ComputeBlock("q8_combine", out, [&](const Index& s) {
    auto lane = [&](int64_t l) { return lanes.Load(Append(s, {Int(l)})); };
    auto pair = [&](int64_t l) { return tir::Add(lane(l), lane(l + 4)); };
    PrimExpr sum = tir::Add(tir::Add(pair(0), pair(2)), tir::Add(pair(1), pair(3)));
    return q4_1 ? tir::Add(sum, mins.Load(s)) : sum;
  }));

  Stmt body = tir::SeqStmt(std::move(steps));
  std::vector<Buffer> scratch = {amax, bad, quants, scales, lanes};
  if (q4_1) scratch.insert(scratch.end(), {quant_sums, sums, mins});
  for (auto it = scratch.rbegin(); it != scratch.rend(); ++it) body = tir::Allocate(*it, body);
  Expr kernel = context.AddPrimFunc("quantized_matmul_q8_" + format.name, MakePrimFunc(p, body, "opaque"));
  return CallTir(kernel, {call.args[0], call.args[1]}, call.struct_info());
}

}  // namespace kiln::relax::op
