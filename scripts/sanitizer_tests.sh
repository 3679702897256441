#!/usr/bin/env bash
# Runs the tests that must stay clean under sanitizers, each in its own build folder and
# building only what it needs:
#   AddressSanitizer + UndefinedBehaviorSanitizer (any finding fails): executable truncation
#     and mutation fuzzing (KILN_FUZZ_ITERATIONS), the file-format readers (formats/: .npy
#     truncation and header mutation fuzzing included) and file mappings (support/), mutation fuzzing of the IR text parser and checker
#     (KILN_TEXT_FUZZ_SECONDS, default 40), every test of the IR, the graph passes, the TIR
#     interpreter and the schedule primitives; the GGUF reader's tests, its truncation and
#     mutation fuzzing for KILN_GGUF_FUZZ_SECONDS (default 12) per fuzz test; the tokenizer
#     and chat template tests; the OpenAI request handling, fuzzed with malformed JSON, wrong
#     types, huge numbers and strings and invalid UTF-8 for KILN_SERVING_FUZZ_SECONDS (default
#     10) per fuzz test, and the HTTP server's tests; the ONNX importer's tests (bad models
#     and mutated models: a small one and the exported encoder); the image decoders on
#     truncated and mutated files (ImageDecoder: tests/builtins/image_codecs_test.cc)
#   ThreadSanitizer: VMs on several threads sharing one executable, the thread pool
#
# `scripts/sanitizer_tests.sh --all` instead builds every target with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs the whole ctest suite there (about 40 minutes of
# build on 2 cores and as long again of tests: too long for CI, run it before a release or
# after changing memory-handling code). Generated kernels are not instrumented: the run-time
# checks that guard them are (tests/codegen/shape_mutation_test.cc and friends).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${KILN_JOBS:-$(nproc)}
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# Line tables only: sanitizer reports keep function names and lines, and the build (the
# longest part of CI) takes far less time than with -g. The CI subset compiles at -O0 (a
# third faster to build than -O1 under ASan; its tests are short or time-budgeted); --all
# keeps -O1, whose whole-program tests would run too slowly unoptimized.
# The CI subset also leaves the test code itself uninstrumented (KILN_SANITIZE_TEST_CODE:
# the libraries under test stay instrumented; the test files compile in ~60 % of the time).
configure() {  # folder sanitizers optimization instrument-test-code
  cmake -S . -B "$1" -G Ninja -DKILN_SANITIZE="$2" -DKILN_WERROR=$werror \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$3 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$3 -g1 -DNDEBUG" -DKILN_SANITIZE_TEST_CODE="$4" \
    -DKILN_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
}

if [ "${1:-}" = "--all" ]; then
  echo "sanitizers: every test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
  configure build-asan address,undefined -O1 ON
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 KILN_SOURCE_DIR="$PWD" \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
  echo "sanitizers: all clean"
  exit 0
fi

echo "sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer build"
configure build-asan-ci address,undefined -O0 OFF
cmake --build build-asan-ci -j "$jobs" --target kiln_vm_tests kiln_relax_tests kiln_tir_tests kiln_formats_tests \
  kiln_support_tests kiln_serving_tests kiln_onnx_importer_tests kiln_image_codec_tests
ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 KILN_FUZZ_ITERATIONS=${KILN_FUZZ_ITERATIONS:-30000} \
  build-asan-ci/tests/kiln_vm_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 build-asan-ci/tests/kiln_support_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 KILN_FUZZ_SECONDS=${KILN_TEXT_FUZZ_SECONDS:-40} KILN_SOURCE_DIR="$PWD" \
  build-asan-ci/tests/kiln_relax_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 KILN_SOURCE_DIR="$PWD" build-asan-ci/tests/kiln_tir_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 KILN_FUZZ_SECONDS=${KILN_GGUF_FUZZ_SECONDS:-12} \
  build-asan-ci/tests/kiln_formats_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 KILN_SOURCE_DIR="$PWD" build-asan-ci/tests/kiln_onnx_importer_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 KILN_SOURCE_DIR="$PWD" build-asan-ci/tests/kiln_image_codec_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 KILN_SERVING_FUZZ_SECONDS=${KILN_SERVING_FUZZ_SECONDS:-10} \
  build-asan-ci/tests/kiln_serving_tests --gtest_brief=1

echo "sanitizers: ThreadSanitizer build"
configure build-tsan thread -O0 ON
cmake --build build-tsan -j "$jobs" --target kiln_vm_thread_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/kiln_vm_thread_tests --gtest_brief=1 \
  --gtest_filter='VirtualMachine.TwoThreadsShareOneExecutable:ThreadPool.*'
echo "sanitizers: all clean"
