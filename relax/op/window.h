// The window attributes of the convolution and pooling operators (relax/op/nn.cc), read and
// checked in one place so that struct-info inference and legalization agree on them.
//
// For an operator over `rank` spatial dims (conv1d: 1, conv2d: 2, ...):
//   strides, dilation   1 value (every dim) or `rank` values; positive. Default 1; a pool's
//                       strides default to its pool_size (as PyTorch).
//   padding             1 value (every side), `rank` values (both sides of each dim) or
//                       2 * rank values: the begins of every dim, then the ends (conv2d's
//                       4 values are top, left, bottom, right); non-negative. Default 0.
//   pool_size           pools only, required: 1 or `rank` positive values.
//   output_padding      transposed convolutions only: 1 or `rank` values, each smaller
//                       than its dim's stride or dilation (as PyTorch). Default 0.
//   ceil_mode           pools only (bool, default false).
//   count_include_pad   avg pools only (bool, default false).
// Every value is at most 2^24, which keeps the window arithmetic far from overflow.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"

namespace kiln::relax::op {

enum class WindowKind { kConv, kConvTranspose, kMaxPool, kAvgPool };

struct WindowAttrs {
  int rank = 0;
  std::vector<int64_t> pool_size;  // pools only
  std::vector<int64_t> strides;
  std::vector<int64_t> dilation;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
  std::vector<int64_t> output_padding;  // all 0 unless a transposed convolution
  bool ceil_mode = false;
  bool count_include_pad = false;
};

absl::StatusOr<WindowAttrs> ReadWindowAttrs(const CallNode& call, int rank, WindowKind kind);

}  // namespace kiln::relax::op
