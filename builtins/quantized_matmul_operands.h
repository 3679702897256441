// The operands of a quantized_matmul library kernel, `(x, w, out)` "ttt" (relax/op/quantize.cc
// has the semantics), checked once for every format's kernels: float32 x (..., k) and out
// (..., n), uint8 w (n, k / block_weights * block_bytes), all compact.
#pragma once

#include <cstdint>
#include <string>

#include "builtins/kernel_tensor_checks.h"
#include "vm/kernel_abi.h"

namespace kiln::builtins {

struct QuantizedMatmulOperands {
  const float* x = nullptr;
  const uint8_t* w = nullptr;
  float* out = nullptr;
  int64_t rows = 0;       // the product of x's leading dims
  int64_t n = 0;          // w's rows, out's last dim
  int64_t k = 0;          // x's last dim
  int64_t row_bytes = 0;  // w's last dim
};

// The kernel's name: kiln.cpu.quantized_matmul_<format>, or _f32x_<format> for the kernels
// with float32 activations.
inline std::string QuantizedMatmulKernelName(const char* format, bool quantized_activations) {
  return std::string(quantized_activations ? "kiln.cpu.quantized_matmul_" : "kiln.cpu.quantized_matmul_f32x_") + format;
}

// Reads the operands of kernel `name`; returns "" or the error message.
inline std::string CheckQuantizedMatmulOperands(const std::string& name, const KilnArg* args, int32_t num_args,
                                                int64_t block_weights, int64_t block_bytes, QuantizedMatmulOperands* o) {
  if (num_args != 3) return name + " takes (x, w, out)";
  const DLTensor* x = args[0].value.tensor;
  const DLTensor* w = args[1].value.tensor;
  const DLTensor* out = args[2].value.tensor;
  const bool types = x->dtype.code == kDLFloat && x->dtype.bits == 32 && out->dtype.code == kDLFloat &&
                     out->dtype.bits == 32 && w->dtype.code == kDLUInt && w->dtype.bits == 8;
  if (!types || x->dtype.lanes != 1 || out->dtype.lanes != 1 || w->dtype.lanes != 1) {
    return name + " needs float32 x and out and uint8 w";
  }
  if (!IsCompactRowMajor(x) || !IsCompactRowMajor(w) || !IsCompactRowMajor(out)) return name + " needs compact tensors";
  if (x->ndim < 1 || w->ndim != 2 || out->ndim != x->ndim) return name + ": wrong ranks";
  o->k = x->shape[x->ndim - 1];
  o->n = w->shape[0];
  o->row_bytes = w->shape[1];
  if (o->k % block_weights != 0 || o->row_bytes != o->k / block_weights * block_bytes || out->shape[out->ndim - 1] != o->n) {
    return name + ": x's last dim " + std::to_string(o->k) + ", w [" + std::to_string(o->n) + ", " +
           std::to_string(o->row_bytes) + "] and out do not match (k must be a multiple of " +
           std::to_string(block_weights) + ")";
  }
  o->rows = 1;
  for (int i = 0; i < x->ndim - 1; ++i) {
    if (x->shape[i] != out->shape[i]) return name + ": x and out differ in their leading dims";
    o->rows *= x->shape[i];
  }
  o->x = reinterpret_cast<const float*>(static_cast<const char*>(x->data) + x->byte_offset);
  o->w = reinterpret_cast<const uint8_t*>(static_cast<const char*>(w->data) + w->byte_offset);
  o->out = reinterpret_cast<float*>(static_cast<char*>(out->data) + out->byte_offset);
  return "";
}

// The operands of kernel `name` for blocks of `block_weights` weights in `block_bytes` bytes;
// false after setting the call's error.
inline bool ReadQuantizedMatmulOperands(const std::string& name, const KilnArg* args, int32_t num_args,
                                        int64_t block_weights, int64_t block_bytes, KilnCallContext* ctx,
                                        QuantizedMatmulOperands* o) {
  const std::string error = CheckQuantizedMatmulOperands(name, args, num_args, block_weights, block_bytes, o);
  if (!error.empty()) ctx->set_error(ctx, error.c_str());
  return error.empty();
}

}  // namespace kiln::builtins
