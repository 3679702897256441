// PrimFunc workloads (text format) that several schedule tests share: the shapes lowering
// from Relax produces, with symbolic extents.
#pragma once

namespace kiln::tir::testing {

// C[i, j] = sum_k A[i, k] * B[k, j] over symbolic m, n, k.
inline constexpr const char* kMatmul = R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  for i in serial(0, m) {
    for j in serial(0, n) {
      for r in serial(0, k) {
        block "C" {
          vi = spatial(m, i)
          vj = spatial(n, j)
          vk = reduce(k, r)
          init {
            C[vi, vj] = 0.0
          }
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
})";

// B[i] = sum_j A[i, j].
inline constexpr const char* kRowSum = R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, m) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(m, r)
        init {
          B[vi] = 0.0
        }
        B[vi] = B[vi] + A[vi, vr]
      }
    }
  }
})";

}  // namespace kiln::tir::testing
