// Window kernels, NCHW data and OIHW weights: conv2d (strides, padding, dilation, groups)
// and max_pool2d (padding reads as -inf, so it never wins; a NaN in the window gives NaN).
// conv2d's zero padding takes part in the products (0 * inf is NaN). Padding is 1 value (all sides),
// 2 (height, width) or 4 (top, left, bottom, right); strides and dilation 1 or 2 values.
#include <limits>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

struct Window {
  int64_t kh, kw, stride_h, stride_w, dil_h, dil_w, top, left, bottom, right;
  int64_t out_h, out_w;
};

absl::StatusOr<std::vector<int64_t>> Pair(const KernelCall& call, const std::string& name,
                                          std::vector<int64_t> fallback) {
  KILN_ASSIGN_OR_RETURN(auto v, call.IntsAttr(name));
  std::vector<int64_t> r = v.value_or(fallback);
  if (r.size() == 1) r.push_back(r[0]);
  if (r.size() != 2) return call.Error("attribute ", name, " must have 1 or 2 values");
  return r;
}

absl::StatusOr<Window> MakeWindow(const KernelCall& call, int64_t h, int64_t w, int64_t kh,
                                  int64_t kw, std::vector<int64_t> default_strides) {
  if (kh < 1 || kw < 1) return call.Error("the window must be at least 1x1, got ", kh, "x", kw);
  Window win{};
  win.kh = kh;
  win.kw = kw;
  KILN_ASSIGN_OR_RETURN(auto strides, Pair(call, "strides", default_strides));
  KILN_ASSIGN_OR_RETURN(auto dilation, Pair(call, "dilation", {1}));
  KILN_ASSIGN_OR_RETURN(auto padding_attr, call.IntsAttr("padding"));
  std::vector<int64_t> p = padding_attr.value_or(std::vector<int64_t>{0});
  if (p.size() == 1) p = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) p = {p[0], p[1], p[0], p[1]};
  if (p.size() != 4) return call.Error("attribute padding must have 1, 2 or 4 values");
  win.stride_h = strides[0];
  win.stride_w = strides[1];
  win.dil_h = dilation[0];
  win.dil_w = dilation[1];
  win.top = p[0];
  win.left = p[1];
  win.bottom = p[2];
  win.right = p[3];
  if (win.stride_h < 1 || win.stride_w < 1 || win.dil_h < 1 || win.dil_w < 1) {
    return call.Error("strides and dilation must be positive");
  }
  for (int64_t v : {p[0], p[1], p[2], p[3], win.stride_h, win.stride_w, win.dil_h, win.dil_w}) {
    // Bounds the window arithmetic far from overflow.
    if (v < 0 || v > (int64_t{1} << 24)) return call.Error("padding, strides and dilation must be in [0, 2^24]");
  }
  int64_t eff_h = h + win.top + win.bottom - win.dil_h * (kh - 1) - 1;
  int64_t eff_w = w + win.left + win.right - win.dil_w * (kw - 1) - 1;
  if (eff_h < 0 || eff_w < 0) return call.Error("the window is larger than the padded input");
  win.out_h = eff_h / win.stride_h + 1;
  win.out_w = eff_w / win.stride_w + 1;
  return win;
}

absl::StatusOr<RefValue> Conv2d(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* wt, call.Tensor(1, "weight"));
  if (x->ndim() != 4 || wt->ndim() != 4) return call.Error("data and weight must be 4-D");
  if (x->dtype() != wt->dtype()) {
    return call.Error("data is ", x->dtype().ToString(), " but weight is ", wt->dtype().ToString());
  }
  KILN_ASSIGN_OR_RETURN(auto groups_attr, call.IntAttr("groups"));
  KILN_ASSIGN_OR_RETURN(auto out_dtype, call.DTypeAttr("out_dtype"));
  if (out_dtype) KILN_RETURN_IF_ERROR(call.CheckDType(*out_dtype, "out_dtype"));
  const int64_t groups = groups_attr.value_or(1);
  const auto& xs = x->shape();
  const auto& ws = wt->shape();
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  const int64_t o = ws[0], ci = ws[1];
  if (groups < 1 || c != ci * groups || o % groups != 0) {
    return call.Error("channels ", c, " and weight ", ShapeString(ws), " do not fit groups=", groups);
  }
  KILN_ASSIGN_OR_RETURN(Window win, MakeWindow(call, h, w, ws[2], ws[3], {1}));
  KILN_RETURN_IF_ERROR(call.CheckElementCount({n, o, win.out_h, win.out_w}));
  HostTensor out(out_dtype.value_or(x->dtype()), {n, o, win.out_h, win.out_w});
  const bool in_int = ComputesInInt(x->dtype());
  const int64_t o_per_group = o / groups;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t g = oc / o_per_group;
      for (int64_t oy = 0; oy < win.out_h; ++oy) {
        for (int64_t ox = 0; ox < win.out_w; ++ox) {
          double acc = 0;
          int64_t iacc = 0;
          for (int64_t ic = 0; ic < ci; ++ic) {
            for (int64_t ky = 0; ky < win.kh; ++ky) {
              for (int64_t kx = 0; kx < win.kw; ++kx) {
                int64_t iy = oy * win.stride_h - win.top + ky * win.dil_h;
                int64_t ix = ox * win.stride_w - win.left + kx * win.dil_w;
                int64_t wi = Ravel({oc, ic, ky, kx}, ws);
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
                  // Zero padding is multiplied like data (0 * inf is NaN, as np.pad + multiply).
                  if (!in_int) acc += 0.0 * wt->GetDouble(wi);
                  continue;
                }
                int64_t xi = Ravel({b, g * ci + ic, iy, ix}, xs);
                if (in_int) {
                  iacc += x->GetInt(xi) * wt->GetInt(wi);
                } else {
                  acc += x->GetDouble(xi) * wt->GetDouble(wi);
                }
              }
            }
          }
          int64_t oi = Ravel({b, oc, oy, ox}, out.shape());
          if (in_int) {
            out.SetInt(oi, iacc);
          } else {
            out.SetDouble(oi, acc);
          }
        }
      }
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> MaxPool2d(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  if (x->ndim() != 4) return call.Error("data must be 4-D");
  KILN_ASSIGN_OR_RETURN(auto pool_attr, call.IntsAttr("pool_size"));
  if (!pool_attr) return call.Error("attribute pool_size is required");
  KILN_ASSIGN_OR_RETURN(auto pool, Pair(call, "pool_size", {}));
  const auto& xs = x->shape();
  KILN_ASSIGN_OR_RETURN(Window win, MakeWindow(call, xs[2], xs[3], pool[0], pool[1], pool));
  KILN_RETURN_IF_ERROR(call.CheckElementCount({xs[0], xs[1], win.out_h, win.out_w}));
  HostTensor out(x->dtype(), {xs[0], xs[1], win.out_h, win.out_w});
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> idx = Unravel(i, out.shape());
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_int = std::numeric_limits<int64_t>::min();
    for (int64_t ky = 0; ky < win.kh; ++ky) {
      for (int64_t kx = 0; kx < win.kw; ++kx) {
        int64_t iy = idx[2] * win.stride_h - win.top + ky * win.dil_h;
        int64_t ix = idx[3] * win.stride_w - win.left + kx * win.dil_w;
        if (iy < 0 || iy >= xs[2] || ix < 0 || ix >= xs[3]) continue;
        int64_t xi = Ravel({idx[0], idx[1], iy, ix}, xs);
        best = NanMax(best, x->GetDouble(xi));
        best_int = std::max(best_int, x->GetInt(xi));
      }
    }
    if (ComputesInInt(x->dtype())) {
      out.SetInt(i, best_int);
    } else {
      out.SetDouble(i, best);
    }
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddNnKernels(KernelTable& t) {
  t["conv2d"] = Conv2d;
  t["max_pool2d"] = MaxPool2d;
}

}  // namespace kiln::reference
