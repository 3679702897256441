// Reductions, normalizations and casts: sum mean max min prod, variance (two-pass, np.var's
// ddof = correction), argmax argmin (ties: the first
// index; the first NaN wins over everything, as np.argmax), softmax, log_softmax, layer_norm
// (biased variance), rms_norm, astype. max/min propagate NaN (np.max). max/min/argmax/argmin over
// an empty extent are errors (no identity value); sum of nothing is 0, mean of nothing NaN.
#include <algorithm>
#include <cmath>
#include <limits>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

// The input elements feeding each output element of a reduction over `axes`, in row-major
// order of the input.
struct Groups {
  std::vector<int64_t> out_shape;
  std::vector<std::vector<int64_t>> members;
};

Groups GroupBy(const std::vector<int64_t>& shape, const std::vector<int>& axes, bool keepdims) {
  auto reduced = [&](size_t k) { return std::find(axes.begin(), axes.end(), static_cast<int>(k)) != axes.end(); };
  Groups g;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (!reduced(k)) {
      g.out_shape.push_back(shape[k]);
    } else if (keepdims) {
      g.out_shape.push_back(1);
    }
  }
  g.members.resize(static_cast<size_t>(NumElements(g.out_shape)));
  const int64_t n = NumElements(shape);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> index = Unravel(i, shape), out_index;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (!reduced(k)) {
        out_index.push_back(index[k]);
      } else if (keepdims) {
        out_index.push_back(0);
      }
    }
    g.members[static_cast<size_t>(Ravel(out_index, g.out_shape))].push_back(i);
  }
  return g;
}

enum class Red { kSum, kMean, kMax, kMin, kProd };

template <Red kRed>
absl::StatusOr<RefValue> Reduce(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, call.IntsAttr("axis"));
  KILN_ASSIGN_OR_RETURN(auto keepdims, call.BoolAttr("keepdims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axis, x->ndim()));
  if (kRed == Red::kMean && !x->dtype().is_floating()) {
    return call.Error("requires a floating-point tensor, got ", x->dtype().ToString());
  }
  Groups g = GroupBy(x->shape(), axes, keepdims.value_or(false));
  HostTensor out(x->dtype(), g.out_shape);
  for (size_t o = 0; o < g.members.size(); ++o) {
    const std::vector<int64_t>& m = g.members[o];
    const auto oi = static_cast<int64_t>(o);
    if ((kRed == Red::kMax || kRed == Red::kMin) && m.empty()) {
      return call.Error("reduction over an empty extent");
    }
    if (ComputesInInt(x->dtype())) {
      const bool from_identity = kRed == Red::kSum || kRed == Red::kProd;
      int64_t acc = kRed == Red::kSum ? 0 : kRed == Red::kProd ? 1 : x->GetInt(m.empty() ? 0 : m[0]);
      for (size_t j = from_identity ? 0 : 1; j < m.size(); ++j) {
        int64_t v = x->GetInt(m[j]);
        // Wrapping arithmetic, as the integer types of the generated code.
        acc = kRed == Red::kSum    ? static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v))
              : kRed == Red::kProd ? static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v))
              : kRed == Red::kMax ? std::max(acc, v)
                                  : std::min(acc, v);
      }
      out.SetInt(oi, acc);
    } else {
      double acc = kRed == Red::kSum || kRed == Red::kMean ? 0.0 : kRed == Red::kProd ? 1.0 : x->GetDouble(m[0]);
      for (int64_t i : m) {
        double v = x->GetDouble(i);
        if (kRed == Red::kSum || kRed == Red::kMean) {
          acc += v;
        } else if (kRed == Red::kProd) {
          acc *= v;
        } else {
          acc = kRed == Red::kMax ? NanMax(acc, v) : NanMin(acc, v);
        }
      }
      if (kRed == Red::kMean) acc /= static_cast<double>(m.size());
      out.SetDouble(oi, acc);
    }
  }
  return RefValue(std::move(out));
}

template <bool kMax>
absl::StatusOr<RefValue> ArgReduce(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(auto keepdims, call.BoolAttr("keepdims"));
  std::vector<int> axes;
  if (axis) {
    KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, *axis, x->ndim()));
    axes.push_back(a);
  } else {
    for (int k = 0; k < x->ndim(); ++k) axes.push_back(k);
  }
  Groups g = GroupBy(x->shape(), axes, keepdims.value_or(false));
  HostTensor out(DataType::Int64(), g.out_shape);
  for (size_t o = 0; o < g.members.size(); ++o) {
    const std::vector<int64_t>& m = g.members[o];
    if (m.empty()) return call.Error("reduction over an empty extent");
    size_t best = 0;
    for (size_t j = 1; j < m.size(); ++j) {
      bool better = false;
      if (ComputesInInt(x->dtype())) {
        better = kMax ? x->GetInt(m[j]) > x->GetInt(m[best]) : x->GetInt(m[j]) < x->GetInt(m[best]);
      } else {
        const double v = x->GetDouble(m[j]);
        const double b = x->GetDouble(m[best]);
        if (std::isnan(b)) break;  // the first NaN is the answer (np.argmax)
        better = std::isnan(v) || (kMax ? v > b : v < b);
      }
      if (better) best = j;
    }
    // Members are in row-major order, so the position within the group is the index along
    // the reduced axis (or the flat index when reducing everything).
    out.SetInt(static_cast<int64_t>(o), static_cast<int64_t>(best));
  }
  return RefValue(std::move(out));
}

absl::StatusOr<const HostTensor*> FloatTensor(const KernelCall& call, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(i, what));
  if (!x->dtype().is_floating()) {
    return call.Error(what, " must be floating point, got ", x->dtype().ToString());
  }
  return x;
}

absl::StatusOr<RefValue> Softmax(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, FloatTensor(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, axis.value_or(-1), x->ndim()));
  Groups g = GroupBy(x->shape(), {a}, true);
  HostTensor out(x->dtype(), x->shape());
  for (const std::vector<int64_t>& m : g.members) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t i : m) mx = NanMax(mx, x->GetDouble(i));
    double sum = 0;
    for (int64_t i : m) sum += std::exp(x->GetDouble(i) - mx);
    for (int64_t i : m) out.SetDouble(i, std::exp(x->GetDouble(i) - mx) / sum);
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> LogSoftmax(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, FloatTensor(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, axis.value_or(-1), x->ndim()));
  HostTensor out(x->dtype(), x->shape());
  for (const std::vector<int64_t>& m : GroupBy(x->shape(), {a}, true).members) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t i : m) mx = NanMax(mx, x->GetDouble(i));
    double sum = 0;
    for (int64_t i : m) sum += std::exp(x->GetDouble(i) - mx);
    const double log_sum = std::log(sum);
    for (int64_t i : m) out.SetDouble(i, x->GetDouble(i) - mx - log_sum);
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Variance(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, FloatTensor(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis, call.IntsAttr("axis"));
  KILN_ASSIGN_OR_RETURN(auto keepdims, call.BoolAttr("keepdims"));
  KILN_ASSIGN_OR_RETURN(auto correction, call.IntAttr("correction"));
  if (correction.value_or(0) < 0) return call.Error("correction must be non-negative");
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(call, axis, x->ndim()));
  Groups g = GroupBy(x->shape(), axes, keepdims.value_or(false));
  HostTensor out(x->dtype(), g.out_shape);
  for (size_t o = 0; o < g.members.size(); ++o) {
    const std::vector<int64_t>& m = g.members[o];
    double mean = 0;
    for (int64_t i : m) mean += x->GetDouble(i);
    mean /= static_cast<double>(m.size());
    double sq = 0;
    for (int64_t i : m) sq += (x->GetDouble(i) - mean) * (x->GetDouble(i) - mean);
    out.SetDouble(static_cast<int64_t>(o),
                  sq / static_cast<double>(std::max<int64_t>(static_cast<int64_t>(m.size()) - correction.value_or(0), 0)));
  }
  return RefValue(std::move(out));
}

// Shared by layer_norm and rms_norm: the normalized axes and, for each input element, the
// index into the per-feature parameters (whose shape is the normalized dims in axes order).
struct NormSetup {
  std::vector<int> axes;
  std::vector<int64_t> param_shape;
  double epsilon;
};

absl::StatusOr<NormSetup> SetupNorm(const KernelCall& call, const HostTensor& x,
                                    const std::vector<const HostTensor*>& params) {
  NormSetup s;
  KILN_ASSIGN_OR_RETURN(auto axes, call.IntsAttr("axes"));
  KILN_ASSIGN_OR_RETURN(auto eps, call.FloatAttr("epsilon"));
  KILN_ASSIGN_OR_RETURN(s.axes, NormalizeAxes(call, axes.value_or(std::vector<int64_t>{-1}), x.ndim()));
  s.epsilon = eps.value_or(1e-5);
  for (int a : s.axes) s.param_shape.push_back(x.shape()[static_cast<size_t>(a)]);
  for (const HostTensor* p : params) {
    if (p->shape() != s.param_shape || p->dtype() != x.dtype()) {
      return call.Error("parameter ", p->TypeString(), " does not match the normalized dims ",
                        ShapeString(s.param_shape), " of ", x.TypeString());
    }
  }
  return s;
}

int64_t ParamIndex(const NormSetup& s, const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index = Unravel(flat, shape), p;
  for (int a : s.axes) p.push_back(index[static_cast<size_t>(a)]);
  return Ravel(p, s.param_shape);
}

absl::StatusOr<RefValue> LayerNorm(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, FloatTensor(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* gamma, call.Tensor(1, "gamma"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* beta, call.Tensor(2, "beta"));
  KILN_ASSIGN_OR_RETURN(NormSetup s, SetupNorm(call, *x, {gamma, beta}));
  HostTensor out(x->dtype(), x->shape());
  for (const std::vector<int64_t>& m : GroupBy(x->shape(), s.axes, true).members) {
    double mean = 0, var = 0;
    for (int64_t i : m) mean += x->GetDouble(i);
    mean /= static_cast<double>(m.size());
    for (int64_t i : m) var += (x->GetDouble(i) - mean) * (x->GetDouble(i) - mean);
    var /= static_cast<double>(m.size());
    for (int64_t i : m) {
      int64_t p = ParamIndex(s, x->shape(), i);
      out.SetDouble(i, (x->GetDouble(i) - mean) / std::sqrt(var + s.epsilon) * gamma->GetDouble(p) +
                           beta->GetDouble(p));
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> RmsNorm(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, FloatTensor(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* weight, call.Tensor(1, "weight"));
  KILN_ASSIGN_OR_RETURN(NormSetup s, SetupNorm(call, *x, {weight}));
  HostTensor out(x->dtype(), x->shape());
  for (const std::vector<int64_t>& m : GroupBy(x->shape(), s.axes, true).members) {
    double sq = 0;
    for (int64_t i : m) sq += x->GetDouble(i) * x->GetDouble(i);
    double scale = 1.0 / std::sqrt(sq / static_cast<double>(m.size()) + s.epsilon);
    for (int64_t i : m) {
      out.SetDouble(i, x->GetDouble(i) * scale * weight->GetDouble(ParamIndex(s, x->shape(), i)));
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> AsType(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  if (!dtype) return call.Error("attribute dtype is required");
  KILN_RETURN_IF_ERROR(call.CheckDType(*dtype, "dtype"));
  HostTensor out(*dtype, x->shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (ComputesInInt(x->dtype())) {
      out.SetInt(i, x->GetInt(i));
    } else {
      out.SetDouble(i, x->GetDouble(i));
    }
  }
  return RefValue(std::move(out));
}

// The element bytes kept, read as the new dtype (a byte of a bool is 0 or 1; any other byte
// read as bool is true).
absl::StatusOr<RefValue> Bitcast(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  if (!dtype) return call.Error("attribute dtype is required");
  KILN_RETURN_IF_ERROR(call.CheckDType(*dtype, "dtype"));
  std::vector<uint8_t> bytes = x->bytes();
  if (dtype->is_bool()) {
    for (uint8_t& b : bytes) b = b != 0;
  }
  if (bytes.size() != static_cast<size_t>(x->numel()) * dtype->bytes()) return call.Error("dtype widths differ");
  return RefValue(HostTensor::FromBytes(*dtype, x->shape(), std::move(bytes)));
}

}  // namespace

void AddReduceKernels(KernelTable& t) {
  t["sum"] = Reduce<Red::kSum>;
  t["mean"] = Reduce<Red::kMean>;
  t["max"] = Reduce<Red::kMax>;
  t["min"] = Reduce<Red::kMin>;
  t["argmax"] = ArgReduce<true>;
  t["argmin"] = ArgReduce<false>;
  t["prod"] = Reduce<Red::kProd>;
  t["variance"] = Variance;
  t["softmax"] = Softmax;
  t["log_softmax"] = LogSoftmax;
  t["layer_norm"] = LayerNorm;
  t["rms_norm"] = RmsNorm;
  t["astype"] = AsType;
  t["bitcast"] = Bitcast;
}

}  // namespace kiln::reference
