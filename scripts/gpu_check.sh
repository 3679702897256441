#!/usr/bin/env bash
# The operator harness on a real GPU, in two halves.
#
#   bash scripts/gpu_check.sh bundle [BUILD_DIR]   # here (compiler machine, NVRTC present):
#       builds kiln_codegen_tests and gpu_op_check in BUILD_DIR (default build), compiles
#       every supported op case for cuda (sm_80 + sm_90, PTX and cubin) with the reference's
#       inputs and outputs into BUILD_DIR/gpu_bundle/cases, and copies gpu_op_check with its
#       non-system shared libraries (libabsl_*, libstdc++, ...) into BUILD_DIR/gpu_bundle;
#       the cuBLAS cases (tests/codegen/cuda_cublas_test.cc: matmuls dispatched to cuBLAS, one
#       function mixing cuBLAS and generated kernels) go to BUILD_DIR/gpu_bundle/cublas_cases.
#   bash scripts/gpu_check.sh run [BUNDLE_DIR]     # on the GPU machine (driver, no compiler):
#       runs every case on cuda:0 against the reference's outputs, then the cuBLAS cases
#       with --profile (each kernel and cuBLAS call timed by CUDA events) where libcublas is
#       found (KILN_CUBLAS names it; else they are skipped, saying so); exit 0 when all pass.
#       About a minute on an H100.
#
# The GPU machine needs only the NVIDIA driver (libcuda.so.1): no LLVM, absl, NVRTC or CUDA
# toolkit; the bundle carries what the runner links. With the device tool: carry
# build/gpu_bundle and run `bash scripts/gpu_check.sh run build/gpu_bundle`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-}"
case "$mode" in
  bundle)
    build="${2:-build}"
    bundle="$build/gpu_bundle"
    cmake --build "$build" -j "${KILN_JOBS:-2}" --target kiln_codegen_tests gpu_op_check
    rm -rf "$bundle"
    mkdir -p "$bundle/cases" "$bundle/cublas_cases" "$bundle/lib"
    KILN_CUDA_BUNDLE_DIR="$PWD/$bundle/cases" KILN_CUBLAS_BUNDLE_DIR="$PWD/$bundle/cublas_cases" \
      "$build/tests/kiln_codegen_tests" --gtest_filter='CudaGpuBundle.*:CublasGpuBundle.*' --gtest_brief=1
    cp "$build/tests/gpu_op_check" "$bundle/"
    strip --strip-debug "$bundle/gpu_op_check" 2>/dev/null || true
    # Every shared library it links except the C library's own (present on any Linux).
    ldd "$build/tests/gpu_op_check" | awk '/=> \// {print $3}' | while read -r lib; do
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
        *) cp -L "$lib" "$bundle/lib/"; strip --strip-debug "$bundle/lib/$(basename "$lib")" 2>/dev/null || true ;;
      esac
    done
    grep -c '^case ' "$bundle/cases/MANIFEST" | xargs echo "cases in the bundle:"
    grep -c '^case ' "$bundle/cublas_cases/MANIFEST" | xargs echo "cuBLAS cases in the bundle:"
    grep '^# skipped' "$bundle/cases/MANIFEST" | sed 's/^# //' || true
    du -sh "$bundle"
    ;;
  run)
    bundle="${2:-build/gpu_bundle}"
    if [[ ! -x "$bundle/gpu_op_check" ]]; then
      echo "gpu_check: no runner in $bundle (make it with: bash scripts/gpu_check.sh bundle)" >&2
      exit 2
    fi
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
    export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if ldd "$bundle/gpu_op_check" | grep -q 'not found'; then
      echo "gpu_check: missing shared libraries:" >&2
      ldd "$bundle/gpu_op_check" | grep 'not found' >&2
      exit 2
    fi
    status=0
    "$bundle/gpu_op_check" "$bundle/cases" --device cuda:0 || status=$?
    # cuBLAS is not carried (libcublasLt alone is ~500 MB): it must be on the GPU machine.
    if [[ -n "${KILN_CUBLAS:-}" && -f "${KILN_CUBLAS}" ]] || ldconfig -p 2>/dev/null | grep -q 'libcublas\.so' ||
       [[ -f /usr/local/cuda/lib64/libcublas.so ]]; then
      "$bundle/gpu_op_check" "$bundle/cublas_cases" --device cuda:0 --profile || status=$?
    else
      echo "gpu_check: cuBLAS cases skipped: no libcublas on this machine (set KILN_CUBLAS=/path/libcublas.so.NN)"
    fi
    exit "$status"
    ;;
  *)
    echo "usage: bash scripts/gpu_check.sh bundle [BUILD_DIR] | run [BUNDLE_DIR]" >&2
    exit 2
    ;;
esac
