#!/usr/bin/env bash
# Builds the peer of benchmarks/serve_bench.py: llama.cpp's OpenAI-compatible server from
# PyPI (llama-cpp-python[server], compiled from source by pip), in its own virtual
# environment, never the system's and never in CI. Prints the environment's python.
#   KILN_BENCH_VENV (default ~/.cache/kiln/serve_bench_venv)
set -euo pipefail
venv=${KILN_BENCH_VENV:-$HOME/.cache/kiln/serve_bench_venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || { echo "python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
fi
if ! "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  # The build is native (-march=native by default), as a user would run it.
  "$venv/bin/pip" install --quiet 'llama-cpp-python[server]' >&2
fi
echo "$venv/bin/python"
