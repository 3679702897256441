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

// One fused PrimFunc, as fusing matmul -> add(bias) -> gelu makes it: the kernels' loop
// nests in sequence, the intermediates allocated around them.
inline constexpr const char* kFusedMatmulBiasGelu = R"(
prim_func @f(A: Buffer((m, k), float32), W: Buffer((k, n), float32), bias: Buffer((n,), float32), out: Buffer((m, n), float32)) {
  allocate mm: Buffer((m, n), float32) {
    allocate biased: Buffer((m, n), float32) {
      for i0 in serial(0, m) {
        for i1 in serial(0, n) {
          for k0 in serial(0, k) {
            block "matmul" {
              v0 = spatial(m, i0)
              v1 = spatial(n, i1)
              vk0 = reduce(k, k0)
              init {
                mm[v0, v1] = 0.0
              }
              mm[v0, v1] = mm[v0, v1] + A[v0, vk0] * W[vk0, v1]
            }
          }
        }
      }
      for i0_1 in serial(0, m) {
        for i1_1 in serial(0, n) {
          block "add" {
            v0_1 = spatial(m, i0_1)
            v1_1 = spatial(n, i1_1)
            biased[v0_1, v1_1] = mm[v0_1, v1_1] + bias[v1_1]
          }
        }
      }
      for i0_2 in serial(0, m) {
        for i1_2 in serial(0, n) {
          block "gelu" {
            v0_2 = spatial(m, i0_2)
            v1_2 = spatial(n, i1_2)
            out[v0_2, v1_2] = 0.5 * biased[v0_2, v1_2] * (1.0 + erf(biased[v0_2, v1_2] * 0.707106781))
          }
        }
      }
    }
  }
})";

}  // namespace kiln::tir::testing
