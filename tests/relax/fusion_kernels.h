// Hand-written kernels in the IR text format for the fusion pass tests (fuse_ops_test,
// fuse_tir_test), in the form legalization makes them: destination-passing, one block per
// loop nest, op_pattern set. Their shape variable is `m`, so tests show it being matched
// to the call site's dims.
#pragma once

namespace kiln::relax::fusion_test {

inline constexpr char kKernels[] = R"(
  prim_func @mm(A: Buffer((m, 8), float32), B: Buffer((8, 4), float32), C: Buffer((m, 4), float32)) {
    attr op_pattern = "out_ewise_fusable"
    for i in serial(0, m) {
      for j in serial(0, 4) {
        for k in serial(0, 8) {
          block "mm" {
            vi = spatial(m, i)
            vj = spatial(4, j)
            vk = reduce(8, k)
            init {
              C[vi, vj] = 0.0
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
  prim_func @bias(A: Buffer((m, 4), float32), B: Buffer((4,), float32), C: Buffer((m, 4), float32)) {
    attr op_pattern = "broadcast"
    for i in serial(0, m) {
      for j in serial(0, 4) {
        block "bias" {
          vi = spatial(m, i)
          vj = spatial(4, j)
          C[vi, vj] = A[vi, vj] + B[vj]
        }
      }
    }
  }
  prim_func @relu(A: Buffer((m, 4), float32), B: Buffer((m, 4), float32)) {
    attr op_pattern = "elementwise"
    for i in serial(0, m) {
      for j in serial(0, 4) {
        block "relu" {
          vi = spatial(m, i)
          vj = spatial(4, j)
          B[vi, vj] = max(A[vi, vj], 0.0)
        }
      }
    }
  }
  prim_func @add(A: Buffer((m, 4), float32), B: Buffer((m, 4), float32), C: Buffer((m, 4), float32)) {
    attr op_pattern = "elementwise"
    for i in serial(0, m) {
      for j in serial(0, 4) {
        block "add" {
          vi = spatial(m, i)
          vj = spatial(4, j)
          C[vi, vj] = A[vi, vj] + B[vi, vj]
        }
      }
    }
  }
  prim_func @rowsum(A: Buffer((m, 4), float32), B: Buffer((m,), float32)) {
    attr op_pattern = "comm_reduce"
    for i in serial(0, m) {
      for k in serial(0, 4) {
        block "rowsum" {
          vi = spatial(m, i)
          vk = reduce(4, k)
          init {
            B[vi] = 0.0
          }
          B[vi] = B[vi] + A[vi, vk]
        }
      }
    }
  }
  prim_func @exp1(A: Buffer((m,), float32), B: Buffer((m,), float32)) {
    attr op_pattern = "elementwise"
    for i in serial(0, m) {
      block "exp1" {
        vi = spatial(m, i)
        B[vi] = exp(A[vi])
      }
    }
  }
  prim_func @relu2(A: Buffer((4, m), float32), B: Buffer((4, m), float32)) {
    attr op_pattern = "elementwise"
    for i in serial(0, 4) {
      for j in serial(0, m) {
        block "relu2" {
          vi = spatial(4, i)
          vj = spatial(m, j)
          B[vi, vj] = max(A[vi, vj], 0.0)
        }
      }
    }
  }
  prim_func @transpose(A: Buffer((m, 4), float32), B: Buffer((4, m), float32)) {
    attr op_pattern = "injective"
    for i in serial(0, 4) {
      for j in serial(0, m) {
        block "transpose" {
          vi = spatial(4, i)
          vj = spatial(m, j)
          B[vi, vj] = A[vj, vi]
        }
      }
    }
  }
  prim_func @transpose2(A: Buffer((4, m), float32), B: Buffer((m, 4), float32)) {
    attr op_pattern = "injective"
    for i in serial(0, m) {
      for j in serial(0, 4) {
        block "transpose2" {
          vi = spatial(m, i)
          vj = spatial(4, j)
          B[vi, vj] = A[vj, vi]
        }
      }
    }
  }
)";

}  // namespace kiln::relax::fusion_test
