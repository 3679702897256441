#!/usr/bin/env bash
# Kiln next to ONNX Runtime on single Conv layers (ResNet 3x3, 1x1, 7x7 stride-2 stem; depthwise,
# grouped and transposed convolutions: the LAYERS of conv_bench.py):
# makes the benchmark's own virtual environment (PyPI onnx, onnxruntime and numpy;
# $KILN_BENCH_VENV, default ~/.cache/kiln/onnx-bench-venv) and runs benchmarks/conv_bench.py
# with the arguments given (--layers=... --threads=1,2 --batch=1). Never run in CI or by the
# set-up scripts. KILN_BUILD_DIR (default build/) holds kiln.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv="${KILN_BENCH_VENV:-$HOME/.cache/kiln/onnx-bench-venv}"
build="${KILN_BUILD_DIR:-$root/build}"
# shellcheck source=benchmarks/bench_venv.sh
source "$here/bench_venv.sh"
ensure_bench_venv "$venv" "onnx, onnxruntime, numpy" onnx onnxruntime numpy
cd "$root"
exec "$venv/bin/python" "$here/conv_bench.py" --kiln "$build/kiln" "$@"
