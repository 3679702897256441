// rotary_embedding (semantics in relax/op/positional.cc), written from the definition: for
// each row's position p and pair m, the angle p * theta^(-2m / rotary_dims) in float64,
// rounded to float32 as the operator states, then the rotation in float64.
#include <cmath>
#include <string>
#include <variant>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<RefValue> RotaryEmbedding(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "x"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* positions, call.Tensor(1, "positions"));
  if (x->ndim() != 3 || positions->ndim() != 1 || positions->shape()[0] != x->shape()[0]) {
    return call.Error("x must be (n, heads, head_dim) and positions (n,)");
  }
  KILN_ASSIGN_OR_RETURN(auto theta_attr, call.FloatAttr("theta"));
  KILN_ASSIGN_OR_RETURN(auto dims_attr, call.IntAttr("rotary_dims"));
  auto mode = call.call.attrs.find("mode");
  const bool neox = mode != call.call.attrs.end() && std::get<std::string>(mode->second) == "neox";
  const double theta = theta_attr.value_or(10000.0);
  const int64_t n = x->shape()[0], heads = x->shape()[1], d = x->shape()[2];
  const int64_t dims = dims_attr.value_or(d);
  HostTensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < n; ++i) {
    const double p = positions->GetDouble(i);
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t base = (i * heads + h) * d;
      for (int64_t j = 0; j < d; ++j) out.SetDouble(base + j, x->GetDouble(base + j));
      for (int64_t m = 0; m < dims / 2; ++m) {
        const int64_t a = neox ? m : 2 * m;
        const int64_t b = neox ? m + dims / 2 : 2 * m + 1;
        const float angle = static_cast<float>(p * std::pow(theta, -2.0 * static_cast<double>(m) / static_cast<double>(dims)));
        const double c = std::cos(static_cast<double>(angle)), s = std::sin(static_cast<double>(angle));
        const double xa = x->GetDouble(base + a), xb = x->GetDouble(base + b);
        out.SetDouble(base + a, xa * c - xb * s);
        out.SetDouble(base + b, xa * s + xb * c);
      }
    }
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddPositionalKernels(KernelTable& table) { table["rotary_embedding"] = RotaryEmbedding; }

}  // namespace kiln::reference
