// quantized_matmul with activations="q8": llama.cpp's CPU arithmetic (ggml-cpu, the same
// floats as builtins/q8_block_dot.h and the kiln.cpu.quantized_matmul_* kernels), generated
// from TIR so that every target, GPUs included, computes it (docs/llm.md "Numerics").
#pragma once

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/op/quantize.h"
#include "relax/op_registry.h"

namespace kiln::relax::op {

// The call's `activations` attribute: true for "q8", false for "float32" (the default) or
// absent; an error naming the operator for anything else.
absl::StatusOr<bool> QuantizedMatmulQ8Activations(const CallNode& call);

// The kernel for `call` (a normalized quantized_matmul whose activations are "q8").
absl::StatusOr<Expr> LegalizeQuantizedMatmulQ8(LegalizeContext& context, const CallNode& call,
                                               const QuantFormat& format);

}  // namespace kiln::relax::op
