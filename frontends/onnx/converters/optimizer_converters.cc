// The optimizers of ai.onnx.preview.training (version 1): one update step of Adagrad, Adam
// and Momentum (standard or Nesterov), each spelled out in elementwise Kiln operators.
//
// Inputs: the learning rate R and the step count T (scalars), then n tensors to optimize,
// their n gradients and their n (or 2n for Adam) accumulated states, grouped by kind
// (X1..Xn, G1..Gn, H1..Hn); outputs: the n new tensors, then the new states by kind. T is
// a run-time value: what depends on whether T > 0 (Adam's bias correction, Momentum's
// first step) is a select. The arithmetic is in X's type, as are the scalars.
#include <string>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// One optimizer node's inputs: R and T in X's type, whether T > 0, and the tensor groups.
struct StepInputs {
  DataType dtype;
  Expr rate, step, step_positive;
  int64_t n = 0;
  NodeContext* c = nullptr;

  // Group `kind`'s i-th tensor (kind 0 is X, 1 G, then the states).
  absl::StatusOr<Expr> Tensor(int64_t kind, int64_t i) const { return c->Input(static_cast<int>(2 + kind * n + i)); }
  Expr Scalar(double v) const { return ScalarConstant(v, dtype); }
  absl::StatusOr<Expr> Mul(Expr a, Expr b) const { return c->Call("multiply", {std::move(a), std::move(b)}); }
  absl::StatusOr<Expr> Add(Expr a, Expr b) const { return c->Call("add", {std::move(a), std::move(b)}); }
  absl::StatusOr<Expr> Sub(Expr a, Expr b) const { return c->Call("subtract", {std::move(a), std::move(b)}); }
  absl::StatusOr<Expr> Div(Expr a, Expr b) const { return c->Call("divide", {std::move(a), std::move(b)}); }

  // norm_coefficient * x + g: the gradient with L2 regularization.
  absl::StatusOr<Expr> Regularized(const Expr& x, const Expr& g, double norm) const {
    if (norm == 0) return g;
    KILN_ASSIGN_OR_RETURN(Expr nx, Mul(Scalar(norm), x));
    return Add(nx, g);
  }
};

// Checks the input count (2 + groups * n) and reads R and T.
absl::StatusOr<StepInputs> ReadStepInputs(NodeContext& c, int64_t groups) {
  const int64_t tensors = c.num_inputs() - 2;
  if (tensors <= 0 || tensors % groups != 0) {
    return c.Error("needs R, T and ", groups, " inputs per optimized tensor, got ", c.num_inputs(), " inputs");
  }
  StepInputs in;
  in.c = &c;
  in.n = tensors / groups;
  if (c.num_outputs() > (groups - 1) * in.n) {
    return c.Error("has ", c.num_outputs(), " outputs, at most ", (groups - 1) * in.n);
  }
  KILN_ASSIGN_OR_RETURN(in.dtype, c.InputDType(2));
  if (!in.dtype.is_float()) return c.Error("the optimized tensors must be float or double");
  for (int i = 0; i < 2; ++i) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(i));
    if (!shape.empty()) return c.Error(i == 0 ? "R" : "T", " must be a scalar");
  }
  KILN_ASSIGN_OR_RETURN(Expr r, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr t, c.Input(1));
  KILN_ASSIGN_OR_RETURN(DataType t_type, c.InputDType(1));
  if (!t_type.is_integer()) return c.Error("T must be an integer");
  KILN_ASSIGN_OR_RETURN(in.step_positive, c.Call("greater", {t, ScalarConstant(0, t_type)}));
  KILN_ASSIGN_OR_RETURN(in.rate, c.Call("astype", {r}, {{"dtype", in.dtype}}));
  KILN_ASSIGN_OR_RETURN(in.step, c.Call("astype", {t}, {{"dtype", in.dtype}}));
  return in;
}

// x - r' g / (sqrt(h + g^2) + epsilon), r' = r / (1 + t decay_factor); h += g^2.
absl::StatusOr<std::vector<Value>> ConvertAdagrad(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(StepInputs in, ReadStepInputs(c, 3));
  const double decay = c.AttrFloat("decay_factor", 0.0), epsilon = c.AttrFloat("epsilon", 1e-6),
               norm = c.AttrFloat("norm_coefficient", 0.0);
  KILN_ASSIGN_OR_RETURN(Expr decay_t, in.Mul(in.step, in.Scalar(decay)));
  KILN_ASSIGN_OR_RETURN(Expr denom, in.Add(in.Scalar(1), decay_t));
  KILN_ASSIGN_OR_RETURN(Expr rate, in.Div(in.rate, denom));
  std::vector<Value> xs, hs;
  for (int64_t i = 0; i < in.n; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, in.Tensor(0, i));
    KILN_ASSIGN_OR_RETURN(Expr g, in.Tensor(1, i));
    KILN_ASSIGN_OR_RETURN(Expr h, in.Tensor(2, i));
    KILN_ASSIGN_OR_RETURN(g, in.Regularized(x, g, norm));
    KILN_ASSIGN_OR_RETURN(Expr g2, in.Mul(g, g));
    KILN_ASSIGN_OR_RETURN(Expr h_new, in.Add(h, g2));
    KILN_ASSIGN_OR_RETURN(Expr root, c.Call("sqrt", {h_new}));
    KILN_ASSIGN_OR_RETURN(root, in.Add(root, in.Scalar(epsilon)));
    KILN_ASSIGN_OR_RETURN(Expr step, in.Mul(rate, g));
    KILN_ASSIGN_OR_RETURN(step, in.Div(step, root));
    KILN_ASSIGN_OR_RETURN(Expr x_new, in.Sub(x, step));
    xs.push_back(Value::Of(x_new));
    hs.push_back(Value::Of(h_new));
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

// v = alpha v + (1 - alpha) g; h = beta h + (1 - beta) g^2; with T > 0 the rate is corrected
// to r sqrt(1 - beta^T) / (1 - alpha^T); x = (1 - norm_coefficient_post)(x - r v / (sqrt(h) + epsilon)).
absl::StatusOr<std::vector<Value>> ConvertAdam(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(StepInputs in, ReadStepInputs(c, 4));
  const double alpha = c.AttrFloat("alpha", 0.9), beta = c.AttrFloat("beta", 0.999),
               epsilon = c.AttrFloat("epsilon", 1e-6), norm = c.AttrFloat("norm_coefficient", 0.0),
               post = c.AttrFloat("norm_coefficient_post", 0.0);
  KILN_ASSIGN_OR_RETURN(Expr alpha_t, c.Call("power", {in.Scalar(alpha), in.step}));
  KILN_ASSIGN_OR_RETURN(Expr beta_t, c.Call("power", {in.Scalar(beta), in.step}));
  KILN_ASSIGN_OR_RETURN(Expr num, in.Sub(in.Scalar(1), beta_t));
  KILN_ASSIGN_OR_RETURN(num, c.Call("sqrt", {num}));
  KILN_ASSIGN_OR_RETURN(Expr den, in.Sub(in.Scalar(1), alpha_t));
  KILN_ASSIGN_OR_RETURN(Expr corrected, in.Mul(in.rate, num));
  KILN_ASSIGN_OR_RETURN(corrected, in.Div(corrected, den));
  KILN_ASSIGN_OR_RETURN(Expr rate, c.Call("where", {in.step_positive, corrected, in.rate}));
  std::vector<Value> xs, vs, hs;
  for (int64_t i = 0; i < in.n; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, in.Tensor(0, i));
    KILN_ASSIGN_OR_RETURN(Expr g, in.Tensor(1, i));
    KILN_ASSIGN_OR_RETURN(Expr v, in.Tensor(2, i));
    KILN_ASSIGN_OR_RETURN(Expr h, in.Tensor(3, i));
    KILN_ASSIGN_OR_RETURN(g, in.Regularized(x, g, norm));
    KILN_ASSIGN_OR_RETURN(Expr av, in.Mul(in.Scalar(alpha), v));
    KILN_ASSIGN_OR_RETURN(Expr ag, in.Mul(in.Scalar(1 - alpha), g));
    KILN_ASSIGN_OR_RETURN(Expr v_new, in.Add(av, ag));
    KILN_ASSIGN_OR_RETURN(Expr g2, in.Mul(g, g));
    KILN_ASSIGN_OR_RETURN(Expr bh, in.Mul(in.Scalar(beta), h));
    KILN_ASSIGN_OR_RETURN(Expr bg, in.Mul(in.Scalar(1 - beta), g2));
    KILN_ASSIGN_OR_RETURN(Expr h_new, in.Add(bh, bg));
    KILN_ASSIGN_OR_RETURN(Expr root, c.Call("sqrt", {h_new}));
    KILN_ASSIGN_OR_RETURN(root, in.Add(root, in.Scalar(epsilon)));
    KILN_ASSIGN_OR_RETURN(Expr step, in.Div(v_new, root));
    KILN_ASSIGN_OR_RETURN(step, in.Mul(rate, step));
    KILN_ASSIGN_OR_RETURN(Expr x_new, in.Sub(x, step));
    if (post != 0) {
      KILN_ASSIGN_OR_RETURN(x_new, in.Mul(in.Scalar(1 - post), x_new));
    }
    xs.push_back(Value::Of(x_new));
    vs.push_back(Value::Of(v_new));
    hs.push_back(Value::Of(h_new));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

// v = alpha v + beta' g (beta' = beta, or 1 on the first step T = 0); standard:
// x -= r v; nesterov: x -= r (g + alpha v).
absl::StatusOr<std::vector<Value>> ConvertMomentum(NodeContext& c) {
  for (const char* name : {"alpha", "beta", "mode", "norm_coefficient"}) {
    if (!c.HasAttr(name)) return c.Error("needs the attribute ", name);
  }
  const std::string mode = c.AttrString("mode", "");
  if (mode != "standard" && mode != "nesterov") return c.Error("mode must be standard or nesterov, got '", mode, "'");
  KILN_ASSIGN_OR_RETURN(StepInputs in, ReadStepInputs(c, 3));
  const double alpha = c.AttrFloat("alpha", 0), beta = c.AttrFloat("beta", 0), norm = c.AttrFloat("norm_coefficient", 0);
  KILN_ASSIGN_OR_RETURN(Expr beta_step, c.Call("where", {in.step_positive, in.Scalar(beta), in.Scalar(1)}));
  std::vector<Value> xs, vs;
  for (int64_t i = 0; i < in.n; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, in.Tensor(0, i));
    KILN_ASSIGN_OR_RETURN(Expr g, in.Tensor(1, i));
    KILN_ASSIGN_OR_RETURN(Expr v, in.Tensor(2, i));
    KILN_ASSIGN_OR_RETURN(g, in.Regularized(x, g, norm));
    KILN_ASSIGN_OR_RETURN(Expr av, in.Mul(in.Scalar(alpha), v));
    KILN_ASSIGN_OR_RETURN(Expr bg, in.Mul(beta_step, g));
    KILN_ASSIGN_OR_RETURN(Expr v_new, in.Add(av, bg));
    Expr direction = v_new;
    if (mode == "nesterov") {
      KILN_ASSIGN_OR_RETURN(Expr av_new, in.Mul(in.Scalar(alpha), v_new));
      KILN_ASSIGN_OR_RETURN(direction, in.Add(g, av_new));
    }
    KILN_ASSIGN_OR_RETURN(Expr step, in.Mul(in.rate, direction));
    KILN_ASSIGN_OR_RETURN(Expr x_new, in.Sub(x, step));
    xs.push_back(Value::Of(x_new));
    vs.push_back(Value::Of(v_new));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

}  // namespace

void RegisterOptimizerConverters(ConverterRegistry& r) {
  const std::string domain = "ai.onnx.preview.training";
  r.Register(QualifiedOpType(domain, "Adagrad"), ConvertAdagrad, 1);
  r.Register(QualifiedOpType(domain, "Adam"), ConvertAdam, 1);
  r.Register(QualifiedOpType(domain, "Momentum"), ConvertMomentum, 1);
}

}  // namespace kiln::frontends::onnx
