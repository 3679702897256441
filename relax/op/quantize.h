// The quantized block formats of the dequantize operator (relax/op/quantize.cc states the
// layouts), shared by its inference and its legalization.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "relax/expr.h"

namespace kiln::relax::op {

// The legacy formats' blocks hold 32 weights, the K-quants' super-blocks 256.
inline constexpr int kQuantBlockWeights = 32;

struct QuantFormat {
  std::string name;                        // "q4_0", "q8_0", "q6_K"
  int block_bytes = 0;                     // 18, 34, 210
  int block_weights = kQuantBlockWeights;  // 32, 32, 256
};

// The names QuantFormatAttr accepts, for messages: "\"q4_0\", ..., \"q6_K\"".
const char* QuantFormatNames();

// The call's `format` attribute; an error naming the operator when it is absent or unknown.
absl::StatusOr<QuantFormat> QuantFormatAttr(const CallNode& call);

}  // namespace kiln::relax::op
