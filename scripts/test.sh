#!/usr/bin/env bash
# Set up, build, and run every test suite, then the sanitizer runs (AddressSanitizer
# fuzzing of executables, ThreadSanitizer on shared executables).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
ctest --test-dir "${KILN_BUILD_DIR:-build}" --output-on-failure -j "${KILN_JOBS:-$(nproc)}"
bash scripts/sanitizer_tests.sh
