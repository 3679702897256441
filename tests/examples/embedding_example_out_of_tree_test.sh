#!/usr/bin/env bash
# docs/embedding.md's out-of-tree instructions followed as written: `cmake --install` Kiln into
# a temporary prefix, configure examples/embedding on its own in a clean folder against it
# (find_package(Kiln), Kiln::vm + Kiln::builtins, no C++ standard set by the project: the
# targets carry it), build it, and run it on the tests' sample executable. A bad file must
# be a clear load error.
#   $1 the build tree   $2 the source tree   $3 write_sample_executable
set -euo pipefail
build=$1
source=$2
write_sample=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$dir/prefix" >"$dir/install.log" || { cat "$dir/install.log"; fail "cmake --install"; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source/examples/embedding" -B "$dir/example" -G Ninja -DCMAKE_PREFIX_PATH="$dir/prefix" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; fail "configuring the embedding example against the installed Kiln"; }
cmake --build "$dir/example" >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; fail "building the embedding example"; }
example=$dir/example/kiln_embedding_example
echo "built $example out of tree against $dir/prefix"

"$write_sample" "$dir/sample.kx" || fail "write_sample_executable"
"$example" "$dir/sample.kx" >"$dir/out" 2>&1 || { cat "$dir/out"; fail "the example failed"; }
# main(x, y) = 3 x + y with x = 0..11, y = 1.
grep -qxF "output float32[3, 4]: 1 4 7 10 13 16 19 22 25 28 31 34" "$dir/out" || fail "unexpected output: $(cat "$dir/out")"

echo "not an executable" >"$dir/bad.kx"
if "$example" "$dir/bad.kx" >"$dir/bad.out" 2>&1; then fail "a bad .kx loaded"; fi
grep -qF "load failed: $dir/bad.kx: not a Kiln executable" "$dir/bad.out" || fail "bad .kx: $(cat "$dir/bad.out")"
if "$example" "$dir/missing.kx" >"$dir/missing.out" 2>&1; then fail "a missing .kx loaded"; fi
grep -qF "$dir/missing.kx" "$dir/missing.out" || fail "missing .kx: $(cat "$dir/missing.out")"
echo "PASS"
