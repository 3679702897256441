// Channel normalizations (channel axis 1): batch_norm (given statistics), group_norm and
// instance_norm (per (sample, group) mean and biased variance, two passes in double, per
// channel scale and bias), lrn (ONNX LRN: the sum of squares over a channel window, then
// x / pow(bias + alpha / size * sum, beta)). Written from the formulas in
// relax/op/normalization.cc, one output element at a time.
#include <cmath>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<const HostTensor*> ChannelData(const KernelCall& call, int min_ndim) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (!x->dtype().is_floating()) return call.Error("data must be floating point, got ", x->dtype().ToString());
  if (x->ndim() < min_ndim) return call.Error("data must have at least ", min_ndim, " dimensions");
  return x;
}

// Argument i as a per-channel parameter of x.
absl::StatusOr<const HostTensor*> ChannelParam(const KernelCall& call, const HostTensor& x, size_t i,
                                               const char* what) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* p, call.Tensor(i, what));
  if (p->shape() != std::vector<int64_t>{x.shape()[1]} || p->dtype() != x.dtype()) {
    return call.Error(what, " ", p->TypeString(), " is not one value per channel of ", x.TypeString());
  }
  return p;
}

absl::StatusOr<RefValue> BatchNorm(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, ChannelData(call, 2));
  std::vector<const HostTensor*> params;
  const char* names[] = {"scale", "bias", "mean", "var"};
  for (size_t k = 0; k < 4; ++k) {
    KILN_ASSIGN_OR_RETURN(const HostTensor* p, ChannelParam(call, *x, k + 1, names[k]));
    params.push_back(p);
  }
  KILN_ASSIGN_OR_RETURN(auto eps, call.FloatAttr("epsilon"));
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < x->numel(); ++i) {
    const int64_t c = Unravel(i, x->shape())[1];
    const double mean = params[2]->GetDouble(c);
    const double var = params[3]->GetDouble(c);
    out.SetDouble(i, (x->GetDouble(i) - mean) / std::sqrt(var + eps.value_or(1e-5)) * params[0]->GetDouble(c) +
                         params[1]->GetDouble(c));
  }
  return RefValue(std::move(out));
}

// group_norm with `groups` groups; instance_norm passes groups = C.
absl::StatusOr<RefValue> NormalizeGroups(const KernelCall& call, const HostTensor& x, int64_t groups) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* scale, ChannelParam(call, x, 1, "scale"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* bias, ChannelParam(call, x, 2, "bias"));
  KILN_ASSIGN_OR_RETURN(auto eps, call.FloatAttr("epsilon"));
  const int64_t n = x.shape()[0], c = x.shape()[1];
  if (groups <= 0 || c % groups != 0) return call.Error(c, " channels do not split into ", groups, " groups");
  HostTensor out(x.dtype(), x.shape());
  if (x.numel() == 0) return RefValue(std::move(out));
  // Elements per (sample, group) are contiguous in row-major N C D... layout.
  const int64_t group_size = x.numel() / n / groups;
  for (int64_t start = 0; start < x.numel(); start += group_size) {
    double mean = 0;
    for (int64_t i = start; i < start + group_size; ++i) mean += x.GetDouble(i);
    mean /= static_cast<double>(group_size);
    double var = 0;
    for (int64_t i = start; i < start + group_size; ++i) var += (x.GetDouble(i) - mean) * (x.GetDouble(i) - mean);
    var /= static_cast<double>(group_size);
    for (int64_t i = start; i < start + group_size; ++i) {
      const int64_t ch = Unravel(i, x.shape())[1];
      out.SetDouble(i, (x.GetDouble(i) - mean) / std::sqrt(var + eps.value_or(1e-5)) * scale->GetDouble(ch) +
                           bias->GetDouble(ch));
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> GroupNorm(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, ChannelData(call, 2));
  KILN_ASSIGN_OR_RETURN(auto groups, call.IntAttr("num_groups"));
  if (!groups) return call.Error("attribute num_groups is required");
  return NormalizeGroups(call, *x, *groups);
}

absl::StatusOr<RefValue> InstanceNorm(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, ChannelData(call, 3));
  return NormalizeGroups(call, *x, x->shape()[1]);
}

absl::StatusOr<RefValue> Lrn(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, ChannelData(call, 2));
  KILN_ASSIGN_OR_RETURN(auto size, call.IntAttr("size"));
  if (!size || *size <= 0) return call.Error("attribute size must be a positive integer");
  KILN_ASSIGN_OR_RETURN(auto alpha, call.FloatAttr("alpha"));
  KILN_ASSIGN_OR_RETURN(auto beta, call.FloatAttr("beta"));
  KILN_ASSIGN_OR_RETURN(auto bias, call.FloatAttr("bias"));
  const int64_t c = x->shape()[1];
  const int64_t lo = (*size - 1) / 2;       // channels before
  const int64_t hi = *size - 1 - lo;        // channels after (ceil((size - 1) / 2))
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < x->numel(); ++i) {
    std::vector<int64_t> index = Unravel(i, x->shape());
    const int64_t ch = index[1];
    double sum = 0;
    for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
      index[1] = k;
      const double v = x->GetDouble(Ravel(index, x->shape()));
      sum += v * v;
    }
    const double base = bias.value_or(1.0) + alpha.value_or(1e-4) / static_cast<double>(*size) * sum;
    out.SetDouble(i, x->GetDouble(i) / std::pow(base, beta.value_or(0.75)));
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddNormalizationKernels(KernelTable& t) {
  t["batch_norm"] = BatchNorm;
  t["group_norm"] = GroupNorm;
  t["instance_norm"] = InstanceNorm;
  t["lrn"] = Lrn;
}

}  // namespace kiln::reference
