// quantized_matmul with activations="q8": llama.cpp's CPU arithmetic (ggml-cpu, the same
// floats as builtins/q8_block_dot.h and the kiln.cpu.quantized_matmul_* kernels), generated
// from TIR so that every target, GPUs included, computes it (docs/llm.md "Numerics").
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/op/quantize.h"
#include "relax/op_registry.h"

namespace kiln::relax::op {

// The call's `activations` attribute: true for "q8", false for "float32" (the default) or
// absent; an error naming the operator for anything else.
absl::StatusOr<bool> QuantizedMatmulQ8Activations(const CallNode& call);

// Whether the generated kernel computes activations="q8" for weights of `format`: q4_0,
// q4_1 and q8_0 (the Q5 and K-quant formats have CPU library kernels only, builtins/
// kquant_matmul_kernels.h).
bool QuantizedMatmulQ8Generated(const std::string& format);

// The kernel for `call` (a normalized quantized_matmul whose activations are "q8"); an error
// naming the format where QuantizedMatmulQ8Generated is false.
absl::StatusOr<Expr> LegalizeQuantizedMatmulQ8(LegalizeContext& context, const CallNode& call,
                                               const QuantFormat& format);

}  // namespace kiln::relax::op
