// The quantized block formats of the dequantize operator (relax/op/quantize.cc states the
// layouts), shared by its inference and its legalization.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "relax/expr.h"

namespace kiln::relax::op {

// Every format's block holds 32 weights.
inline constexpr int kQuantBlockWeights = 32;

struct QuantFormat {
  std::string name;     // "q4_0", "q8_0"
  int block_bytes = 0;  // 18, 34
};

// The call's `format` attribute; an error naming the operator when it is absent or unknown.
absl::StatusOr<QuantFormat> QuantFormatAttr(const CallNode& call);

}  // namespace kiln::relax::op
