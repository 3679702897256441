# Sourced by the benchmark scripts whose peer comes from PyPI: the benchmark's own virtual
# environment. Never run in CI or by the set-up scripts.
#
# ensure_bench_venv VENV IMPORTS PACKAGE...: creates VENV with Debian's python3 when it is
# missing, and pip-installs the packages when `import IMPORTS` fails in it.
ensure_bench_venv() {
  local venv="$1" imports="$2"
  shift 2
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "$(basename "$0"): creating $venv" >&2
    /usr/bin/python3 -m venv "$venv"
  fi
  if ! "$venv/bin/python" -c "import $imports" 2>/dev/null; then
    echo "$(basename "$0"): installing $* into $venv" >&2
    "$venv/bin/pip" install --quiet "$@"
  fi
}

# require_bench_binary BUILD NAME: exits saying how to build it when BUILD/benchmarks/NAME
# is missing.
require_bench_binary() {
  if [[ ! -x "$1/benchmarks/$2" ]]; then
    echo "$(basename "$0"): $1/benchmarks/$2 is missing (cmake --build build --target $2)" >&2
    exit 1
  fi
}
