#!/usr/bin/env bash
# The serving example built the way a user builds it: `cmake --install` Kiln into a temporary
# prefix, configure examples/server on its own against it (find_package(Kiln), Kiln::serving),
# build it, and run it on the bundled model compiled by `kiln compile`. Its greedy answer
# must equal `kiln generate --chat`'s for the same prompt (the same engine behind both, but
# the example must reach it through nothing but the installed headers and libraries).
# Skips when the model was not fetched (fails under CI).
#   $1 the build tree   $2 the source tree   $3 kiln
set -euo pipefail
build=$1
source=$2
kiln=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$dir/prefix" >"$dir/install.log" || { cat "$dir/install.log"; fail "cmake --install"; }
for f in lib/cmake/Kiln/KilnConfig.cmake lib/libkiln_serving.a include/serving/engine.h; do
  [ -f "$dir/prefix/$f" ] || fail "the install lacks $f"
done
if ls "$dir/prefix/lib" | grep -qE 'kiln_(tir|relax|codegen)'; then
  fail "the install holds compiler libraries: $(ls "$dir/prefix/lib")"
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source/examples/server" -B "$dir/example" -G Ninja -DCMAKE_PREFIX_PATH="$dir/prefix" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; fail "configuring the example against the installed Kiln"; }
cmake --build "$dir/example" >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; fail "building the example"; }
example=$dir/example/kiln_server_example
echo "built $example out of tree against $dir/prefix"

model=${KILN_MODEL_DIR:-$HOME/.cache/kiln/models}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  [ "${CI:-}" = true ] && fail "the bundled model is missing: $model"
  echo "SKIP: running the example: the bundled model is not fetched (scripts/fetch_model.sh)"
  exit 0
fi
"$kiln" compile "$model" -o "$dir/model.kx" >"$dir/compile.log" 2>&1 || { cat "$dir/compile.log"; fail "kiln compile"; }

prompt="What is the capital of France?"
printf '%s\n' "$prompt" | "$example" "$dir/model.kx" "$model" --max-tokens 16 >"$dir/answer" 2>"$dir/answer.err" ||
  { cat "$dir/answer.err"; fail "the example failed"; }
grep -qE '^\[(stop|length): [0-9]+ prompt tokens, [0-9]+ generated\]$' "$dir/answer.err" ||
  fail "no usage line: $(cat "$dir/answer.err")"
"$kiln" generate "$dir/model.kx" --chat --prompt "$prompt" -n 16 --temperature 0 >"$dir/expected" 2>/dev/null ||
  fail "kiln generate"
# Both end with one newline; compare the text.
[ "$(cat "$dir/answer")" = "$(cat "$dir/expected")" ] ||
  fail "the example answered '$(cat "$dir/answer")', kiln generate '$(cat "$dir/expected")'"
[ -n "$(cat "$dir/answer")" ] || fail "empty answer"
echo "example answered: $(cat "$dir/answer")"

# A bad executable is a clear error, not a crash.
echo x >"$dir/bad.kx"
if printf 'hi\n' | "$example" "$dir/bad.kx" "$model" >/dev/null 2>"$dir/bad.err"; then fail "a bad .kx loaded"; fi
grep -q "load failed" "$dir/bad.err" || fail "bad .kx: $(cat "$dir/bad.err")"
echo "PASS"
