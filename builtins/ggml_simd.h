// Which build of llama.cpp's CPU backend the kiln.ggml.* and float16-attention builtins
// compute like. llama.cpp compiles its CPU code for the machine it is built on
// (GGML_NATIVE), and its AVX-512 and AVX2 builds sum float16 dot products, softmax and
// exp in different orders (docs/llm.md "Numerics"): a build on an AVX-512 machine takes
// 16-lane vectors and its AVX-512 exp, one on an AVX2-only machine 8-lane vectors and its
// AVX2 exp. Kiln follows the build the host CPU would get, so that its tokens are those of a
// llama.cpp built on the same machine: AVX-512 arithmetic where the CPU has AVX-512F and
// AVX-512DQ (what ggml's AVX-512 code paths require), else AVX2 arithmetic. The environment
// variable KILN_GGML_SIMD=avx2|avx512 overrides the choice (to compare with a llama.cpp built
// for another machine). Either arithmetic runs on any CPU; only its speed depends on the CPU.
#pragma once

#include "absl/status/statusor.h"

namespace kiln::builtins {

enum class GgmlSimd { kAvx2, kAvx512 };

// The arithmetic the builtins use now: SetGgmlSimd's, else KILN_GGML_SIMD's, else the CPU's.
GgmlSimd ActiveGgmlSimd();
void SetGgmlSimd(GgmlSimd simd);
const char* GgmlSimdName(GgmlSimd simd);
// "avx2" or "avx512"; anything else is an error naming the accepted values.
absl::StatusOr<GgmlSimd> ParseGgmlSimd(const char* text);

}  // namespace kiln::builtins
