#!/usr/bin/env bash
# The main job: set up, build, and check the bundled example model.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
"${KILN_BUILD_DIR:-build}/kiln" check examples/mlp.kir
