#!/usr/bin/env bash
# The main job: set up, build, and check the bundled example model: `kiln check` parses the
# transformer block (symbolic sequence length n), infers the struct info of every binding
# and prints the module with it. (Once the compiler lands, this compiles and runs it.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
build=${KILN_BUILD_DIR:-build}
"$build/kiln" check examples/models/transformer_block.kir
