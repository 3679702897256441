// Window kernels, channels first with 1-3 spatial dims (the digit in the op name): conv1d/2d/3d
// (data N C D..., weight O I K...; strides, padding, dilation, groups), conv1d/2d/3d_transpose
// (weight C O/groups K...: every input element scatters data * weight into the outputs it
// reaches), max_pool1d/2d/3d (padding reads as -inf, so it never wins; a NaN in the window
// gives NaN) and avg_pool1d/2d/3d (sum of the taps inside the input over their count, or the
// count of taps inside the padded input with count_include_pad). conv's zero padding takes
// part in the products (0 * inf is NaN). Padding is 1 value (all sides), `rank` values
// (both sides of each dim) or 2 * rank (begins, then ends); strides, dilation, pool_size and
// output_padding 1 or `rank` values. With ceil_mode a pool's output count rounds up, but
// each window must start inside the input or its begin padding.
#include <limits>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

int RankOf(const std::string& op) {
  for (char c : op) {
    if (c >= '1' && c <= '3') return c - '0';
  }
  return 0;
}

struct Window {
  int rank = 0;
  std::vector<int64_t> kernel, stride, dil, begin, end, out_padding;
  bool ceil_mode = false;
  bool count_include_pad = false;
};

absl::StatusOr<std::vector<int64_t>> PerDim(const KernelCall& call, const std::string& name, int rank,
                                            std::vector<int64_t> fallback, int64_t min_value) {
  KILN_ASSIGN_OR_RETURN(auto v, call.IntsAttr(name));
  std::vector<int64_t> r = v && !v->empty() ? *v : fallback;
  if (r.size() == 1) r.assign(static_cast<size_t>(rank), r[0]);
  if (r.size() != static_cast<size_t>(rank)) return call.Error("attribute ", name, " must have 1 or ", rank, " values");
  for (int64_t x : r) {
    // Bounds the window arithmetic far from overflow.
    if (x < min_value || x > (int64_t{1} << 24)) return call.Error("attribute ", name, " value ", x, " out of range");
  }
  return r;
}

// `kernel` is the weight's spatial dims for convolutions, empty for pools (pool_size).
absl::StatusOr<Window> ReadWindow(const KernelCall& call, int rank, std::vector<int64_t> kernel) {
  Window w;
  w.rank = rank;
  const bool pool = kernel.empty();
  if (pool) {
    KILN_ASSIGN_OR_RETURN(auto pool_attr, call.IntsAttr("pool_size"));
    if (!pool_attr) return call.Error("attribute pool_size is required");
    KILN_ASSIGN_OR_RETURN(kernel, PerDim(call, "pool_size", rank, {}, 1));
  }
  w.kernel = kernel;
  KILN_ASSIGN_OR_RETURN(w.stride, PerDim(call, "strides", rank, pool ? kernel : std::vector<int64_t>{1}, 1));
  KILN_ASSIGN_OR_RETURN(w.dil, PerDim(call, "dilation", rank, {1}, 1));
  KILN_ASSIGN_OR_RETURN(w.out_padding, PerDim(call, "output_padding", rank, {0}, 0));
  KILN_ASSIGN_OR_RETURN(auto padding_attr, call.IntsAttr("padding"));
  std::vector<int64_t> p = padding_attr.value_or(std::vector<int64_t>{0});
  const auto r = static_cast<size_t>(rank);
  if (p.size() == 1) p.assign(r, p[0]);
  if (p.size() == r) p.insert(p.end(), p.begin(), p.end());
  if (p.size() != 2 * r) return call.Error("attribute padding must have 1, ", rank, " or ", 2 * rank, " values");
  for (int64_t x : p) {
    if (x < 0 || x > (int64_t{1} << 24)) return call.Error("padding value ", x, " out of range");
  }
  w.begin.assign(p.begin(), p.begin() + rank);
  w.end.assign(p.begin() + rank, p.end());
  KILN_ASSIGN_OR_RETURN(auto ceil_mode, call.BoolAttr("ceil_mode"));
  KILN_ASSIGN_OR_RETURN(auto include, call.BoolAttr("count_include_pad"));
  w.ceil_mode = ceil_mode.value_or(false);
  w.count_include_pad = include.value_or(false);
  return w;
}

// Output extent of a (pooling) window along one dim.
absl::StatusOr<int64_t> OutExtent(const KernelCall& call, const Window& w, size_t d, int64_t in) {
  const int64_t span = in + w.begin[d] + w.end[d] - w.dil[d] * (w.kernel[d] - 1) - 1;
  if (span < 0) return call.Error("the window is larger than the padded input");
  int64_t out = span / w.stride[d] + 1;
  if (w.ceil_mode) {
    out = (span + w.stride[d] - 1) / w.stride[d] + 1;
    // The last window must start inside the input or the begin padding.
    while (out > 1 && (out - 1) * w.stride[d] >= in + w.begin[d]) --out;
  }
  return out;
}

// Calls f(index) for every index of `shape`, row-major.
template <typename F>
void ForEachIndex(const std::vector<int64_t>& shape, F f) {
  const int64_t n = NumElements(shape);
  for (int64_t i = 0; i < n; ++i) f(Unravel(i, shape));
}

absl::StatusOr<RefValue> Conv(const KernelCall& call) {
  const int rank = RankOf(call.op);
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* wt, call.Tensor(1, "weight"));
  if (x->ndim() != rank + 2 || wt->ndim() != rank + 2) return call.Error("data and weight must be ", rank + 2, "-D");
  if (x->dtype() != wt->dtype()) {
    return call.Error("data is ", x->dtype().ToString(), " but weight is ", wt->dtype().ToString());
  }
  KILN_ASSIGN_OR_RETURN(auto groups_attr, call.IntAttr("groups"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, call.DTypeAttr("out_dtype"));
  if (out_dtype) KILN_RETURN_IF_ERROR(call.CheckDType(*out_dtype, "out_dtype"));
  const int64_t groups = groups_attr.value_or(1);
  const auto& xs = x->shape();
  const auto& ws = wt->shape();
  const int64_t c = xs[1], o = ws[0], ci = ws[1];
  if (groups < 1 || c != ci * groups || o % groups != 0) {
    return call.Error("channels ", c, " and weight ", ShapeString(ws), " do not fit groups=", groups);
  }
  KILN_ASSIGN_OR_RETURN(Window win, ReadWindow(call, rank, std::vector<int64_t>(ws.begin() + 2, ws.end())));
  std::vector<int64_t> out_shape = {xs[0], o};
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    KILN_ASSIGN_OR_RETURN(int64_t e, OutExtent(call, win, d, xs[d + 2]));
    out_shape.push_back(e);
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(out_shape));
  HostTensor out(out_dtype.value_or(x->dtype()), out_shape);
  const bool in_int = ComputesInInt(x->dtype());
  const int64_t o_per_group = o / groups;
  // The weight's index space minus the output channel: (input channel of the group, taps).
  std::vector<int64_t> taps(ws.begin() + 1, ws.end());
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> oi = Unravel(i, out_shape);
    const int64_t g = oi[1] / o_per_group;
    double acc = 0;
    int64_t iacc = 0;
    ForEachIndex(taps, [&](const std::vector<int64_t>& t) {
      std::vector<int64_t> xi = {oi[0], g * ci + t[0]};
      bool inside = true;
      for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        const int64_t pos = oi[d + 2] * win.stride[d] - win.begin[d] + t[d + 1] * win.dil[d];
        inside = inside && pos >= 0 && pos < xs[d + 2];
        xi.push_back(pos);
      }
      std::vector<int64_t> wi = {oi[1]};
      wi.insert(wi.end(), t.begin(), t.end());
      const int64_t w_flat = Ravel(wi, ws);
      if (!inside) {
        // Zero padding is multiplied like data (0 * inf is NaN, as np.pad + multiply).
        if (!in_int) acc += 0.0 * wt->GetDouble(w_flat);
        return;
      }
      const int64_t x_flat = Ravel(xi, xs);
      if (in_int) {
        iacc += x->GetInt(x_flat) * wt->GetInt(w_flat);
      } else {
        acc += x->GetDouble(x_flat) * wt->GetDouble(w_flat);
      }
    });
    if (in_int) {
      out.SetInt(i, iacc);
    } else {
      out.SetDouble(i, acc);
    }
  }
  return RefValue(std::move(out));
}

// Scatters every (input element, tap) pair into the output position it reaches.
absl::StatusOr<RefValue> ConvTranspose(const KernelCall& call) {
  const int rank = RankOf(call.op);
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* wt, call.Tensor(1, "weight"));
  if (x->ndim() != rank + 2 || wt->ndim() != rank + 2) return call.Error("data and weight must be ", rank + 2, "-D");
  if (x->dtype() != wt->dtype()) return call.Error("data and weight dtypes differ");
  if (!x->dtype().is_floating()) return call.Error("only floating-point data is supported");
  KILN_ASSIGN_OR_RETURN(auto groups_attr, call.IntAttr("groups"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, call.DTypeAttr("out_dtype"));
  if (out_dtype) KILN_RETURN_IF_ERROR(call.CheckDType(*out_dtype, "out_dtype"));
  const int64_t groups = groups_attr.value_or(1);
  const auto& xs = x->shape();
  const auto& ws = wt->shape();
  if (groups < 1 || xs[1] != ws[0] || xs[1] % groups != 0) {
    return call.Error("channels ", xs[1], " and weight ", ShapeString(ws), " do not fit groups=", groups);
  }
  KILN_ASSIGN_OR_RETURN(Window win, ReadWindow(call, rank, std::vector<int64_t>(ws.begin() + 2, ws.end())));
  const int64_t o_per_group = ws[1];
  const int64_t c_per_group = xs[1] / groups;
  std::vector<int64_t> out_shape = {xs[0], o_per_group * groups};
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    const int64_t e = (xs[d + 2] - 1) * win.stride[d] - win.begin[d] - win.end[d] + win.dil[d] * (win.kernel[d] - 1) +
                      win.out_padding[d] + 1;
    if (e < 1) return call.Error("the padding leaves no output");
    out_shape.push_back(e);
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(out_shape));
  std::vector<double> acc(static_cast<size_t>(NumElements(out_shape)), 0.0);
  for (int64_t i = 0; i < x->numel(); ++i) {
    const std::vector<int64_t> xi = Unravel(i, xs);
    const int64_t g = xi[1] / c_per_group;
    std::vector<int64_t> taps = {o_per_group};
    taps.insert(taps.end(), ws.begin() + 2, ws.end());
    ForEachIndex(taps, [&](const std::vector<int64_t>& t) {
      std::vector<int64_t> oi = {xi[0], g * o_per_group + t[0]};
      for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        const int64_t pos = xi[d + 2] * win.stride[d] - win.begin[d] + t[d + 1] * win.dil[d];
        if (pos < 0 || pos >= out_shape[d + 2]) return;
        oi.push_back(pos);
      }
      std::vector<int64_t> wi = {xi[1]};
      wi.insert(wi.end(), t.begin(), t.end());
      acc[static_cast<size_t>(Ravel(oi, out_shape))] += x->GetDouble(i) * wt->GetDouble(Ravel(wi, ws));
    });
  }
  HostTensor out(out_dtype.value_or(x->dtype()), out_shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetDouble(i, acc[static_cast<size_t>(i)]);
  return RefValue(std::move(out));
}

template <bool kMax>
absl::StatusOr<RefValue> Pool(const KernelCall& call) {
  const int rank = RankOf(call.op);
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (x->ndim() != rank + 2) return call.Error("data must be ", rank + 2, "-D");
  if (!kMax && !x->dtype().is_floating()) return call.Error("data must be floating point");
  KILN_ASSIGN_OR_RETURN(Window win, ReadWindow(call, rank, {}));
  const auto& xs = x->shape();
  std::vector<int64_t> out_shape = {xs[0], xs[1]};
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    KILN_ASSIGN_OR_RETURN(int64_t e, OutExtent(call, win, d, xs[d + 2]));
    out_shape.push_back(e);
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(out_shape));
  HostTensor out(x->dtype(), out_shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> oi = Unravel(i, out_shape);
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_int = std::numeric_limits<int64_t>::min();
    double sum = 0;
    int64_t count = 0;
    ForEachIndex(win.kernel, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> xi = {oi[0], oi[1]};
      bool inside = true, in_padded = true;
      for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        const int64_t pos = oi[d + 2] * win.stride[d] - win.begin[d] + k[d] * win.dil[d];
        inside = inside && pos >= 0 && pos < xs[d + 2];
        in_padded = in_padded && pos >= -win.begin[d] && pos < xs[d + 2] + win.end[d];
        xi.push_back(pos);
      }
      if (win.count_include_pad ? in_padded : inside) ++count;
      if (!inside) return;
      const int64_t flat = Ravel(xi, xs);
      best = NanMax(best, x->GetDouble(flat));
      best_int = std::max(best_int, x->GetInt(flat));
      sum += x->GetDouble(flat);
    });
    if (!kMax) {
      out.SetDouble(i, sum / static_cast<double>(count));
    } else if (ComputesInInt(x->dtype())) {
      out.SetInt(i, best_int);
    } else {
      out.SetDouble(i, best);
    }
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddNnKernels(KernelTable& t) {
  for (const char* rank : {"1", "2", "3"}) {
    t[absl::StrCat("conv", rank, "d")] = Conv;
    t[absl::StrCat("max_pool", rank, "d")] = Pool<true>;
    t[absl::StrCat("avg_pool", rank, "d")] = Pool<false>;
  }
  t["conv1d_transpose"] = ConvTranspose;
  t["conv2d_transpose"] = ConvTranspose;
  t["conv3d_transpose"] = ConvTranspose;
}

}  // namespace kiln::reference
