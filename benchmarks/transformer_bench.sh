#!/usr/bin/env bash
# build/benchmarks/transformer_bench with ONNX Runtime as a peer in the same run: the same
# block as an ONNX graph (benchmarks/transformer_block_ort.py), run by PyPI's onnxruntime
# from this benchmark's own virtual environment ($KILN_BENCH_VENV, default
# ~/.cache/kiln/onnx-bench-venv; created with `pip install onnxruntime onnx numpy` when
# missing). Never run in CI or by the set-up scripts.
#
#   benchmarks/transformer_bench.sh [transformer_bench flags: --n=... --threads=N ...]
#
# KILN_BUILD_DIR (default build/) holds transformer_bench (cmake --build build --target transformer_bench).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv="${KILN_BENCH_VENV:-$HOME/.cache/kiln/onnx-bench-venv}"
build="${KILN_BUILD_DIR:-$root/build}"

# shellcheck source=benchmarks/bench_venv.sh
source "$here/bench_venv.sh"
require_bench_binary "$build" transformer_bench
ensure_bench_venv "$venv" "onnxruntime, onnx, numpy" onnxruntime onnx numpy
echo "onnxruntime $("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')"
exec "$build/benchmarks/transformer_bench" --ort-python="$venv/bin/python" "$@"
