#!/usr/bin/env bash
# Kiln next to ONNX Runtime on tests/frontends/onnx_encoder/model.onnx (issue 14): makes the
# benchmark's own virtual environment (PyPI onnxruntime and numpy; $KILN_BENCH_VENV, default
# ~/.cache/kiln/onnx-bench-venv) and runs benchmarks/onnx_encoder_bench.py with the arguments
# given (--threads=1,2 --batches=1,8 --sequences=16,128 by default). Never run in CI or by
# the set-up scripts. KILN_BUILD_DIR (default build/) holds kiln.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv="${KILN_BENCH_VENV:-$HOME/.cache/kiln/onnx-bench-venv}"
build="${KILN_BUILD_DIR:-$root/build}"
# shellcheck source=benchmarks/bench_venv.sh
source "$here/bench_venv.sh"
ensure_bench_venv "$venv" "onnxruntime, numpy" onnxruntime numpy
cd "$root"
exec "$venv/bin/python" "$here/onnx_encoder_bench.py" --kiln "$build/kiln" "$@"
