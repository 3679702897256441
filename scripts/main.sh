#!/usr/bin/env bash
# The main job: set up, build, and run the bundled sample executable through the VM.
# (Once the compiler lands, this compiles and runs a bundled example model instead.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
build=${KILN_BUILD_DIR:-build}
"$build/tests/write_sample_executable" "$build/sample.kx"
"$build/kiln" run "$build/sample.kx" --fn main --input random:7x4:f32:1 --input random:7x4:f32:2 --stats
