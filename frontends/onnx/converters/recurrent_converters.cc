// RNN, GRU and LSTM (opsets 7 / 14 / 22): Kiln has no loops, so the recurrence is unrolled
// at import time over the (static) sequence length, each direction on its own.
//
// The input projection of every step is one matmul before the loop: X (T, B, I) times
// W^T (I, G H) plus W's bias, sliced per step; each step then adds H_{t-1} R^T and R's bias
// and applies the cell (gates in ONNX's order: RNN none, GRU z r h, LSTM i o f c):
//   RNN:  H = f(x + H R^T)
//   GRU:  z = f(..z), r = f(..r), h = g(x_h + (r H) R_h^T + Rb_h)      linear_before_reset 0
//                                 h = g(x_h + r (H R_h^T + Rb_h))      linear_before_reset 1
//         H = (1 - z) h + z H
//   LSTM: i = f(..i + P_i C), f = f(..f + P_f C) (1 - i with input_forget), c = g(..c),
//         C = f C + i c, o = f(..o + P_o C), H = o h(C)
// `clip` bounds every activation's input. With sequence_lens, a batch entry's state stops
// changing after its length and its Y rows are 0; the reverse direction walks t = T-1 .. 0,
// so an entry of length L starts at L-1 (steps at t >= L leave the initial state), which is
// ONNX's "reverse within each sequence".
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

// Steps unrolled at most (each is a few small kernels per direction).
constexpr int64_t kMaxSteps = 4096;

enum class CellKind { kRnn, kGru, kLstm };

int GateCount(CellKind kind) { return kind == CellKind::kRnn ? 1 : kind == CellKind::kGru ? 3 : 4; }

// One activation function of the `activations` attribute with its alpha / beta.
struct Activation {
  std::string name;
  double alpha = 0;
  double beta = 0;
};

// Whether `name` takes alpha / beta, and their defaults (those of the ONNX operators of the
// same name; Affine and ScaledTanh have no operator: 1 and 0, 1 and 1).
struct ActivationParams {
  bool known = false;
  bool uses_alpha = false, uses_beta = false;
  double alpha = 0, beta = 0;
};

ActivationParams ParamsOf(const std::string& name) {
  if (name == "Relu" || name == "Tanh" || name == "Sigmoid" || name == "Softsign" || name == "Softplus") {
    return {true, false, false, 0, 0};
  }
  if (name == "Affine") return {true, true, true, 1.0, 0.0};
  if (name == "LeakyRelu") return {true, true, false, 0.01, 0};
  if (name == "ThresholdedRelu") return {true, true, false, 1.0, 0};
  if (name == "ScaledTanh") return {true, true, true, 1.0, 1.0};
  if (name == "HardSigmoid") return {true, true, true, 0.2, 0.5};
  if (name == "Elu") return {true, true, false, 1.0, 0};
  return {};
}

absl::StatusOr<Expr> Apply(NodeContext& c, const Activation& a, Expr x, DataType t, double clip) {
  if (clip > 0) {
    KILN_ASSIGN_OR_RETURN(x, c.Call("clip", {x, ScalarConstant(-clip, t), ScalarConstant(clip, t)}));
  }
  auto scalar = [&](double v) { return ScalarConstant(v, t); };
  const std::string& n = a.name;
  if (n == "Tanh") return c.Call("tanh", {x});
  if (n == "Sigmoid") return c.Call("sigmoid", {x});
  if (n == "Relu") return c.Call("relu", {x});
  if (n == "Affine") {
    KILN_ASSIGN_OR_RETURN(Expr ax, c.Call("multiply", {x, scalar(a.alpha)}));
    return c.Call("add", {ax, scalar(a.beta)});
  }
  if (n == "LeakyRelu" || n == "Elu") {
    KILN_ASSIGN_OR_RETURN(Expr negative, c.Call("less", {x, scalar(0)}));
    Expr below = x;
    if (n == "Elu") {
      KILN_ASSIGN_OR_RETURN(below, c.Call("expm1", {x}));
    }
    KILN_ASSIGN_OR_RETURN(below, c.Call("multiply", {below, scalar(a.alpha)}));
    return c.Call("where", {negative, below, x});
  }
  if (n == "ThresholdedRelu") {
    KILN_ASSIGN_OR_RETURN(Expr above, c.Call("greater", {x, scalar(a.alpha)}));
    return c.Call("where", {above, x, scalar(0)});
  }
  if (n == "ScaledTanh") {
    KILN_ASSIGN_OR_RETURN(Expr bx, c.Call("multiply", {x, scalar(a.beta)}));
    KILN_ASSIGN_OR_RETURN(Expr th, c.Call("tanh", {bx}));
    return c.Call("multiply", {th, scalar(a.alpha)});
  }
  if (n == "HardSigmoid") {
    KILN_ASSIGN_OR_RETURN(Expr ax, c.Call("multiply", {x, scalar(a.alpha)}));
    KILN_ASSIGN_OR_RETURN(Expr axb, c.Call("add", {ax, scalar(a.beta)}));
    return c.Call("clip", {axb, scalar(0), scalar(1)});
  }
  if (n == "Softsign") {
    KILN_ASSIGN_OR_RETURN(Expr abs, c.Call("abs", {x}));
    KILN_ASSIGN_OR_RETURN(Expr den, c.Call("add", {abs, scalar(1)}));
    return c.Call("divide", {x, den});
  }
  // Softplus: log(1 + e^x).
  KILN_ASSIGN_OR_RETURN(Expr e, c.Call("exp", {x}));
  return c.Call("log1p", {e});
}

// The `activations` attribute split per direction (each `per_direction` long), with
// activation_alpha / activation_beta consumed in order by the functions that take them.
absl::StatusOr<std::vector<std::vector<Activation>>> ReadActivations(const NodeContext& c, CellKind kind,
                                                                     int64_t directions) {
  std::vector<std::string> defaults;
  if (kind == CellKind::kRnn) defaults = {"Tanh"};
  if (kind == CellKind::kGru) defaults = {"Sigmoid", "Tanh"};
  if (kind == CellKind::kLstm) defaults = {"Sigmoid", "Tanh", "Tanh"};
  const size_t per_direction = defaults.size();
  std::vector<std::string> names;
  if (const ::onnx::AttributeProto* attr = c.Attr("activations")) {
    for (const std::string& s : attr->strings()) names.push_back(s);
  }
  if (names.empty()) names = defaults;
  // One direction's list given for two directions: both use it.
  if (directions == 2 && names.size() == per_direction) {
    const std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != per_direction * static_cast<size_t>(directions)) {
    return c.Error("activations lists ", names.size(), " functions; ", c.op_type(), " takes ", per_direction,
                   " per direction (", directions, ")");
  }
  const std::vector<double> alphas = c.AttrFloats("activation_alpha");
  const std::vector<double> betas = c.AttrFloats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::vector<Activation>> result(directions);
  for (size_t k = 0; k < names.size(); ++k) {
    const ActivationParams p = ParamsOf(names[k]);
    if (!p.known) return c.Unsupported("activation function '", names[k], "' is not supported");
    Activation a{names[k], p.alpha, p.beta};
    if (p.uses_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (p.uses_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    result[k / per_direction].push_back(a);
  }
  return result;
}

// Columns [k H, (k + n) H) of a (rows, G H) matrix: gate k (and the n - 1 after it).
absl::StatusOr<Expr> Gates(NodeContext& c, const Expr& x, int64_t hidden, int64_t k, int64_t n = 1) {
  return c.Call("strided_slice", {x},
                {{"begin", std::vector<int64_t>{k * hidden}},
                 {"end", std::vector<int64_t>{(k + n) * hidden}},
                 {"axes", std::vector<int64_t>{1}},
                 {"strides", std::vector<int64_t>{1}}});
}

// Element `index` of `x` (shape `shape`) along axis 0, that axis removed.
absl::StatusOr<Expr> Row(NodeContext& c, const Expr& x, std::vector<PrimExpr> shape, int64_t index) {
  return TakeIndex(c, x, shape, 0, index);
}

// The static shape of input i, which must have `rank` dims, all known.
absl::StatusOr<std::vector<int64_t>> StaticShape(NodeContext& c, int i, size_t rank, const char* what) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, c.InputShape(i));
  if (dims.size() != rank) return c.Error(what, " must be ", rank, "-D, got ", dims.size(), " dims");
  std::vector<int64_t> out;
  for (const PrimExpr& d : dims) {
    out.push_back(StaticDim(d));
    if (out.back() < 0) return c.Unsupported(what, " needs a static shape");
  }
  return out;
}

// What the recurrence of one direction needs.
struct Direction {
  Expr x_proj;             // (T, B, G H): X W^T + Wb (+ Rb of the gates that add it outside)
  Expr r_t;                // (H, G H): R^T
  Expr r_bias;             // (G H) or undefined: R's bias added to H R^T
  Expr peephole;           // LSTM: (3 H), or undefined
  Expr h, cell;            // state (B, H)
  std::vector<Activation> act;
  bool reverse = false;
};

class Recurrence {
 public:
  Recurrence(NodeContext& c, CellKind kind) : c_(c), kind_(kind), gates_(GateCount(kind)) {}

  absl::StatusOr<std::vector<Value>> Convert();

 private:
  absl::StatusOr<Direction> Prepare(int64_t d, const Expr& x, const std::vector<Activation>& act);
  // One step: the new (H, C) from the step's input projection x_t (B, G H).
  absl::StatusOr<std::pair<Expr, Expr>> Step(const Direction& dir, const Expr& x_t);
  absl::StatusOr<Expr> Act(const Direction& dir, int k, Expr x) { return Apply(c_, dir.act[k], x, dtype_, clip_); }
  absl::StatusOr<Expr> Add(Expr a, Expr b) { return c_.Call("add", {std::move(a), std::move(b)}); }
  absl::StatusOr<Expr> Mul(Expr a, Expr b) { return c_.Call("multiply", {std::move(a), std::move(b)}); }
  // x[d] of a (D, n) or (D, B, H) input, direction axis removed.
  absl::StatusOr<Expr> OfDirection(int i, int64_t d, std::vector<PrimExpr> shape) {
    KILN_ASSIGN_OR_RETURN(Expr x, c_.Input(i));
    return TakeIndex(c_, x, shape, 0, d);
  }
  // An initial state input (initial_h / initial_c) of direction d, or zeros.
  absl::StatusOr<Expr> InitialState(int i, int64_t d);

  NodeContext& c_;
  CellKind kind_;
  int64_t gates_;
  DataType dtype_;
  int64_t steps_ = 0, batch_ = 0, input_size_ = 0, hidden_ = 0, directions_ = 1;
  bool batch_major_ = false;
  double clip_ = 0;
  bool linear_before_reset_ = false, input_forget_ = false;
};

absl::StatusOr<Expr> Recurrence::InitialState(int i, int64_t d) {
  const PrimExpr b(batch_), h(hidden_), dirs(directions_);
  if (!c_.has_input(i)) {
    return c_.Call("full", {relax::ShapeExpr({b, h}), ScalarConstant(0, dtype_)}, {{"dtype", dtype_}});
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> s, StaticShape(c_, i, 3, i == 5 ? "initial_h" : "initial_c"));
  const std::vector<int64_t> want =
      batch_major_ ? std::vector<int64_t>{batch_, directions_, hidden_} : std::vector<int64_t>{directions_, batch_, hidden_};
  if (s != want) {
    return c_.Error(i == 5 ? "initial_h" : "initial_c", " must have shape (", want[0], ", ", want[1], ", ", want[2],
                    ")");
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c_.Input(i));
  if (batch_major_) return TakeIndex(c_, x, {b, dirs, h}, 1, d);
  return TakeIndex(c_, x, {dirs, b, h}, 0, d);
}

absl::StatusOr<Direction> Recurrence::Prepare(int64_t d, const Expr& x, const std::vector<Activation>& act) {
  Direction dir;
  dir.act = act;
  const PrimExpr gh(gates_ * hidden_), dirs(directions_);
  KILN_ASSIGN_OR_RETURN(Expr w, OfDirection(1, d, {dirs, gh, PrimExpr(input_size_)}));
  KILN_ASSIGN_OR_RETURN(Expr w_t, c_.Call("permute_dims", {w}, {{"axes", std::vector<int64_t>{1, 0}}}));
  KILN_ASSIGN_OR_RETURN(dir.x_proj, c_.Call("matmul", {x, w_t}));
  KILN_ASSIGN_OR_RETURN(Expr r, OfDirection(2, d, {dirs, gh, PrimExpr(hidden_)}));
  KILN_ASSIGN_OR_RETURN(dir.r_t, c_.Call("permute_dims", {r}, {{"axes", std::vector<int64_t>{1, 0}}}));
  if (c_.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bs, StaticShape(c_, 3, 2, "B"));
    if (bs != std::vector<int64_t>{directions_, 2 * gates_ * hidden_}) {
      return c_.Error("B must have shape (", directions_, ", ", 2 * gates_ * hidden_, ")");
    }
    KILN_ASSIGN_OR_RETURN(Expr bias, OfDirection(3, d, {dirs, PrimExpr(2 * gates_ * hidden_)}));
    auto half = [&](int64_t k) {
      return c_.Call("strided_slice", {bias},
                     {{"begin", std::vector<int64_t>{k * gates_ * hidden_}},
                      {"end", std::vector<int64_t>{(k + 1) * gates_ * hidden_}},
                      {"axes", std::vector<int64_t>{0}},
                      {"strides", std::vector<int64_t>{1}}});
    };
    KILN_ASSIGN_OR_RETURN(Expr wb, half(0));
    KILN_ASSIGN_OR_RETURN(dir.r_bias, half(1));
    KILN_ASSIGN_OR_RETURN(dir.x_proj, Add(dir.x_proj, wb));
  }
  if (kind_ == CellKind::kLstm && c_.has_input(7)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ps, StaticShape(c_, 7, 2, "P"));
    if (ps != std::vector<int64_t>{directions_, 3 * hidden_}) {
      return c_.Error("P must have shape (", directions_, ", ", 3 * hidden_, ")");
    }
    KILN_ASSIGN_OR_RETURN(dir.peephole, OfDirection(7, d, {dirs, PrimExpr(3 * hidden_)}));
  }
  KILN_ASSIGN_OR_RETURN(dir.h, InitialState(5, d));
  if (kind_ == CellKind::kLstm) {
    KILN_ASSIGN_OR_RETURN(dir.cell, InitialState(6, d));
  }
  return dir;
}

absl::StatusOr<std::pair<Expr, Expr>> Recurrence::Step(const Direction& dir, const Expr& x_t) {
  const int64_t h = hidden_;
  if (kind_ == CellKind::kGru) {
    // z and r: x + H R_zr^T + Rb_zr. The candidate's recurrent term depends on linear_before_reset.
    KILN_ASSIGN_OR_RETURN(Expr r_zr, c_.Call("strided_slice", {dir.r_t},
                                             {{"begin", std::vector<int64_t>{0}},
                                              {"end", std::vector<int64_t>{2 * h}},
                                              {"axes", std::vector<int64_t>{1}},
                                              {"strides", std::vector<int64_t>{1}}}));
    KILN_ASSIGN_OR_RETURN(Expr r_h, Gates(c_, dir.r_t, h, 2));
    Expr rb_zr, rb_h;
    if (dir.r_bias.defined()) {
      KILN_ASSIGN_OR_RETURN(Expr rb, Reshape(c_, dir.r_bias, {PrimExpr(int64_t{1}), PrimExpr(3 * h)}));
      KILN_ASSIGN_OR_RETURN(rb_zr, Gates(c_, rb, h, 0, 2));
      KILN_ASSIGN_OR_RETURN(rb_h, Gates(c_, rb, h, 2));
    }
    KILN_ASSIGN_OR_RETURN(Expr zr, c_.Call("matmul", {dir.h, r_zr}));
    if (rb_zr.defined()) {
      KILN_ASSIGN_OR_RETURN(zr, Add(zr, rb_zr));
    }
    KILN_ASSIGN_OR_RETURN(Expr x_zr, Gates(c_, x_t, h, 0, 2));
    KILN_ASSIGN_OR_RETURN(zr, Add(zr, x_zr));
    KILN_ASSIGN_OR_RETURN(Expr z, Gates(c_, zr, h, 0));
    KILN_ASSIGN_OR_RETURN(Expr r, Gates(c_, zr, h, 1));
    KILN_ASSIGN_OR_RETURN(z, Act(dir, 0, z));
    KILN_ASSIGN_OR_RETURN(r, Act(dir, 0, r));
    Expr recurrent;
    if (linear_before_reset_) {
      KILN_ASSIGN_OR_RETURN(recurrent, c_.Call("matmul", {dir.h, r_h}));
      if (rb_h.defined()) {
        KILN_ASSIGN_OR_RETURN(recurrent, Add(recurrent, rb_h));
      }
      KILN_ASSIGN_OR_RETURN(recurrent, Mul(r, recurrent));
    } else {
      KILN_ASSIGN_OR_RETURN(Expr reset, Mul(r, dir.h));
      KILN_ASSIGN_OR_RETURN(recurrent, c_.Call("matmul", {reset, r_h}));
      if (rb_h.defined()) {
        KILN_ASSIGN_OR_RETURN(recurrent, Add(recurrent, rb_h));
      }
    }
    KILN_ASSIGN_OR_RETURN(Expr x_h, Gates(c_, x_t, h, 2));
    KILN_ASSIGN_OR_RETURN(Expr candidate, Add(x_h, recurrent));
    KILN_ASSIGN_OR_RETURN(candidate, Act(dir, 1, candidate));
    // H = (1 - z) h + z H = h + z (H - h)
    KILN_ASSIGN_OR_RETURN(Expr diff, c_.Call("subtract", {dir.h, candidate}));
    KILN_ASSIGN_OR_RETURN(Expr kept, Mul(z, diff));
    KILN_ASSIGN_OR_RETURN(Expr next, Add(candidate, kept));
    return std::make_pair(next, Expr());
  }
  KILN_ASSIGN_OR_RETURN(Expr pre, c_.Call("matmul", {dir.h, dir.r_t}));
  if (dir.r_bias.defined()) {
    KILN_ASSIGN_OR_RETURN(pre, Add(pre, dir.r_bias));
  }
  KILN_ASSIGN_OR_RETURN(pre, Add(pre, x_t));
  if (kind_ == CellKind::kRnn) {
    KILN_ASSIGN_OR_RETURN(Expr next, Act(dir, 0, pre));
    return std::make_pair(next, Expr());
  }
  // LSTM, gates i o f c.
  auto peephole = [&](int64_t k, const Expr& cell, Expr gate) -> absl::StatusOr<Expr> {
    if (!dir.peephole.defined()) return gate;
    KILN_ASSIGN_OR_RETURN(Expr p, c_.Call("strided_slice", {dir.peephole},
                                          {{"begin", std::vector<int64_t>{k * hidden_}},
                                           {"end", std::vector<int64_t>{(k + 1) * hidden_}},
                                           {"axes", std::vector<int64_t>{0}},
                                           {"strides", std::vector<int64_t>{1}}}));
    KILN_ASSIGN_OR_RETURN(Expr pc, Mul(p, cell));
    return Add(gate, pc);
  };
  KILN_ASSIGN_OR_RETURN(Expr i, Gates(c_, pre, h, 0));
  KILN_ASSIGN_OR_RETURN(Expr o, Gates(c_, pre, h, 1));
  KILN_ASSIGN_OR_RETURN(Expr f, Gates(c_, pre, h, 2));
  KILN_ASSIGN_OR_RETURN(Expr g, Gates(c_, pre, h, 3));
  KILN_ASSIGN_OR_RETURN(i, peephole(0, dir.cell, i));  // P is ordered i o f
  KILN_ASSIGN_OR_RETURN(i, Act(dir, 0, i));
  if (input_forget_) {
    KILN_ASSIGN_OR_RETURN(f, c_.Call("subtract", {ScalarConstant(1, dtype_), i}));
  } else {
    KILN_ASSIGN_OR_RETURN(f, peephole(2, dir.cell, f));
    KILN_ASSIGN_OR_RETURN(f, Act(dir, 0, f));
  }
  KILN_ASSIGN_OR_RETURN(g, Act(dir, 1, g));
  KILN_ASSIGN_OR_RETURN(Expr kept, Mul(f, dir.cell));
  KILN_ASSIGN_OR_RETURN(Expr added, Mul(i, g));
  KILN_ASSIGN_OR_RETURN(Expr cell, Add(kept, added));
  KILN_ASSIGN_OR_RETURN(o, peephole(1, cell, o));
  KILN_ASSIGN_OR_RETURN(o, Act(dir, 0, o));
  KILN_ASSIGN_OR_RETURN(Expr hc, Act(dir, 2, cell));
  KILN_ASSIGN_OR_RETURN(Expr next, Mul(o, hc));
  return std::make_pair(next, cell);
}

absl::StatusOr<std::vector<Value>> Recurrence::Convert() {
  const std::string direction = c_.AttrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return c_.Error("direction '", direction, "' is not forward, reverse or bidirectional");
  }
  directions_ = direction == "bidirectional" ? 2 : 1;
  batch_major_ = c_.AttrInt("layout", 0) == 1;
  clip_ = c_.AttrFloat("clip", 0.0);
  if (c_.HasAttr("clip") && clip_ <= 0) return c_.Error("clip must be positive, got ", clip_);
  linear_before_reset_ = c_.AttrInt("linear_before_reset", 0) != 0;
  input_forget_ = c_.AttrInt("input_forget", 0) != 0;
  KILN_ASSIGN_OR_RETURN(dtype_, c_.InputDType(0));
  if (!dtype_.is_floating()) return c_.Error("X must be a floating-point tensor");

  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> xs, StaticShape(c_, 0, 3, "X"));
  steps_ = batch_major_ ? xs[1] : xs[0];
  batch_ = batch_major_ ? xs[0] : xs[1];
  input_size_ = xs[2];
  if (steps_ > kMaxSteps) return c_.Unsupported(steps_, " steps are too many to unroll (at most ", kMaxSteps, ")");
  if (steps_ == 0) return c_.Unsupported("an empty sequence is not supported");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rs, StaticShape(c_, 2, 3, "R"));
  hidden_ = c_.AttrInt("hidden_size", rs[2]);
  if (hidden_ <= 0) return c_.Error("hidden_size must be positive");
  if (rs != std::vector<int64_t>{directions_, gates_ * hidden_, hidden_}) {
    return c_.Error("R must have shape (", directions_, ", ", gates_ * hidden_, ", ", hidden_, ")");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ws, StaticShape(c_, 1, 3, "W"));
  if (ws != std::vector<int64_t>{directions_, gates_ * hidden_, input_size_}) {
    return c_.Error("W must have shape (", directions_, ", ", gates_ * hidden_, ", ", input_size_, ")");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::vector<Activation>> acts, ReadActivations(c_, kind_, directions_));

  KILN_ASSIGN_OR_RETURN(Expr x, c_.Input(0));
  if (batch_major_) {
    KILN_ASSIGN_OR_RETURN(x, c_.Call("permute_dims", {x}, {{"axes", std::vector<int64_t>{1, 0, 2}}}));
  }
  // Per step, whether each batch entry is still inside its sequence: (B, 1) bool.
  Expr lengths;
  if (c_.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ls, StaticShape(c_, 4, 1, "sequence_lens"));
    if (ls[0] != batch_) return c_.Error("sequence_lens must have batch_size (", batch_, ") elements");
    KILN_ASSIGN_OR_RETURN(Expr lens, c_.Input(4));
    KILN_ASSIGN_OR_RETURN(lengths, c_.Call("astype", {lens}, {{"dtype", DataType::Int64()}}));
    KILN_ASSIGN_OR_RETURN(lengths, Reshape(c_, lengths, {PrimExpr(batch_), PrimExpr(int64_t{1})}));
  }
  const PrimExpr t_dim(steps_), b_dim(batch_), h_dim(hidden_), one(int64_t{1});
  std::vector<Expr> y_dirs, h_dirs, c_dirs;
  for (int64_t d = 0; d < directions_; ++d) {
    KILN_ASSIGN_OR_RETURN(Direction dir, Prepare(d, x, acts[d]));
    dir.reverse = direction == "reverse" || d == 1;
    std::vector<Expr> ys(steps_);
    for (int64_t k = 0; k < steps_; ++k) {
      const int64_t t = dir.reverse ? steps_ - 1 - k : k;
      KILN_ASSIGN_OR_RETURN(Expr x_t, Row(c_, dir.x_proj, {t_dim, b_dim, PrimExpr(gates_ * hidden_)}, t));
      KILN_ASSIGN_OR_RETURN(auto next, Step(dir, x_t));
      Expr y_t = next.first;
      if (lengths.defined()) {
        KILN_ASSIGN_OR_RETURN(Expr live, c_.Call("less", {ScalarConstant(static_cast<double>(t), DataType::Int64()),
                                                          lengths}));
        KILN_ASSIGN_OR_RETURN(next.first, c_.Call("where", {live, next.first, dir.h}));
        if (next.second.defined()) {
          KILN_ASSIGN_OR_RETURN(next.second, c_.Call("where", {live, next.second, dir.cell}));
        }
        KILN_ASSIGN_OR_RETURN(y_t, c_.Call("where", {live, y_t, ScalarConstant(0, dtype_)}));
      }
      dir.h = next.first;
      dir.cell = next.second;
      KILN_ASSIGN_OR_RETURN(ys[t], Reshape(c_, y_t, {one, one, b_dim, h_dim}));
    }
    Expr y = ys[0];
    if (steps_ > 1) {
      KILN_ASSIGN_OR_RETURN(y, c_.Call("concat", {relax::Tuple(ys)}, {{"axis", int64_t{0}}}));
    }
    y_dirs.push_back(y);  // (T, 1, B, H)
    KILN_ASSIGN_OR_RETURN(Expr h_last, Reshape(c_, dir.h, {one, b_dim, h_dim}));
    h_dirs.push_back(h_last);
    if (kind_ == CellKind::kLstm) {
      KILN_ASSIGN_OR_RETURN(Expr c_last, Reshape(c_, dir.cell, {one, b_dim, h_dim}));
      c_dirs.push_back(c_last);
    }
  }
  auto join = [&](const std::vector<Expr>& parts, int64_t axis) -> absl::StatusOr<Expr> {
    if (parts.size() == 1) return parts[0];
    return c_.Call("concat", {relax::Tuple(parts)}, {{"axis", axis}});
  };
  // Y (T, D, B, H), Y_h / Y_c (D, B, H); batch-major: (B, T, D, H) and (B, D, H).
  KILN_ASSIGN_OR_RETURN(Expr y, join(y_dirs, 1));
  KILN_ASSIGN_OR_RETURN(Expr y_h, join(h_dirs, 0));
  if (batch_major_) {
    KILN_ASSIGN_OR_RETURN(y, c_.Call("permute_dims", {y}, {{"axes", std::vector<int64_t>{2, 0, 1, 3}}}));
    KILN_ASSIGN_OR_RETURN(y_h, c_.Call("permute_dims", {y_h}, {{"axes", std::vector<int64_t>{1, 0, 2}}}));
  }
  std::vector<Value> out = {Value::Of(y), Value::Of(y_h)};
  if (kind_ == CellKind::kLstm) {
    KILN_ASSIGN_OR_RETURN(Expr y_c, join(c_dirs, 0));
    if (batch_major_) {
      KILN_ASSIGN_OR_RETURN(y_c, c_.Call("permute_dims", {y_c}, {{"axes", std::vector<int64_t>{1, 0, 2}}}));
    }
    out.push_back(Value::Of(y_c));
  }
  return out;
}

absl::StatusOr<std::vector<Value>> ConvertRnn(NodeContext& c) { return Recurrence(c, CellKind::kRnn).Convert(); }
absl::StatusOr<std::vector<Value>> ConvertGru(NodeContext& c) { return Recurrence(c, CellKind::kGru).Convert(); }
absl::StatusOr<std::vector<Value>> ConvertLstm(NodeContext& c) { return Recurrence(c, CellKind::kLstm).Convert(); }

}  // namespace

void RegisterRecurrentConverters(ConverterRegistry& r) {
  r.Register("RNN", ConvertRnn, 7);
  r.Register("GRU", ConvertGru, 7);
  r.Register("LSTM", ConvertLstm, 7);
}

}  // namespace kiln::frontends::onnx
