// The attributes of a rotary_embedding call (relax/op/positional.cc) as its legalizations
// read them: the standard kernel (legalize_positional.cc) and numerics = "ggml"
// (legalize_ggml_numerics.cc).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "tir/buffer.h"

namespace kiln::relax::op {

struct RotaryParams {
  int64_t dims = 0;       // rotary_dims (default: the head dim)
  double theta = 10000;   // the base
  bool neox = false;      // mode "neox": dim m pairs with m + dims / 2
};

// From the call's attributes and x (n, heads, head_dim): an error naming the operator when
// the head dim is not a constant.
absl::StatusOr<RotaryParams> RotaryParamsOf(const CallNode& call, const tir::Buffer& x);

}  // namespace kiln::relax::op
