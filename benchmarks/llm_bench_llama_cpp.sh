#!/usr/bin/env bash
# Kiln next to llama.cpp on the same GGUF (issue 11): runs build/benchmarks/llm_bench and
# llama.cpp (PyPI llama-cpp-python, built from source in this benchmark's own virtual
# environment) with the same prompt lengths and thread counts, prints both side by side with
# Kiln/llama.cpp ratios, and compares their greedy continuations of a few prompts.
#
#   benchmarks/llm_bench_llama_cpp.sh [MODEL.gguf] [--threads=1,2] [--repeats=3]
#
# The first run creates the environment ($KILN_BENCH_VENV, default ~/.cache/kiln/bench-venv)
# and builds llama.cpp: several minutes. Never run in CI or by the set-up scripts.
# Another llama.cpp build is another environment: an AVX2-only one (to compare with Kiln's
# KILN_GGML_SIMD=avx2 arithmetic on any CPU) is built on first use by
#   CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
#     -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX_VNNI=OFF" \
#   KILN_BENCH_VENV=~/.cache/kiln/bench-venv-avx2 KILN_GGML_SIMD=avx2 benchmarks/llm_bench_llama_cpp.sh ...
# (pip passes CMAKE_ARGS to llama.cpp's CMake; llama_cpp.llama_print_system_info() says
# which instruction sets a build has).
# KILN_BUILD_DIR (default build/) holds llm_bench (cmake --build build --target llm_bench).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv="${KILN_BENCH_VENV:-$HOME/.cache/kiln/bench-venv}"
build="${KILN_BUILD_DIR:-$root/build}"
# Pinned so that figures from different runs compare the same llama.cpp.
llama_cpp_version="0.3.36"

if [[ ! -x "$build/benchmarks/llm_bench" ]]; then
  echo "llm_bench_llama_cpp: $build/benchmarks/llm_bench is missing (cmake --build build --target llm_bench)" >&2
  exit 1
fi
if [[ ! -x "$venv/bin/python" ]]; then
  echo "llm_bench_llama_cpp: creating $venv" >&2
  /usr/bin/python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp, numpy" 2>/dev/null ||
   [[ "$("$venv/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')" != "$llama_cpp_version" ]]; then
  echo "llm_bench_llama_cpp: building llama-cpp-python $llama_cpp_version (llama.cpp from source: minutes)" >&2
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$venv/bin/pip" install --quiet "llama-cpp-python==$llama_cpp_version" numpy
fi
exec "$venv/bin/python" "$here/llm_bench_llama_cpp.py" --llm-bench "$build/benchmarks/llm_bench" "$@"
