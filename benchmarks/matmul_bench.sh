#!/usr/bin/env bash
# build/benchmarks/matmul_bench with both OpenBLAS peers in one run: Debian's (linked by the
# project) and the newer one PyPI's numpy bundles, found through this benchmark's own
# virtual environment ($KILN_BENCH_VENV, default ~/.cache/kiln/bench-venv; created with
# `pip install numpy` when missing). Never run in CI or by the set-up scripts.
#
#   benchmarks/matmul_bench.sh [matmul_bench flags: --sizes=... --threads=N ...]
#
# KILN_BUILD_DIR (default build/) holds matmul_bench (cmake --build build --target matmul_bench).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
venv="${KILN_BENCH_VENV:-$HOME/.cache/kiln/bench-venv}"
build="${KILN_BUILD_DIR:-$root/build}"

# shellcheck source=benchmarks/bench_venv.sh
source "$here/bench_venv.sh"
require_bench_binary "$build" matmul_bench
ensure_bench_venv "$venv" numpy numpy
# numpy's wheel keeps its OpenBLAS in numpy.libs/ beside the package (the file name carries
# a hash); numpy reports it too, but the directory listing does not need numpy to load.
library="$("$venv/bin/python" - <<'PY'
import glob, os, numpy
libs = os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), "numpy.libs")
found = sorted(glob.glob(os.path.join(libs, "*openblas*.so*")))
print(found[0] if found else "")
PY
)"
if [[ -z "$library" ]]; then
  echo "matmul_bench.sh: no OpenBLAS found in $venv's numpy (numpy.libs/*openblas*.so*)" >&2
  exit 1
fi
echo "numpy $("$venv/bin/python" -c 'import numpy; print(numpy.__version__)'), $library"
exec "$build/benchmarks/matmul_bench" --pypi-openblas="$library" "$@"
